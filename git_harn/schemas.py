"""Validation against the JSON Schemas in ``schemas/`` [P5].

jsonschema is imported here only: when something is validated, or when a
workflow run loads it in the background (``preload``) before its first
stage report. Hot paths (status, hooks) never pay for it.
"""

from __future__ import annotations

import json
import threading
from contextlib import suppress
from functools import cache
from typing import Any

from git_harn.resources import schema_path


@cache
def load_schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_path(name).read_text())
    return loaded


@cache
def _registry() -> Any:
    """All shipped schemas, so one may $ref another by file name."""
    from referencing import Registry, Resource

    resources = []
    for path in schema_path("run-record").parent.glob("*.schema.json"):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def preload() -> threading.Thread:
    """Import jsonschema and read the shipped schemas in a thread of their own.
    A workflow run validates its first stage report a moment after it starts;
    begun then, the import (a tenth of a second and more) overlaps the git and
    agent processes the run waits for, instead of following them. A failure
    here is left for that first validation to report."""
    loader = threading.Thread(target=_load_validation, name="git-harn-schemas", daemon=True)
    loader.start()
    return loader


def _load_validation() -> None:
    with suppress(Exception):
        import jsonschema  # noqa: F401

        _registry()


def schema_errors(document: object, name: str, definition: str | None = None) -> list[str]:
    """Every way ``document`` breaks schema ``name`` (or its ``$defs/<definition>``),
    as short sentences."""
    import jsonschema

    schema = load_schema(name)
    if definition is not None:
        schema = {"$ref": f"{schema['$id']}#/$defs/{definition}"}
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    return [_describe(error) for error in errors]


def _describe(error: Any) -> str:
    where = "/".join(str(part) for part in error.path) or "(document)"
    return f"{where}: {error.message}"
