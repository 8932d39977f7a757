"""One exception hierarchy, mapped to exit codes in one place (SPEC §8)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEEDS_OPERATOR = 3


class HarnError(Exception):
    """An error that git-harn reports as one line and an exit code."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInput(HarnError):
    """Invalid arguments, unknown run ids, not a repository [P7]: exit 2."""

    exit_code = EXIT_USAGE


class Refused(HarnError):
    """A guard refused to act, or an operator is needed: exit 3."""

    exit_code = EXIT_NEEDS_OPERATOR


class GitFailure(HarnError):
    """git or libgit2 failed: exit 1."""


class CorruptRecord(HarnError):
    """A run record that cannot be read as one: exit 1."""


class Busy(HarnError):
    """Another process holds the lock: exit 1."""


class RaceLost(HarnError):
    """A compare-and-swap kept losing after its bounded retries [P3]: exit 1."""
