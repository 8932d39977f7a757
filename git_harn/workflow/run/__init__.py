"""A workflow run: the loop that selects, starts and collects tasks, with its breakers
and its progress lines.

Room 7 of workflow/ (layer 5), the top: may import every other room.
"""
