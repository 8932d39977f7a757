"""What a command's domain entry point returns: one dataclass per command,
printed by one renderer for people or as one versioned JSON document.

A result names its schema (``schemas/<name>.schema.json``) and its outcome;
the outcome's exit code comes from the one table in ``errors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from git_harn.errors import exit_code_for
from git_harn.text import jsonable


@dataclass
class Result:
    """Base of every command result (a dataclass with an ``outcome`` field or property)."""

    SCHEMA: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1

    @property
    def outcome_name(self) -> str:
        return str(getattr(self, "outcome"))  # noqa: B009 (a field or a property of the subclass)

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.outcome_name)

    def document(self) -> dict[str, Any]:
        """The ``--json`` document: schemaVersion first, then the fields."""
        body = jsonable(self)
        assert isinstance(body, dict)
        return {"schemaVersion": self.SCHEMA_VERSION, **{k: v for k, v in body.items() if k != "schemaVersion"}}


@dataclass
class CheckResult(Result):
    """Whether a report is to be believed (``git harn report check``)."""

    SCHEMA: ClassVar[str] = "report-check"

    ok: bool
    stage: str | None
    detail: str

    @property
    def outcome(self) -> str:
        return "report-ok" if self.ok else "report-invalid"
