"""Tests of git_harn/trust/."""
