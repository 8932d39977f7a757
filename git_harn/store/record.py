"""The run record (``run.json``), schema ``schemas/run-record.schema.json``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from git_harn.errors import CorruptRecord
from git_harn.files import loads_json

SCHEMA_VERSION = 1

ACTIVE = "active"
PRESERVED_DIRTY = "preserved_dirty"
PRESERVED_UNMERGED = "preserved_unmerged"
RELEASED = "released"
ALREADY_GONE = "already_gone"

STATES = (ACTIVE, PRESERVED_DIRTY, PRESERVED_UNMERGED, RELEASED, ALREADY_GONE)
TERMINAL = (RELEASED, ALREADY_GONE)
PRESERVED = (PRESERVED_DIRTY, PRESERVED_UNMERGED)

# Fields every record must have, with the JSON types allowed for each.
_REQUIRED: dict[str, tuple[type, ...]] = {
    "schemaVersion": (int,),
    "runId": (str,),
    "workspaceId": (str,),
    "state": (str,),
    "path": (str,),
    "branch": (str,),
    "base": (dict,),
    "host": (str,),
    "createdAt": (str,),
    "updatedAt": (str,),
    "attempts": (int,),
}

# Fields records written by earlier versions lack, with the JSON types allowed.
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "clone": (dict, type(None)),
    "branchCreated": (bool, type(None)),
}


@dataclass
class RunRecord:
    runId: str
    workspaceId: str
    state: str
    path: str
    branch: str
    base: dict[str, str]
    host: str
    createdAt: str
    updatedAt: str
    attempts: int = 0
    frozenIntent: dict[str, str] | None = None
    lastOutcome: str | None = None
    reason: str | None = None
    salvage: dict[str, Any] | None = None
    exitCode: int | None = None
    command: list[str] | None = None
    releasing: dict[str, str] | None = None
    reclaiming: dict[str, str] | None = None
    # Which clone made the workspace ({"id", "commonDir"}); None in records
    # written before records named their clone.
    clone: dict[str, str] | None = None
    # Whether git-harn created the branch (else the caller named an existing
    # one, which git-harn never deletes); None in older records: created.
    branchCreated: bool | None = None
    schemaVersion: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def preserved(self) -> bool:
        return self.state in PRESERVED

    @property
    def owns_branch(self) -> bool:
        """Whether git-harn created the branch, so may delete it."""
        return self.branchCreated is not False

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(data.pop("extra"))
        return data

    def to_json(self) -> str:
        # ASCII, so a file name that is not UTF-8 (kept as surrogate escapes)
        # is stored as \\udcXX rather than failing to encode.
        return json.dumps(self.as_dict(), indent=2, sort_keys=True, ensure_ascii=True) + "\n"

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> RunRecord:
        """Parse and check a record; CorruptRecord names ``where`` on any fault."""
        try:
            data = loads_json(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptRecord(f"corrupt run record {where}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise CorruptRecord(f"corrupt run record {where}: not a JSON object")
        for key, types in _REQUIRED.items():
            if not isinstance(data.get(key), types) or isinstance(data.get(key), bool):
                raise CorruptRecord(f"corrupt run record {where}: field {key!r} missing or wrong type")
        for key, types in _OPTIONAL.items():
            if key in data and not isinstance(data[key], types):
                raise CorruptRecord(f"corrupt run record {where}: field {key!r} has the wrong type")
        if isinstance(data.get("clone"), dict) and not isinstance(data["clone"].get("id"), str):
            raise CorruptRecord(f"corrupt run record {where}: field 'clone' has no id")
        if data["schemaVersion"] != SCHEMA_VERSION:
            raise CorruptRecord(
                f"run record {where} has schemaVersion {data['schemaVersion']}, "
                f"this git-harn reads {SCHEMA_VERSION}"
            )
        if data["state"] not in STATES:
            raise CorruptRecord(f"corrupt run record {where}: unknown state {data['state']!r}")
        known = set(cls.__dataclass_fields__) - {"extra"}
        kwargs = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        try:
            return cls(**kwargs, extra=extra)
        except TypeError as exc:
            raise CorruptRecord(f"corrupt run record {where}: {exc}") from exc


def already(state: str) -> str:
    """How a terminal state reads after "workspace is": never "already already_gone"."""
    return "already gone" if state == ALREADY_GONE else f"already {state}"
