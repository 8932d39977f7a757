"""Tests of git_harn/assess/."""
