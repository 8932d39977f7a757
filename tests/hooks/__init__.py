"""Tests of git_harn/hooks/."""
