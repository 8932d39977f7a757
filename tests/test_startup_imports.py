"""``git harn status`` loads only what listing live workspaces needs: the
archive, the claims, the notes, the workflows and the remote door are
imported by the commands that use them, not on every start-up (issue 25:
start-up within 1.3 of importing pygit2 and click)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kit.harn import harn, make_repo

# Run the command in-process and write down every git_harn module it loaded.
_PROBE = """
import json, sys
from git_harn.cli import main
sys.argv = ["git-harn", *sys.argv[2:]]
try:
    main()
except SystemExit:
    pass
with open(OUT, "w") as f:
    json.dump(sorted(m for m in sys.modules if m.startswith("git_harn")), f)
"""

NOT_FOR_A_LISTING = ("git_harn.store.archive", "git_harn.store.claims", "git_harn.store.notes",
                     "git_harn.store.workflows", "git_harn.store.bookkeeping", "git_harn.git.remote",
                     # the reader of a run's pinned settings: status starts no run
                     "git_harn.git.pins",
                     # the hint of the runs that ended last: --last reads it, a write that ends a run appends
                     "git_harn.store.ended")


def loaded_by(repo: Path, tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    code = _PROBE.replace("OUT", repr(str(out)))
    done = subprocess.run([sys.executable, "-c", code, "-", *args], cwd=repo, capture_output=True, text=True,
                          check=False)
    assert out.exists(), done.stderr
    return set(json.loads(out.read_text()))


def test_status_of_live_workspaces_loads_no_archive_claims_notes_or_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "one").code == 0
    loaded = loaded_by(repo, tmp_path, "status", "--json")
    assert "git_harn.workspace.status" in loaded  # the probe saw the command run
    assert not loaded & set(NOT_FOR_A_LISTING), sorted(loaded & set(NOT_FOR_A_LISTING))


def test_status_of_one_run_loads_the_archive_it_may_be_in(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "one").code == 0
    assert "git_harn.store.archive" in loaded_by(repo, tmp_path, "status", "one", "--json")


NOT_FOR_A_RUN = ("git_harn.workflow.page", "git_harn.workflow.after.discard", "git_harn.workflow.agents.scaffold",
                 "git_harn.workflow.agents.check", "git_harn.workspace.reclaim")


def test_a_workflow_run_loads_no_report_page_discard_or_scaffold(tmp_path: Path) -> None:
    """``workflow run`` pays for its own modules only; the other workflow
    commands load theirs when asked (a dry run on a roadmap-less repository
    is enough to see the command's imports)."""
    repo = make_repo(tmp_path / "repo")
    loaded = loaded_by(repo, tmp_path, "workflow", "run", "--dry-run", "--json")
    assert "git_harn.workflow.run.runner" in loaded
    assert not loaded & set(NOT_FOR_A_RUN), sorted(loaded & set(NOT_FOR_A_RUN))
    assert "git_harn.workflow.page.write" in loaded_by(repo, tmp_path, "workflow", "report", "--json")


NOT_FOR_A_RECLAIM = ("git_harn.workflow.after.settle", "git_harn.integrate.land", "git_harn.forge.choose",
                     "git_harn.assess.gates")


def test_a_reclaim_of_a_workspace_no_workflow_made_loads_no_settling_integration_or_forge(tmp_path: Path) -> None:
    """Settling's check for a landed task (and the integration and forge code
    it brings) is loaded only where a workflow record could own the run id
    (issue 45 item 15: 50 ms of imports on every reclaim)."""
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "plain-one").code == 0
    loaded = loaded_by(repo, tmp_path, "reclaim", "plain-one", "--json")
    assert "git_harn.workspace.reclaim" in loaded  # the probe saw the command run
    assert not loaded & set(NOT_FOR_A_RECLAIM), sorted(loaded & set(NOT_FOR_A_RECLAIM))


def test_the_watchdog_process_loads_neither_pygit2_nor_click() -> None:
    """Every workflow run starts a watchdog process on the same cores as the
    runner and its first task: it loads what ending process groups needs."""
    code = ("import json, runpy, sys\n"
            "sys.stdin = open('/dev/null')\n"
            "runpy.run_module('git_harn.workflow.agents.watchdog_process', run_name='not_main')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pygit2', 'click', 'git_harn'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    assert "git_harn.store.procs" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("pygit2", "click")}, sorted(loaded)
    assert "git_harn.git.repo" not in loaded and "git_harn.workflow.agents.stages" not in loaded


def _gits_started(repo: Path, tmp_path: Path, *args: str) -> list[list[str]]:
    """The argv of every git ``git harn <args>`` started (trace2 events)."""
    events = tmp_path / "trace2.json"
    events.unlink(missing_ok=True)
    done = harn(repo, *args, env={"GIT_TRACE2_EVENT": str(events)})
    assert done.code == 0, done.err
    return [event["argv"] for event in map(json.loads, events.read_text().splitlines())
            if event.get("event") == "start" and event["argv"][:1] == ["git"]
            and "harn" not in event["argv"][1:2]]


def test_status_of_live_workspaces_reads_the_refs_in_one_git(tmp_path: Path) -> None:
    """``git harn status`` starts one ``for-each-ref`` for the live index and
    the workspace branches together, one ``config --list`` and one ``status``
    per live workspace: a git process costs a few milliseconds of the
    start-up budget (issue 45)."""
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "one").code == 0
    argvs = _gits_started(repo, tmp_path, "status")
    words = [next(word for word in argv[1:] if not word.startswith("-") and "=" not in word) for argv in argvs]
    assert sorted(words) == ["config", "for-each-ref", "status"], argvs
    listing = next(argv for argv in argvs if "for-each-ref" in argv)
    assert "refs/harnery/live/" in listing and "refs/heads/harnery/ws/" in listing, listing
    # The guards hold: every git of the listing but config's own read runs with hooks off.
    assert all("core.hooksPath=/dev/null" in argv for argv in argvs if "config" not in argv), argvs


# Every collection the garbage collector starts, and whether the command's
# module had finished loading by then.
_GC_PROBE = """
import gc, json, sys
seen = []
def during(phase, info):
    if phase == "start":
        if "git_harn.cli" in sys.modules:  # __main__.main has begun loading the program
            module = sys.modules.get("git_harn.commands.status")
            seen.append(getattr(module, "status", None) is not None)
gc.callbacks.append(during)
sys.argv = ["git-harn", "status", "--json"]
from git_harn.__main__ import main
try:
    main()
except SystemExit:
    pass
with open(OUT, "w") as f:
    json.dump({"after_load": seen, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}, f)
"""


def test_start_up_runs_no_garbage_collection_and_the_command_runs_with_it(tmp_path: Path) -> None:
    """Loading click, pygit2 and the command's modules starts no collection
    (each walks every object start-up made: issue 45); the command itself
    runs with the collector on, start-up's objects frozen out of its walks."""
    repo = make_repo(tmp_path / "repo")
    assert harn(repo, "start", "one").code == 0
    out = tmp_path / "gc.json"
    done = subprocess.run([sys.executable, "-c", _GC_PROBE.replace("OUT", repr(str(out)))], cwd=repo,
                          capture_output=True, text=True, check=False)
    assert out.exists(), done.stderr
    found = json.loads(out.read_text())
    assert found["enabled"] is True
    assert found["frozen"] > 10_000  # click's, pygit2's and git-harn's modules, classes and functions
    assert all(found["after_load"]), found  # no collection before the command's module was loaded


def test_the_installed_command_and_python_m_start_at_the_same_entry_point() -> None:
    """``git-harn`` (the console script) and ``python -m git_harn`` both go
    through ``git_harn.__main__.main``, where the collector is turned off for start-up."""
    root = Path(__file__).resolve().parent.parent
    assert 'git-harn = "git_harn.__main__:main"' in (root / "pyproject.toml").read_text()
    assert 'if __name__ == "__main__":\n    main()' in (root / "git_harn" / "__main__.py").read_text()
