"""`git harn sync` against a remote that moves, refuses, or holds bad data."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from git_harn.sync.summary import SUMMARY_REF
from tests.kit.harn import git, record
from tests.kit.sync_world import (
    World,
    actions,
    add_note,
    add_record,
    chain,
    change_record,
    harnery_refs,
    make_world,
    read_note,
    sync,
    sync_raw,
)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def hook(remote: Path, body: str) -> None:
    path = remote / "hooks" / "pre-receive"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_push_race_is_rejected_retried_and_converges(world: World, tmp_path: Path) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    add_record(world.a, "shared")
    sync(world.a)
    sync(world.b)
    gate = tmp_path / "gate"
    gate.mkdir()
    # The first two pushes wait in pre-receive until both are there, so both
    # read the same old values and one loses the ref update (waits bounded at 30 s).
    hook(world.remote, f"""n=0
while ! mkdir "{gate}/slot$n" 2>/dev/null; do n=$((n+1)); done
if [ $n -lt 2 ]; then
  i=0
  while [ ! -d "{gate}/slot1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
  sleep 0.3
fi
exit 0
""")
    for clone, name in ((world.a, "alpha"), (world.b, "beta")):
        add_record(clone, f"new-{name}")
        change_record(clone, "shared", f"by-{name}", **{f"seenBy{name}": True})
        add_note(clone, head, name, True)
    procs = [subprocess.Popen(["git", "harn", "sync", "--json"], cwd=clone, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for clone in (world.a, world.b)]
    try:
        outputs = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    documents = [json.loads(out) for out, _ in outputs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    assert sorted(doc["rounds"] for doc in documents)[-1] >= 2  # the loser went again
    assert any("moved while we pushed" in err for _, err in outputs)
    assert (gate / "slot1").is_dir()
    for clone in (world.a, world.b):  # the winner has yet to see the loser's events
        sync(clone)
    expected = harnery_refs(world.remote)
    for clone in (world.a, world.b):
        assert harnery_refs(clone) == expected
        assert read_note(clone, head) == {"alpha": True, "beta": True}
        shared = record(clone, "shared")
        assert shared["seenByalpha"] and shared["seenBybeta"]
    assert {"refs/harnery/runs/new-alpha", "refs/harnery/runs/new-beta"} <= set(expected)


def test_server_without_atomic_push_gets_records_then_notes(world: World) -> None:
    git(world.remote, "config", "receive.advertiseAtomic", "false")
    log = world.remote / "pushed.log"
    hook(world.remote, f'while read old new ref; do echo "$ref" >> "{log}"; done\nexit 0\n')
    head = git(world.a, "rev-parse", "HEAD")
    add_record(world.a, "r1")
    add_note(world.a, head, "gates", {"passed": True})
    done = sync(world.a)
    assert done["atomic"] is False and done["pushedCount"] == 2
    # The summary last, once all the rest is there (docs/sync.md).
    assert log.read_text().split() == ["refs/harnery/runs/r1", "refs/harnery/notes", SUMMARY_REF]
    assert harnery_refs(world.remote) == harnery_refs(world.a)
    sync(world.b)
    assert read_note(world.b, head) == {"gates": {"passed": True}}


def test_refusing_hook_is_reported_not_retried(world: World) -> None:
    calls = world.remote / "calls.log"
    hook(world.remote, f'echo called >> "{calls}"\necho "no pushes today" >&2\nexit 1\n')
    add_record(world.a, "r1")
    before = harnery_refs(world.a)
    result = sync_raw(world.a, "--json")
    assert result.code == 3, result.err
    document = result.json()
    assert document["outcome"] == "push-refused" and document["rounds"] == 1
    assert "no pushes today" in document["remoteSaid"]
    assert "pre-receive hook declined" in document["refused"]
    assert "refused the push" in result.err and "not retried" in result.err
    assert calls.read_text().split() == ["called"]
    assert harnery_refs(world.a) == before and harnery_refs(world.remote) == {}


def test_remote_rewound_by_a_third_party_gets_local_events_back(world: World) -> None:
    first = add_record(world.a, "r1")
    change_record(world.a, "r1", "second")
    tip = change_record(world.a, "r1", "third")
    sync(world.a)
    sync(world.b)
    git(world.remote, "update-ref", "refs/harnery/runs/r1", first)
    # Written past git-harn, so the summary still names the old state: --full lists.
    done = sync(world.b, "--full")
    entry = next(e for e in done["refs"] if e["ref"] == "refs/harnery/runs/r1")
    assert entry["action"] == "ahead" and entry["pushed"] and entry["remote"] == first
    assert git(world.remote, "rev-parse", "refs/harnery/runs/r1") == tip
    assert git(world.b, "rev-parse", "refs/harnery-remotes/origin/runs/r1") == tip
    document = sync(world.a)  # listed or not, nothing to do
    assert document["pushedCount"] == 0 and document["counts"] == {"same": 1}
    assert actions(sync(world.a, "--full"))["refs/harnery/runs/r1"] == "same"


def _third_party(world: World, tmp_path: Path) -> Path:
    """A clone that writes straight to the remote, as a buggy or hostile tool would."""
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(world.remote), str(other))
    return other


def _commit_file(repo: Path, name: str, content: str, parent: str | None = None) -> str:
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=content,
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=repo, input=f"100644 blob {blob}\t{name}\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    args = ["commit-tree", tree, "-m", "hand-made"] + (["-p", parent] if parent else [])
    return git(repo, *args)


def test_corrupt_remote_records_are_quarantined_while_the_rest_sync(world: World,
                                                                    tmp_path: Path) -> None:
    add_record(world.a, "good")
    add_record(world.a, "shared")
    sync(world.a)
    sync(world.b)
    other = _third_party(world, tmp_path)
    git(other, "fetch", "-q", "origin", "refs/harnery/runs/shared:refs/harnery/runs/shared")
    shared_tip = git(other, "rev-parse", "refs/harnery/runs/shared")
    valid = json.loads(git(other, "show", f"{shared_tip}:run.json"))
    bad = {
        "bad-json": _commit_file(other, "run.json", "{not json"),
        "bad-schema": _commit_file(other, "run.json", json.dumps({**valid, "runId": "bad-schema",
                                                                   "state": "exploded"})),
        "id-mismatch": _commit_file(other, "run.json", json.dumps({**valid, "runId": "someone-else"})),
        "unrelated": _commit_file(other, "run.json", json.dumps({**valid, "runId": "shared"})),
        "blob": subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=other, input="x",
                               capture_output=True, text=True, check=True).stdout.strip(),
    }
    # Bad data on top of a chain the clones already hold: a fast-forward that must not happen.
    on_top = _commit_file(other, "run.json", "[]", parent=shared_tip)
    specs = [f"{oid}:refs/harnery/runs/{name}" for name, oid in bad.items() if name != "unrelated"]
    git(other, "push", "-q", "origin", *specs, f"{on_top}:refs/harnery/runs/shared")
    # A ref whose objects the remote lacks: a commit over a tree it does not have.
    dangling = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"], cwd=world.remote,
        input=f"tree {'1' * 40}\nauthor x <x@x> 0 +0000\ncommitter x <x@x> 0 +0000\n\nmissing\n",
        capture_output=True, text=True, check=True).stdout.strip()
    git(world.remote, "update-ref", "refs/harnery/runs/missing", dangling)
    add_record(world.c, "from-gamma")
    sync(world.c, expect=1)  # gamma pushes its own record and quarantines the rest
    change_record(world.b, "good", "more")
    before = harnery_refs(world.b)
    # A record whose history shares nothing with beta's: beta holds its own chain.
    unrelated_local = add_record(world.b, "unrelated")
    git(other, "push", "-q", "origin", f"{bad['unrelated']}:refs/harnery/runs/unrelated")
    result = sync_raw(world.b, "--json")
    assert result.code == 1, result.err
    document = result.json()
    assert document["outcome"] == "quarantined"
    found = actions(document)
    for name in (*bad, "shared", "missing"):
        assert found[f"refs/harnery/runs/{name}"] == "quarantined", (name, document)
        assert f"quarantined refs/harnery/runs/{name}" in result.err
    details = {e["ref"]: e["detail"] for e in document["refs"]}
    assert "not JSON" in details["refs/harnery/runs/bad-json"]
    assert "state" in details["refs/harnery/runs/bad-schema"]
    assert "another run" in details["refs/harnery/runs/id-mismatch"]
    assert "unrelated history" in details["refs/harnery/runs/unrelated"]
    assert "not a commit" in details["refs/harnery/runs/blob"]
    assert "cannot be fetched" in details["refs/harnery/runs/missing"]
    # The rest synced: gamma's record arrived, beta's change went out.
    assert found["refs/harnery/runs/from-gamma"] == "new"
    assert git(world.remote, "rev-parse", "refs/harnery/runs/good") == before["refs/harnery/runs/good"]
    # Local refs untouched, nothing pushed over the bad ones.
    after = harnery_refs(world.b)
    assert after["refs/harnery/runs/shared"] == shared_tip
    assert after["refs/harnery/runs/unrelated"] == unrelated_local
    assert not any(f"refs/harnery/runs/{name}" in after for name in bad if name != "unrelated")
    assert git(world.remote, "rev-parse", "refs/harnery/runs/shared") == on_top
    assert git(world.remote, "rev-parse", "refs/harnery/runs/unrelated") == bad["unrelated"]
    assert shared_tip in chain(world.b, "refs/harnery/runs/shared")


def test_the_push_staging_namespace_never_leaves_the_clone(world: World) -> None:
    """Pushes go through one glob over ``refs/harnery-push/<token>/``: after a
    sync nothing is left there, a namespace a killed sync left is swept, and
    the remote only ever sees refs/harnery/*."""
    head = git(world.a, "rev-parse", "HEAD")
    git(world.a, "update-ref", "refs/harnery-push/deadbeef0000/harnery/runs/left", head)
    oids = {run_id: add_record(world.a, run_id) for run_id in ("one", "two")}
    document = sync(world.a)
    assert actions(document) == {"refs/harnery/runs/one": "ahead", "refs/harnery/runs/two": "ahead"}
    assert document["pushedCount"] == 2
    assert git(world.a, "for-each-ref", "refs/harnery-push/") == ""
    remote_refs = git(world.remote, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    assert sorted(line for line in remote_refs if "harnery" in line and SUMMARY_REF not in line) == sorted(
        f"refs/harnery/runs/{run_id} {oid}" for run_id, oid in oids.items())


def test_a_killed_sync_leaves_no_staging_namespace_for_ever(world: World) -> None:
    """Issue 21, defect 9: a sync killed with its git leaves its staging
    namespace; the next sync sweeps it whatever it has to push."""
    from tests.kit.runners import at_failpoint

    add_record(world.a, "one")
    at_failpoint(world.a, "push-staged", "sync").kill_group()
    left = git(world.a, "for-each-ref", "--format=%(refname)", "refs/harnery-push/").splitlines()
    assert left and all(name.endswith(("/harnery/runs/one", "/" + SUMMARY_REF.removeprefix("refs/"))) for name in left)
    git(world.a, "push", "-q", "origin", "refs/harnery/runs/one:refs/harnery/runs/one")  # nothing ahead now
    document = sync(world.a)
    assert document["pushedCount"] == 0
    assert git(world.a, "for-each-ref", "refs/harnery-push/") == ""  # today: left while nothing is pushed
    assert "refs/harnery-push" not in git(world.remote, "for-each-ref")


def test_a_staging_namespace_is_swept_when_nothing_is_to_be_pushed(world: World) -> None:
    """The sweep does not wait for something to push (issue 21, defect 9)."""
    head = git(world.a, "rev-parse", "HEAD")
    git(world.a, "update-ref", "refs/harnery-push/0123456789ab/harnery/runs/left", head)
    document = sync(world.a)
    assert document["pushedCount"] == 0
    assert git(world.a, "for-each-ref", "refs/harnery-push/") == ""  # today: left for ever
