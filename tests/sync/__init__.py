"""Tests of git_harn/sync/."""
