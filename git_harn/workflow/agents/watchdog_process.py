"""The watchdog process itself (``workflow/agents/watchdog.py`` is the runner's
side): it reads the groups the runner registers and ends, and when the pipe
closes ends every group still registered [L3].

It loads only ``store/procs`` (and what that needs: no pygit2, no click), so
that the process every workflow run starts costs little next to the runner
and its first task, on the same cores.
"""

from __future__ import annotations

import sys
from typing import IO

from git_harn.store.procs import Group, end_groups


def serve(lines: IO[bytes]) -> list[Group]:
    """Read registrations until the pipe closes; what is still registered then."""
    groups: dict[int, Group] = {}
    for raw in lines:
        parts = raw.decode("ascii", "replace").split()
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        pgid = int(parts[1])
        if parts[0] == "+":
            start = parts[2] if len(parts) > 2 and parts[2] != "-" else None
            groups[pgid] = Group(pgid, start)
        elif parts[0] == "-":
            groups.pop(pgid, None)
    return list(groups.values())


def main() -> int:
    end_groups(serve(sys.stdin.buffer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
