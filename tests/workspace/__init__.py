"""Tests of git_harn/workspace/."""
