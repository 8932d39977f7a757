"""What follows a run: settling its record, recovering and remediating what it left,
the tasks a requirement waits on, discard and reclaim of a task's branch.

Room 5 of workflow/ (layer 5): may import model/, agents/, ledger/ and task/.
"""
