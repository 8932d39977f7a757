"""git harn report check integration: when an integrator's report is believed [I3]."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from git_harn.integrate.report import INCOMPLETE
from tests.kit.harn import assert_error_document, assert_valid, harn

FIVE = ("ok", "rebased", "squashMerged", "pushed", "roadmapMarkedDone")
GENERIC = "integration incomplete (need ok+rebased+squashMerged+pushed+roadmapMarkedDone)"


def complete(**changes: Any) -> dict[str, Any]:
    report: dict[str, Any] = {name: True for name in FIVE}
    report.update(taskId="1.2", branch="roadmap-1.2", base="main", attempts=1,
                  commit="a" * 40, conflictPaths=[])
    report.update(changes)
    return report


def without(name: str) -> dict[str, Any]:
    report = complete()
    del report[name]
    return report


def check(tmp_path: Path, document: Any, *extra: str) -> tuple[int, Any]:
    result = harn(tmp_path, "report", "check", "integration", "-", "--json", *extra,
                  stdin=document if isinstance(document, str) else json.dumps(document))
    return result.code, (result.json() if result.out.strip() else result.err)


def test_generic_detail_is_the_seed_text() -> None:
    assert INCOMPLETE == GENERIC


def test_a_complete_report_is_believed(tmp_path: Path) -> None:
    code, out = check(tmp_path, complete(summary="landed"))
    assert code == 0
    assert out["ok"] is True and out["stage"] is None


CASES = [
    *[(f"{name} false", complete(**{name: False}), GENERIC) for name in FIVE],
    *[(f"{name} missing", without(name), GENERIC) for name in FIVE],
    ("conflicts set", complete(ok=False, conflicts="CONFLICT (content): a.txt", summary="s"),
     "CONFLICT (content): a.txt"),
    ("summary only", complete(rebased=False, summary="pushed without a rebase"), "pushed without a rebase"),
    ("empty conflicts falls to summary", complete(ok=False, conflicts="", summary="gave up"), "gave up"),
    ("whitespace conflicts is set", complete(ok=False, conflicts="  ", summary="gave up"), "  "),
    ("null conflicts falls to summary", complete(ok=False, conflicts=None, summary="gave up"), "gave up"),
    ("neither", complete(pushed=False, conflicts=None, summary=None), GENERIC),
    ("squash pushed but never rebased", {"ok": True, "squashMerged": True, "pushed": True,
                                         "roadmapMarkedDone": True}, GENERIC),
]


@pytest.mark.parametrize("name, document, detail", CASES, ids=[c[0] for c in CASES])
def test_halts_at_integrate_with_the_exact_detail(tmp_path: Path, name: str, document: dict[str, Any],
                                                  detail: str) -> None:
    code, out = check(tmp_path, document)
    assert code == 3, name
    assert out == {"schemaVersion": 1, "ok": False, "stage": "integrate", "detail": detail}
    assert_valid(out, "report-check")


SCHEMA_CASES = [
    ("ok as a string", complete(ok="true"), "ok"),
    ("pushed as a number", complete(pushed=1), "pushed"),
    ("conflictPaths not a list", complete(conflictPaths="a.txt"), "conflictPaths"),
    ("attempts negative", complete(attempts=-1), "attempts"),
    ("commit not an object id", complete(commit="HEAD"), "commit"),
    ("branch as a full ref", complete(branch="refs/heads/roadmap-1.2"), "branch"),
    ("taskId not a task id", complete(taskId="1.x"), "taskId"),
    ("conflicts as a list", complete(conflicts=["a.txt"]), "conflicts"),
]


@pytest.mark.parametrize("name, document, field", SCHEMA_CASES, ids=[c[0] for c in SCHEMA_CASES])
def test_schema_violations_halt_before_the_five_fields(tmp_path: Path, name: str,
                                                       document: dict[str, Any], field: str) -> None:
    code, out = check(tmp_path, document)
    assert code == 3, name
    assert out["ok"] is False and out["stage"] == "integrate"
    assert out["detail"].startswith(f"report does not match the integration-report schema: {field}")


@pytest.mark.parametrize("document", [{}, {"schemaVersion": 1, "error": {"message": "no remote", "exitCode": 2}}],
                         ids=["empty object", "error document"])
def test_a_report_that_says_nothing_is_no_report(tmp_path: Path, document: dict[str, Any]) -> None:
    """Issue 45 item 9: an empty object, or git-harn's own error document
    written as the report, halts as a schema violation, not as a report
    whose five are all false."""
    code, out = check(tmp_path, document)
    assert code == 3
    assert out["ok"] is False and out["stage"] == "integrate"
    assert out["detail"].startswith("report does not match the integration-report schema: ")


@pytest.mark.parametrize("text", ["{not json", "", "[true, true]", "\"ok\"", "null"])
def test_not_json_or_not_an_object_is_bad_input(tmp_path: Path, text: str) -> None:
    result = harn(tmp_path, "report", "check", "integration", "-", stdin=text)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("git harn: error: ") and len(result.err.strip().splitlines()) == 1


def test_human_output_and_file_argument(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(complete(roadmapMarkedDone=False, summary="roadmap not ticked")))
    result = harn(tmp_path, "report", "check", "integration", str(path))
    assert result.code == 3
    assert result.out.splitlines() == ["halted at stage: integrate", "detail: roadmap not ticked"]
    path.write_text(json.dumps(complete()))
    ok = harn(tmp_path, "report", "check", "integration", str(path))
    assert ok.code == 0 and ok.out.strip() == "integration report ok"


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    result = harn(tmp_path, "report", "check", "integration", str(tmp_path / "absent.json"))
    assert result.code == 2 and "cannot read" in result.err


@pytest.mark.parametrize(("kind", "text", "reason"), [
    ("integration", '{"ok": true, "summary": "\\ud800"}', "summary holds a lone surrogate"),
    ("integration", '{"ok": true, "conflictPaths": ["a", "\\udfff"]}', "conflictPaths/1 holds a lone surrogate"),
    ("integration", '{"\\ud800": true}', "a key in (document) holds a lone surrogate"),
    ("assessment", '{"classification": "discard", "residualRisk": [NaN]}', "NaN is not a JSON number"),
    ("assessment", '{"classification": "discard", "attempts": Infinity}', "Infinity is not a JSON number"),
    ("integration", '{"attempts": -Infinity}', "-Infinity is not a JSON number"),
    ("integration", '{"ok": true, "ok": false}', "duplicate key 'ok'"),
    ("integration", "[" * 100_000 + "]" * 100_000, "nests too deeply"),
])
def test_what_every_reader_would_not_read_alike_is_bad_input(tmp_path: Path, kind: str, text: str,
                                                            reason: str) -> None:
    """Exit 2 with the reason, never an internal error nor exit 3 (issue 23 item 12)."""
    for args in ((), ("--json",)):
        result = harn(tmp_path, "report", "check", kind, "-", *args, stdin=text)
        assert result.code == 2, (result.code, result.err)
        assert result.err.startswith("git harn: error: - is not JSON: ") and reason in result.err, result.err
        assert "internal error" not in result.err and len(result.err.strip().splitlines()) == 1
        if args:
            assert_error_document(result.out, 2)
