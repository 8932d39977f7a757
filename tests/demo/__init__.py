"""Tests of git_harn/demo/."""
