"""Tests of git_harn/store/."""
