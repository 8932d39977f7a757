"""Tests of git_harn/workflow/run/."""
