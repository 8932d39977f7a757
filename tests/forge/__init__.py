"""Tests of git_harn/forge/."""
