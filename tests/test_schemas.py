"""Every schema in ``schemas/`` says something: an empty object and an error
document are rejected wherever a command's document is described, and every
schema is checked by some test (issue 23 item 9)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from git_harn.schemas import schema_errors
from tests.kit.harn import assert_valid, harn, make_repo

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(p.name.removesuffix(".schema.json") for p in (ROOT / "schemas").glob("*.schema.json"))
ERROR_DOCUMENT = {"schemaVersion": 1, "error": {"message": "unknown run id: x", "exitCode": 2}}

# What a schema may accept, and why: the error document is its own schema.
# Nothing else: not even a stage report, nor an integrator's report, where
# no one of the five is required (a missing one counts as false [I3]) but
# a document that says nothing at all is no report (issue 45 item 9).
ACCEPTS_ERROR_DOCUMENT = {"error"}
ACCEPTS_EMPTY_OBJECT: set[str] = set()


def test_the_schema_folder_is_what_this_test_knows() -> None:
    assert len(NAMES) >= 24 and "log-result" in NAMES and "integration-report" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_an_empty_object_is_rejected_where_it_should_be(name: str) -> None:
    accepted = not schema_errors({}, name)
    assert accepted == (name in ACCEPTS_EMPTY_OBJECT), name


@pytest.mark.parametrize("name", NAMES)
def test_an_error_document_is_rejected_where_it_should_be(name: str) -> None:
    accepted = not schema_errors(ERROR_DOCUMENT, name)
    assert accepted == (name in ACCEPTS_ERROR_DOCUMENT), name


def definitions() -> list[tuple[str, str]]:
    return [(name, key) for name in NAMES
            for key in json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text()).get("$defs", {})]


@pytest.mark.parametrize(("name", "definition"), definitions())
def test_no_definition_takes_an_empty_object_or_an_error_document(name: str, definition: str) -> None:
    """A stage's report is validated against its own definition: each one
    must refuse a document that says nothing, or says git-harn failed."""
    assert schema_errors({}, name, definition), (name, definition)
    assert schema_errors(ERROR_DOCUMENT, name, definition), (name, definition)


def test_the_integrators_report_requires_one_thing_said_but_gits_own_report_everything() -> None:
    for said in ({"ok": False}, {"summary": "gave up"}, {"conflicts": "a.txt"}, {"pushed": True}):
        assert schema_errors(said, "integration-report", "integratorReport") == [], said
    for nothing in ({}, {"schemaVersion": 1}, {"branch": "roadmap-1.1"}, ERROR_DOCUMENT,
                    {**ERROR_DOCUMENT, "ok": False}):
        assert schema_errors(nothing, "integration-report", "integratorReport"), nothing
    errors = schema_errors({}, "integration-report")
    for member in ("ok", "rebased", "squashMerged", "pushed", "roadmapMarkedDone", "taskId", "outcome"):
        assert any(f"'{member}' is a required property" in e for e in errors), member
    assert schema_errors({"ok": "yes"}, "integration-report", "integratorReport")  # types still fixed


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_is_checked_by_some_test(name: str) -> None:
    """A schema no test validates against can drift from what is printed."""
    quoted = re.compile(rf"[\"']{re.escape(name)}[\"']")
    lines = [line for p in (ROOT / "tests").rglob("*.py") for line in p.read_text().splitlines()]
    assert any(("assert_valid(" in line or "schema_errors(" in line) and quoted.search(line) for line in lines), \
        f"no test validates a document against {name}"


@pytest.mark.parametrize(("definition", "document", "valid"), [
    ("plan", {"ok": True, "summary": "planned"}, True),
    ("plan", {"ok": "yes", "summary": "planned"}, False),
    ("review", {"verdict": "approve", "summary": "s", "findings": []}, True),
    ("review", {"verdict": "maybe", "summary": "s", "findings": []}, False),
    ("faultReport", {"fault": {"class": "auth"}}, True),
    ("faultReport", {"fault": {"class": "weather"}}, False),
    ("integrate", {}, False),
    ("integrate", {"ok": False, "summary": "conflict"}, True),
    ("integrate", {"pushed": 1}, False),
])
def test_stage_reports_by_definition(definition: str, document: dict[str, object], valid: bool) -> None:
    assert (schema_errors(document, "stage-report", definition) == []) is valid


def test_log_json_is_valid_and_newest_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "logged").code == 0
    assert harn(repo, "cleanup", "logged", "--yes").code == 0
    done = harn(repo, "log", "logged", "--json")
    assert done.code == 0, done.err
    doc = done.json()
    assert_valid(doc, "log-result")
    assert doc["runId"] == "logged" and [e["event"] for e in doc["events"]][-1] == "start"
    assert [e["state"] for e in doc["events"]][0] == "released"
    missing = harn(repo, "log", "nope", "--json")
    assert missing.code == 2 and schema_errors(json.loads(missing.out), "log-result")


def test_preload_loads_the_validator_in_a_thread_and_validation_then_works() -> None:
    """In a fresh interpreter: jsonschema is not loaded until preload's thread
    loads it, and a report is then judged as before."""
    script = ("import sys\n"
              "from git_harn import schemas\n"
              "before = 'jsonschema' in sys.modules\n"
              "schemas.preload().join()\n"
              "print(before, 'jsonschema' in sys.modules, schemas._registry.cache_info().currsize,\n"
              "      schemas.schema_errors({}, 'stage-report', 'review'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=ROOT)
    assert done.stdout.startswith("False True 1 [")
    assert "(document): 'summary' is a required property" in done.stdout
