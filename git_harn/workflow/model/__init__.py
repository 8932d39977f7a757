"""The workflow's model: task states and their order, results, fault classes and the
workflow configuration; the words every other room speaks.

Room 1 of workflow/ (layer 5): imports no other room.
"""
