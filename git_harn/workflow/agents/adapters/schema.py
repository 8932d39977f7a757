"""The report schema handed to an agent CLI, one per stage.

Both CLIs force their final answer into it (``claude --json-schema``, ``codex
exec --output-schema``). OpenAI's strict structured outputs, which codex
uses, accept only a subset of JSON Schema: every object has
``additionalProperties: false`` and lists every property as required, and
keywords such as ``maxLength`` or ``oneOf`` are not allowed. Claude Code
accepts that subset too, so one shape serves both. What comes back is still
validated against ``schemas/stage-report.schema.json`` before anything in it
is believed [P5]; :func:`to_report` only turns the strict shape into the
protocol's (an empty ``path`` means none).
"""

from __future__ import annotations

from typing import Any

from git_harn.tasks.config import Stage


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


_TEXT = {"type": "string"}
_FLAG = {"type": "boolean"}

_FINDING = _object({
    "severity": {"type": "string", "enum": ["blocking", "advisory"]},
    "text": _TEXT,
    "path": {"type": "string", "description": "the file the finding is about, or an empty string"},
})

_STAGES: dict[str, dict[str, Any]] = {
    Stage.PLAN: _object({"ok": _FLAG, "summary": _TEXT}),
    Stage.IMPLEMENT: _object({"ok": _FLAG, "summary": _TEXT}),
    Stage.REVIEW: _object({
        "verdict": {"type": "string", "enum": ["approve", "changes-requested"]},
        "summary": _TEXT,
        "findings": {"type": "array", "items": _FINDING},
    }),
    Stage.INTEGRATE: _object({
        "ok": _FLAG, "rebased": _FLAG, "squashMerged": _FLAG, "pushed": _FLAG, "roadmapMarkedDone": _FLAG,
        "conflicts": {"type": ["string", "null"]},
        "summary": _TEXT,
    }),
}

# what the adapters add to the prompt, so the agent knows its answer is the report
REPORT_NOTE = ("When you are done, answer with the JSON object the output schema asks for: it is your report "
               "to the host, which checks it against git itself.")


def strict_schema(stage: str) -> dict[str, Any]:
    """The stage's report in the strict shape both CLIs accept."""
    return _STAGES[stage]


def to_report(stage: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The protocol's report from a strict answer: empty finding paths dropped."""
    if stage != Stage.REVIEW or not isinstance(answer.get("findings"), list):
        return answer
    findings = []
    for finding in answer["findings"]:
        if isinstance(finding, dict) and finding.get("path") == "":
            finding = {k: v for k, v in finding.items() if k != "path"}
        findings.append(finding)
    return {**answer, "findings": findings}
