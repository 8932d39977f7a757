"""A sync in a clone where a run's seal is armed [T2]: it fetches the
tracking copies and pushes what this clone has ahead; what it would move
among this clone's own refs is ``waiting`` until a sync after the run;
``--salvage`` is refused there. The seal here is marked by this test's own
process (``store/armed``), as a run marks its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_harn.store.armed import armed, marked, seals_dir
from tests.kit.harn import git, harn
from tests.kit.sync_world import World, actions, add_record, make_world, sync


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _refs(repo: Path, prefix: str) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_a_sync_beside_an_armed_seal_moves_only_tracking_copies_and_pushes_what_is_ahead(world: World) -> None:
    add_record(world.b, "theirs")
    sync(world.b)
    add_record(world.a, "mine")
    common = world.a / ".git"
    before = _refs(world.a, "refs/harnery/")
    with marked(common, "wf-20260101T000000Z-abcdef"):
        assert armed(common) == ["wf-20260101T000000Z-abcdef"]
        done = sync(world.a)
        assert done["outcome"] == "synced"
        assert actions(done)["refs/harnery/runs/theirs"] == "waiting"
        assert actions(done)["refs/harnery/runs/mine"] == "ahead"  # pushed: another machine can read it
        assert "refs/harnery/runs/mine" in _refs(world.remote, "refs/harnery/runs/")
        assert _refs(world.a, "refs/harnery/") == before  # not one of this clone's refs moved
        tracked = _refs(world.a, "refs/harnery-remotes/origin/runs/")
        assert tracked["refs/harnery-remotes/origin/runs/theirs"] == \
            _refs(world.remote, "refs/harnery/runs/")["refs/harnery/runs/theirs"]
        said = harn(world.a, "sync")
        assert said.code == 0 and "1 waiting" in said.out and "left for a sync after the run" in said.err, said
        refused = harn(world.a, "sync", "--salvage")
        assert refused.code == 2, refused.err
        assert refused.err.startswith("git harn: error: wf-20260101T000000Z-abcdef runs in this clone")
        assert len(refused.err.strip().splitlines()) == 1
        config = (common / "config").read_bytes()
        refused = harn(world.a, "sync", "--configure")  # the config is what the seal compares
        assert refused.code == 2 and "runs in this clone" in refused.err, refused.err
        assert (common / "config").read_bytes() == config
    assert armed(common) == []
    after = sync(world.a)  # the run ended: what waited is merged
    assert actions(after)["refs/harnery/runs/theirs"] == "new"
    assert _refs(world.a, "refs/harnery/runs/")["refs/harnery/runs/theirs"] == \
        _refs(world.remote, "refs/harnery/runs/")["refs/harnery/runs/theirs"]


def test_a_seal_mark_of_a_process_that_is_gone_arms_nothing_and_goes(world: World) -> None:
    common = world.a / ".git"
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    folder = seals_dir(common)
    folder.mkdir(parents=True)
    gone = {"owner": "wf-gone", "pid": int(ended.stdout), "start": "1", "host": os.uname().nodename}
    (folder / "wf-gone").write_text(json.dumps(gone))
    (folder / "junk").write_text("not json")
    assert armed(common) == []
    assert not (folder / "wf-gone").exists()
    add_record(world.b, "theirs")
    sync(world.b)
    assert actions(sync(world.a))["refs/harnery/runs/theirs"] == "new"
