"""git-harn: isolated worktrees for unattended runs that never lose work."""

__version__ = "0.1.0"
