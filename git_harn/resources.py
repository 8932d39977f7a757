"""Files shipped with git-harn: JSON Schemas and hook templates.

In a wheel they live in ``git_harn/_data``; in a source checkout they are the
top-level ``schemas/`` and ``hooks/`` folders.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path


@cache
def data_dir(kind: str) -> Path:
    shipped = resources.files("git_harn") / "_data" / kind
    if shipped.is_dir():
        return Path(str(shipped))
    return Path(__file__).resolve().parent.parent / kind


def schema_path(name: str) -> Path:
    return data_dir("schemas") / f"{name}.schema.json"


def hook_template(name: str) -> Path:
    return data_dir("hooks") / name
