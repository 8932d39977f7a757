"""One exception hierarchy, mapped to exit codes in one place [C1]."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEEDS_OPERATOR = 3

# Outcome -> exit code, for every command [C1]: the one place that decides.
EXIT_FOR_OUTCOME: dict[str, int] = {
    # generic
    "ok": EXIT_OK,
    "error": EXIT_ERROR,
    "unreadable-records": EXIT_ERROR,
    # cleanup and reclaim [W3] [W5]
    "released": EXIT_OK,
    "already_gone": EXIT_OK,
    "dry-run": EXIT_OK,
    # gc: ended records archived
    "archived": EXIT_OK,
    "preserved_dirty": EXIT_NEEDS_OPERATOR,
    "preserved_unmerged": EXIT_NEEDS_OPERATOR,
    "blocked": EXIT_NEEDS_OPERATOR,
    # git harn run [W2]: the command changed what git obeys (undone) [T2]
    "ran": EXIT_OK,
    "run-tampered": EXIT_NEEDS_OPERATOR,
    # gates and report checks [A1] [I3]
    "gates-passed": EXIT_OK,
    "gates-failed": EXIT_NEEDS_OPERATOR,
    "report-ok": EXIT_OK,
    "report-invalid": EXIT_NEEDS_OPERATOR,
    # integration [I1] [I2]
    "landed": EXIT_OK,
    "already-integrated": EXIT_OK,
    "conflict": EXIT_NEEDS_OPERATOR,
    "needs-operator": EXIT_NEEDS_OPERATOR,
    "nothing-to-integrate": EXIT_NEEDS_OPERATOR,
    "refused": EXIT_NEEDS_OPERATOR,
    "proposed": EXIT_OK,  # the request is open: the forge decides, the next run reconciles [F1]
    "push-failed": EXIT_ERROR,
    "retries-exhausted": EXIT_ERROR,
    # sync
    "synced": EXIT_OK,
    "configured": EXIT_OK,
    "quarantined": EXIT_ERROR,
    "push-refused": EXIT_NEEDS_OPERATOR,
    "salvage-diverged": EXIT_NEEDS_OPERATOR,
    # the workflow [R1]: 0 only when every selected task landed, or none was selectable
    "workflow-done": EXIT_OK,
    "workflow-dry-run": EXIT_OK,
    "workflow-incomplete": EXIT_NEEDS_OPERATOR,
    "workflow-interrupted": EXIT_NEEDS_OPERATOR,
    "workflow-running": EXIT_NEEDS_OPERATOR,
    "workflow-blocked": EXIT_NEEDS_OPERATOR,
    # settling what a dead run left [L3]
    "settled": EXIT_OK,
    # git harn doctor: 1 while findings remain
    "doctor-clean": EXIT_OK,
    "doctor-findings": EXIT_ERROR,
}


def exit_code_for(outcome: str) -> int:
    """The exit code of ``outcome``; a name missing from the table is a bug."""
    return EXIT_FOR_OUTCOME[outcome]


class HarnError(Exception):
    """An error that git-harn reports as one line and an exit code."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInput(HarnError):
    """Invalid arguments, unknown run ids, not a repository [P7]: exit 2."""

    exit_code = EXIT_USAGE


class TooLarge(BadInput):
    """A bounded read met more than its limit: never a prefix taken for the whole [P5]."""


class Refused(HarnError):
    """A guard refused to act, or an operator is needed: exit 3."""

    exit_code = EXIT_NEEDS_OPERATOR


class GitFailure(HarnError):
    """git or libgit2 failed: exit 1."""


class ForgeFailure(HarnError):
    """A forge (GitHub, GitLab, Gitea) could not be asked, or refused: exit 1."""


class CorruptRecord(HarnError):
    """A run record that cannot be read as one: exit 1."""


class Busy(HarnError):
    """Another process holds the lock: exit 1."""


class RaceLost(HarnError):
    """A compare-and-swap kept losing after its bounded retries [P3]: exit 1."""
