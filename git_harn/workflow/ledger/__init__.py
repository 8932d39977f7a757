"""The run's ledger: the workflow record and the claims a run holds on its tasks.

Room 3 of workflow/ (layer 5): may import model/.
"""
