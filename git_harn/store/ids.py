"""Run ids, workspace ids and clone ids [N2]."""

from __future__ import annotations

import os
import re
import time

from git_harn.errors import BadInput
from git_harn.text import printable_path

_RUN_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"  # compiled on first use (re caches it)


def validate_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is a valid run id, else raise BadInput [P7]."""
    # As typed; only a control character or an unencodable one is escaped.
    printable = printable_path(run_id)
    shown = f"'{printable}'" if printable == run_id else printable
    if not re.fullmatch(_RUN_ID, run_id):
        raise BadInput(
            f"invalid run id {shown}: use 1-100 of A-Z a-z 0-9 . _ -, starting with a letter or digit"
        )
    if ".." in run_id or run_id.endswith(".lock") or run_id.endswith("."):
        raise BadInput(f"invalid run id {shown}: not a valid ref name component")
    return run_id


def valid_run_id(run_id: str) -> bool:
    """Whether ``validate_run_id`` takes it, without the message."""
    try:
        validate_run_id(run_id)
    except BadInput:
        return False
    return True


def new_run_id() -> str:
    """A sortable unique id: UTC time to the millisecond plus randomness."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    millis = int(now * 1000) % 1000
    return f"run-{stamp}{millis:03d}Z-{os.urandom(3).hex()}{os.getpid() % 100:02d}"


def new_workspace_id() -> str:
    return "ws-" + os.urandom(12).hex()


def new_clone_id() -> str:
    return "clone-" + os.urandom(12).hex()
