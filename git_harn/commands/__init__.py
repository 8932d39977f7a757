"""Click commands: one module per area, each a thin shell over the domain:
parse, call one domain function, render its result with ``render.show``.

Layer 7: may import every layer below (the domain packages, the store, the
git layer, the shared helpers); only this layer and the entry point import
click. Commands are imported only when used, so ``git harn status`` does not
pay for the modules of every other command.
"""

from __future__ import annotations

# command name -> (module under git_harn.commands, attribute)
COMMANDS: dict[str, tuple[str, str]] = {
    "start": ("workspaces", "start"),
    "run": ("workspaces", "run"),
    "status": ("status", "status"),
    "cleanup": ("workspaces", "cleanup_command"),
    "reclaim": ("reclaim", "reclaim"),
    "log": ("status", "log"),
    "hooks": ("hooks", "hooks"),
    "assess": ("assess", "assess"),
    "gates": ("assess", "gates"),
    "salvage-artefacts": ("assess", "salvage_artefacts"),
    "integrate": ("integrate", "integrate"),
    "report": ("report", "report"),
    "sync": ("sync", "sync"),
    "demo": ("demo", "demo"),
    "workflow": ("workflow", "workflow"),
    "doctor": ("doctor", "doctor"),
    "gc": ("gc", "gc"),
    "completion": ("completion", "completion"),
}
