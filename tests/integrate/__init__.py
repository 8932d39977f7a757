"""Tests of git_harn/integrate/."""
