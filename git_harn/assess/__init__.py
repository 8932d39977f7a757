"""Assessment of surviving task branches [A1]-[A4]: evidence, the assessors,
gates and artefact salvage.

Layer 4: may import tasks, workspaces, the store, the git layer and the shared helpers.
"""
