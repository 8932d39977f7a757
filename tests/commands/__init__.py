"""Tests of git_harn/commands/."""
