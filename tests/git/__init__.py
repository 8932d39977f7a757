"""Tests of git_harn/git/."""
