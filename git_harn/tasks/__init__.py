"""Tasks: the roadmap, ExecPlans, task branches and the workflow
configuration, as the assessment, integration and the workflow read them.

Layer 3: may import the store, the git layer and the shared helpers.
"""
