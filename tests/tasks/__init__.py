"""Tests of git_harn/tasks/."""
