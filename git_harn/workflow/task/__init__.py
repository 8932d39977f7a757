"""One task's way through the stages: its workspace, the pipeline, assessment,
addenda and integration.

Room 4 of workflow/ (layer 5): may import model/, agents/ and ledger/.
"""
