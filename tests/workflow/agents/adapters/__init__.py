"""Tests of git_harn/workflow/agents/adapters/."""
