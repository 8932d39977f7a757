"""The program's entry point: ``git-harn`` (the console script) and
``python -m git_harn``.

Start-up (click, pygit2, git-harn's own modules, the command's module)
allocates tens of thousands of objects that live as long as the process and
makes no garbage cycle worth collecting, yet every 700 allocations start a
collection that walks them: about a tenth of what ``git harn status`` costs
(issue 45). So the collector is off from here until the command's module is
loaded (``cli._LazyGroup.get_command`` turns it on), and on for the command
itself, as for any Python program. Turning it on, ``gc.freeze()`` first puts
every object start-up made in a generation the collector never walks: the
command's own allocations still start collections, which no longer walk
start-up's objects each time (about a tenth of ``git harn status`` again,
issue 45). Those objects would never be freed anyway; a cycle among them
that start-up dropped stays, as a few bytes for the life of the process.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from git_harn.cli import main as run

    run()


if __name__ == "__main__":
    main()
