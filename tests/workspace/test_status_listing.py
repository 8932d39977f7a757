"""`status --all --last N`: every live workspace and the N runs that ended
last; and the widths the status table is laid out by [W4] (issue 25 item 6)."""

from __future__ import annotations

import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_harn.text import cells, clip
from tests.kit.harn import assert_valid, git, harn, make_repo, record
from tests.kit.user_tools import start


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo")
    git(path, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return path


def listed(repo: Path, *args: str) -> list[str]:
    result = harn(repo, "status", *args, "--json")
    assert result.code == 0, result.err
    document = result.json()
    assert_valid(document, "status")
    return [ws["runId"] for ws in document["workspaces"]]


def end_in_order(repo: Path, *run_ids: str) -> None:
    """End the runs one after another, a second apart (records are dated to the second)."""
    for n, run_id in enumerate(run_ids):
        if n:
            time.sleep(1.1)
        assert harn(repo, "cleanup", run_id, "--yes").code == 0


def test_last_lists_the_runs_that_ended_last_and_every_live_one(repo: Path) -> None:
    for run_id in ("c-old", "b-mid", "a-new", "live"):
        start(repo, run_id)
    # Ended newest last, in the reverse of run-id order: a tie broken by run
    # id would pick the wrong two.
    end_in_order(repo, "c-old", "b-mid", "a-new")
    assert listed(repo, "--all", "--last", "2") == ["a-new", "b-mid", "live"]
    assert listed(repo, "--last", "1") == ["a-new", "live"]  # --last implies --all
    assert listed(repo, "--all", "--last", "0") == ["live"]
    assert listed(repo, "--all", "--last", "10") == ["a-new", "b-mid", "c-old", "live"]
    assert listed(repo, "--all") == ["a-new", "b-mid", "c-old", "live"]
    assert listed(repo) == ["live"]
    out = harn(repo, "status", "--last", "1").out
    assert "a-new" in out and "live" in out and "b-mid" not in out, out


@pytest.mark.parametrize("args", [("--last", "-1"), ("--last", "many"), ("one", "--last", "2")])
def test_a_bad_last_is_bad_input(repo: Path, args: tuple[str, ...]) -> None:
    start(repo, "one")
    before = git(repo, "for-each-ref")
    result = harn(repo, "status", *args)
    assert result.code == 2, result.err
    assert result.err.startswith("git harn: error: ") and result.err.count("\n") == 1, result.err
    assert git(repo, "for-each-ref") == before


def test_status_help_and_completion_name_last(repo: Path) -> None:
    assert "--last N" in harn(repo, "status", "--help").out
    bash = harn(repo, "completion", "bash").out
    assert "--last" in bash.split('"status") echo "', 1)[1].split('"', 1)[0]
    assert "--limit|--last|" in bash  # takes a value: nothing offered after it


def cells_by_character(text: str) -> int:
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
               for c in text)


@given(st.text())
def test_cells_counts_like_the_per_character_rule(text: str) -> None:
    assert cells(text) == cells_by_character(text)


@given(st.text(), st.integers(min_value=0, max_value=40), st.booleans())
def test_clip_fits_the_width_and_keeps_the_right_end(text: str, width: int, keep_end: bool) -> None:
    cut = clip(text, width, keep_end=keep_end)
    if cells(text) <= width:
        assert cut == text
        return
    assert cells(cut) <= width
    if width > 1:
        body = cut[1:] if keep_end else cut[:-1]
        assert (text.endswith(body) if keep_end else text.startswith(body))
        assert cut == ("…" + body if keep_end else body + "…")
        # As many characters as fit: one more would not.
        one_more = text[len(text) - len(body) - 1:] if keep_end else text[:len(body) + 1]
        assert cells(one_more) + 1 > width


def test_wide_and_combining_characters_are_counted_as_terminals_show_them() -> None:
    assert cells("run-1") == 5
    assert cells("日本語") == 6
    assert cells("e\u0301") == 1
    assert clip("abcdefgh", 5) == "abcd…"
    assert clip("/a/long/path", 6, keep_end=True) == "…/path"
    assert clip("日本語のパス", 7) == "日本語…"


def ended_records(repo_path: Path, count: int, prefix: str) -> None:
    """``count`` released runs written by the store, as a year of them would be."""
    from git_harn.git import open_repo
    from git_harn.store import runs as store
    from git_harn.store.ids import new_workspace_id
    from git_harn.store.record import RELEASED, RunRecord

    repo = open_repo(repo_path)
    base = {"ref": "refs/heads/main", "oid": str(repo.resolve_commit("HEAD"))}
    for i in range(count):
        run_id = f"{prefix}{i:03d}"
        record = RunRecord(
            runId=run_id, workspaceId=new_workspace_id(), state=RELEASED, path=f"/gone/{run_id}",
            branch=f"harnery/ws/{run_id}", base=base, host="here", createdAt="2026-01-01T00:00:00Z",
            updatedAt="", attempts=1, lastOutcome=RELEASED, reason="worktree removed; branch deleted")
        store.write(repo, record, RELEASED, "ended long ago", None)


def runs_listings(trace: Path) -> list[str]:
    return [line for line in trace.read_text().splitlines()
            if "built-in: git for-each-ref" in line and "refs/harnery/runs/" in line]


HINT = Path("harnery") / "cache" / "ended-runs"


def test_last_reads_only_the_newest_records(repo: Path, tmp_path: Path) -> None:
    """--last N reads the records the hint of the runs that ended last names,
    no listing of the record refs at all (issue 45 item 15: one sorted
    for-each-ref read every record commit's header, half a second at
    100,000): an unreadable record written long ago is never read, where
    --all reports it. Without the hint, the refs are listed by time once
    and the hint written afresh from them."""
    empty = git(repo, "hash-object", "-t", "tree", "/dev/null")
    old = git(repo, "commit-tree", empty, "-m", "not a record",
              env={"GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z", "GIT_AUTHOR_DATE": "2001-01-01T00:00:00Z"})
    ended_records(repo, 80, "old-")
    for run_id in ("n-mid", "m-new", "live"):
        start(repo, run_id)
    time.sleep(1.1)  # newer, to the second, than every record above
    end_in_order(repo, "n-mid", "m-new")
    git(repo, "update-ref", "refs/harnery/runs/z-broken", old)  # the live index was built before
    trace = tmp_path / "trace"
    result = harn(repo, "status", "--last", "2", "--json", env={"GIT_TRACE": str(trace)})
    assert result.code == 0, result.err
    assert [ws["runId"] for ws in result.json()["workspaces"]] == ["live", "m-new", "n-mid"]
    assert "errors" not in result.json()
    assert runs_listings(trace) == []
    everything = harn(repo, "status", "--all", "--json")
    assert everything.code != 0 and "refs/harnery/runs/z-broken" in everything.out
    assert len(everything.json()["workspaces"]) == 83
    (repo / ".git" / HINT).unlink()
    trace.unlink()
    again = harn(repo, "status", "--last", "2", "--json", env={"GIT_TRACE": str(trace)})
    assert [ws["runId"] for ws in again.json()["workspaces"]] == ["live", "m-new", "n-mid"]
    listings = runs_listings(trace)
    assert len(listings) == 1 and "--sort=-committerdate" in listings[0] and "--count=1000" in listings[0], listings
    assert (repo / ".git" / HINT).is_file()
    trace.unlink()
    assert listed(repo, "--last", "2") == ["live", "m-new", "n-mid"]
    harn(repo, "status", "--last", "2", env={"GIT_TRACE": str(trace)})
    assert runs_listings(trace) == []


def newest_by_records(repo: Path, count: int) -> list[str]:
    """The answer from every record: the live runs and the ``count`` ended last."""
    every = harn(repo, "status", "--all", "--json").json()["workspaces"]
    ended = sorted(((ws["runId"], record(repo, ws["runId"])["updatedAt"]) for ws in every
                    if ws["state"] in ("released", "already_gone")), key=lambda pair: (pair[1], pair[0]))
    return sorted([ws["runId"] for ws in every if ws["state"] not in ("released", "already_gone")]
                  + [run_id for run_id, _ in ended[-count:]] if count else [])


def test_a_hint_that_lies_lists_only_what_the_records_say(repo: Path, tmp_path: Path) -> None:
    """The hint is in a folder an agent can write: its lines only say which
    records to read. Lines naming a run with no record, a live run, a
    record long ended as if just now, another run's commit, an id that is
    no ref name, and garbage change nothing of the answer; a floor newer
    than every line (records may lack one) makes the listing read the refs
    by time instead."""
    ended_records(repo, 5, "old-")
    for run_id in ("a1", "a2", "a3", "live"):
        start(repo, run_id)
    time.sleep(1.1)
    end_in_order(repo, "a1", "a2", "a3")
    hint = repo / ".git" / HINT
    first, _, rest = hint.read_text().partition("\n")
    assert first.startswith("git-harn ended records 1 floor ")
    a1 = git(repo, "rev-parse", "refs/harnery/runs/a1")
    later = int(time.time()) + 10_000
    hint.write_text(first + "\n" + rest + "".join(f"{later} {name} {a1}\n" for name in (
        "nobody", "live", "old-001", "../../heads/main", "a2")) + f"garbage\n{later} x\n")
    assert listed(repo, "--last", "2") == newest_by_records(repo, 2) == ["a2", "a3", "live"]
    assert listed(repo, "--last", "4") == newest_by_records(repo, 4)
    assert "old-001" not in listed(repo, "--last", "3")
    hint.write_text(f"git-harn ended records 1 floor {later}\n" + rest)
    trace = tmp_path / "trace"
    harn(repo, "status", "--last", "2", env={"GIT_TRACE": str(trace)})
    assert any("--sort=-committerdate" in line for line in runs_listings(trace))
    assert listed(repo, "--last", "2") == ["a2", "a3", "live"]
    hint.unlink()
    hint.symlink_to(tmp_path / "elsewhere")  # a link planted there is never followed
    assert listed(repo, "--last", "2") == ["a2", "a3", "live"]
    assert not (tmp_path / "elsewhere").exists()


def test_a_record_ended_without_its_line_is_found_by_the_floor(repo: Path) -> None:
    """A run that a git-harn keeping no hint ended (its live entry left,
    stale) gets its line from the listing that drops the entry; a hint
    pruned past its size keeps its newest lines and raises its floor."""
    from git_harn.git import open_repo
    from git_harn.store import ended

    start(repo, "kept")
    assert harn(repo, "cleanup", "kept", "--yes").code == 0
    git(repo, "update-ref", "refs/harnery/live/kept", git(repo, "rev-parse", "refs/harnery/runs/kept"))
    hint = repo / ".git" / HINT
    hint.write_text(hint.read_text().partition("\n")[0] + "\n")  # no line for it
    assert listed(repo) == []  # drops the stale entry, and notes the run
    assert " kept " in hint.read_text()
    assert listed(repo, "--last", "1") == ["kept"]
    handle = open_repo(repo)
    tip = handle.ref_oid("refs/harnery/runs/kept")
    assert tip is not None
    notes = ended.PRUNE_BYTES // 40  # lines of about 60 bytes: pruned once or more
    for n in range(notes):
        ended.note(handle, "ended-runs", [(f"r{n:05d}", tip)])
    assert ended.KEEP * 50 <= hint.stat().st_size <= ended.PRUNE_BYTES
    pruned = ended.read(handle, "ended-runs")
    assert pruned is not None and pruned.floor > 0
    assert "r00000" not in pruned.lines and f"r{notes - 1:05d}" in pruned.lines


def test_last_with_many_ended_in_one_second_lists_them_all_by_time(repo: Path) -> None:
    """Where the newest refs read do not settle which ended last (more than
    the margin ended in the same second), every ref is listed by time, and
    the answer is the same as reading every record."""
    ended_records(repo, 70, "a-")
    stamps = [(record(repo, run_id)["updatedAt"], run_id) for run_id in listed(repo, "--all")]
    newest = sorted(stamps, reverse=True)
    assert listed(repo, "--last", "3") == sorted(run_id for _, run_id in newest[:3])
