"""Integration [I1]-[I4]: a task branch landed as one squash commit on the
remote base, and the report that says so.

Layer 4: may import tasks, workspaces, the store, the git layer and the shared helpers.
"""
