"""The integrate step a run advises lands as the run did [L4] [F1]: its
flags (never configuration keys) say pull-request mode and the forge, since
``git harn integrate`` reads no workflow.toml; a push run's step has none."""

from __future__ import annotations

import shlex

from git_harn.workflow.model.state import Ending, Facts, State, Where, advice, landing_flags

URL = "https://forge.example/api"


def _halted(where: Where) -> str | None:
    facts = Facts("1.1", "1.1", "roadmap-1.1", True, True, False)
    return advice(Ending(State.HALTED, "integrate", "checks needed"), facts, where).command


def test_a_pull_request_run_s_integrate_step_names_the_landing_and_the_forge_by_flag() -> None:
    flags = ("--remote", "up", "--base", "trunk")
    where = Where("up", "trunk", flags, flags + landing_flags("pull-request", "gitea", URL, True))
    assert shlex.split(_halted(where) or "") == [
        "git", "harn", "integrate", "roadmap-1.1", "--remote", "up", "--base", "trunk", "--land", "pull-request",
        "--forge", "gitea", "--forge-url", URL, "--auto-merge"]
    assert where.workflow_run() == "git harn workflow run --remote up --base trunk"  # the relaunch reads the file


def test_a_push_run_s_integrate_step_is_unchanged() -> None:
    assert landing_flags("push", "gitlab", URL, True) == ()
    assert _halted(Where("origin", "main", (), landing_flags(None, None, None, False))) == \
        "git harn integrate roadmap-1.1"
