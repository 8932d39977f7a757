"""git harn integrate against a local bare repository as the remote [I1]-[I4]."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from git_harn.errors import GitFailure
from git_harn.git import remote as door
from git_harn.git.checkout import wt_git as _wt
from git_harn.integrate.target import slug
from tests.kit.harn import all_refs, assert_error_document, assert_valid, git, harn, make_repo, ref

ROADMAP = (
    "# Roadmap\n\n"
    "- [ ] 1.1 First thing\n"
    "- [ ] 1.2 Second thing\n"
    "  Requires: 1.1\n"
    "- [ ] 1.3 Third thing\n"
)


@dataclass
class Setup:
    tmp: Path
    remote: Path
    work: Path

    def remote_main(self) -> str:
        return git(self.remote, "rev-parse", "main")

    def remote_file(self, path: str, rev: str = "main") -> str:
        return git(self.remote, "show", f"{rev}:{path}")


@pytest.fixture
def s(tmp_path: Path) -> Setup:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = make_repo(tmp_path / "seed", {"README.md": "hello\n", "docs/roadmap.md": ROADMAP, "a.txt": "a\n"})
    git(seed, "remote", "add", "origin", str(remote))
    git(seed, "push", "-q", "origin", "main")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    git(work, "config", "harn.worktreeRoot", str(tmp_path / "worktrees"))
    return Setup(tmp_path, remote, work)


def make_task(repo: Path, task_id: str, files: dict[str, str], base: str = "origin/main") -> str:
    """A task branch with one commit of ``files``, made without leaving main."""
    branch = f"roadmap-{task_id}"
    git(repo, "switch", "-q", "-c", branch, base)
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"work on {task_id}")
    git(repo, "switch", "-q", "main")
    return branch


def push_from_other_clone(s: Setup, name: str, files: dict[str, str]) -> str:
    other = s.tmp / name
    if not other.exists():
        git(s.tmp, "clone", "-q", str(s.remote), str(other))
    git(other, "pull", "-q", "--ff-only")
    for path, content in files.items():
        (other / path).write_text(content)
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", f"{name} moves main")
    git(other, "push", "-q", "origin", "main")
    return git(other, "rev-parse", "HEAD")


def note_of(repo: Path, commit: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(git(repo, "show", f"refs/harnery/notes:{commit}"))
    return loaded


def integration_worktree(s: Setup) -> Path:
    found = [p for p in (s.tmp / "worktrees").glob("*/.integrate")]
    assert len(found) == 1
    return found[0]


def test_happy_path_lands_one_squash_with_roadmap_ticked(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n", "b.txt": "two\n"})
    before_main, head_before = s.remote_main(), git(s.work, "rev-parse", "HEAD")
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert all(report[k] is True for k in ("ok", "rebased", "squashMerged", "pushed", "roadmapMarkedDone"))
    assert (report["outcome"], report["attempts"], report["taskId"], report["branch"]) == \
        ("landed", 1, "1.1", "roadmap-1.1")
    landed = s.remote_main()
    assert report["commit"] == landed
    assert git(s.remote, "rev-list", "--parents", "-n1", landed).split() == [landed, before_main]
    assert s.remote_file("new.txt") == "one" and s.remote_file("b.txt") == "two"
    assert "- [x] 1.1 First thing" in s.remote_file("docs/roadmap.md")
    assert "- [ ] 1.2 Second thing" in s.remote_file("docs/roadmap.md")
    message = git(s.remote, "log", "-1", "--format=%B", landed)
    assert message.startswith("First thing\n") and "Harnery-Task: 1.1" in message.splitlines()
    assert note_of(s.work, landed)["integration"] == report
    # The user's checkout is untouched; the work happened elsewhere.
    assert git(s.work, "rev-parse", "HEAD") == head_before
    assert git(s.work, "status", "--porcelain") == ""
    assert ref(s.work, "refs/remotes/origin/main") == landed
    assert ref(s.work, "refs/heads/integrate-1-1") is None  # the throwaway branch went
    assert integration_worktree(s).is_dir()
    # The squash of a tip that grows from the base is its own tree, read
    # in-process: git-harn's checkout is left clean, detached where it was made.
    assert git(integration_worktree(s), "status", "--porcelain", "--untracked-files=all") == ""
    assert git(integration_worktree(s), "rev-parse", "HEAD") == before_main
    assert git(integration_worktree(s), "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert git(s.work, "diff", "--name-only", branch, landed) == "docs/roadmap.md"  # the tip's tree, ticked


def test_the_squash_commit_is_signed_when_commit_gpgsign_says_so(s: Setup) -> None:
    """The squash is committed by git (commit-tree), so the operator's identity
    and signing settings hold for it as for their own commits."""
    key = s.tmp / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "harn-test", "-f", str(key)], check=True)
    allowed = s.tmp / "allowed-signers"
    allowed.write_text(f"harn@example.invalid {(s.tmp / 'signing-key.pub').read_text()}")
    for key_value in (("gpg.format", "ssh"), ("user.signingKey", str(key)), ("commit.gpgSign", "true"),
                      ("gpg.ssh.allowedSignersFile", str(allowed)), ("user.email", "harn@example.invalid")):
        git(s.work, "config", *key_value)
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 0, result.err
    landed = result.json()["commit"]
    assert git(s.work, "log", "-1", "--format=%G? %ae", landed) == "G harn@example.invalid"


def test_base_moved_before_start_rebases_the_task_branch(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    old_tip = ref(s.work, branch)
    moved = push_from_other_clone(s, "other", {"c.txt": "c\n"})
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 0, result.err
    rebased = ref(s.work, branch)
    assert rebased != old_tip
    assert git(s.work, "rev-parse", f"{rebased}^") == moved
    landed = s.remote_main()
    assert git(s.remote, "rev-parse", f"{landed}^") == moved
    assert git(s.remote, "rev-parse", f"{landed}^{{tree}}") != git(s.work, "rev-parse", f"{rebased}^{{tree}}")
    assert s.remote_file("c.txt") == "c" and s.remote_file("new.txt") == "one"


def _race_hook(s: Setup) -> Path:
    """A pre-receive hook on the remote: on the first push it lets another
    clone push to main first, so our push loses the ref race."""
    other = s.tmp / "racer"
    git(s.tmp, "clone", "-q", str(s.remote), str(other))
    (other / "racer.txt").write_text("racer\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "racer wins")
    mark = s.tmp / "raced"
    hook = s.remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        f"if [ ! -e '{mark}' ]; then\n"
        f"  touch '{mark}'\n"
        "  env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY \\\n"
        "      -u GIT_ALTERNATE_OBJECT_DIRECTORIES -u GIT_PUSH_OPTION_COUNT \\\n"
        f"      git -C '{other}' push -q origin main >&2\n"
        "fi\n"
        "exit 0\n"
    )
    hook.chmod(0o755)
    return other


def test_race_between_rebase_and_push_lands_after_a_retry(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    racer = _race_hook(s)
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert report["ok"] is True and report["attempts"] == 2
    landed = s.remote_main()
    assert report["commit"] == landed
    assert git(s.remote, "rev-parse", f"{landed}^") == git(racer, "rev-parse", "HEAD")
    assert s.remote_file("racer.txt") == "racer" and s.remote_file("new.txt") == "one"
    assert "- [x] 1.1" in s.remote_file("docs/roadmap.md")
    assert "rejected" in result.err


def test_a_push_refused_by_a_remote_hook_still_reports(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    hook = s.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'policy: main is frozen today' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = s.remote_main()
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 1, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert (report["ok"], report["pushed"], report["outcome"]) == (False, False, "push-failed")
    assert "remote: policy: main is frozen today" in report["summary"]
    assert "pre-receive hook declined" in report["summary"]
    assert s.remote_main() == before
    human = harn(s.work, "integrate", branch, "--base", "main")
    assert human.code == 1 and "remote: policy: main is frozen today" in human.out


def test_two_integrates_at_once_both_land(s: Setup) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    second = make_task(s.work, "1.3", {"three.txt": "3\n"})
    procs = [subprocess.Popen(["git", "harn", "integrate", b, "--base", "main", "--json"], cwd=s.work,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for b in (first, second)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    commits = {json.loads(out)["commit"] for out, _ in outs}
    history = git(s.remote, "rev-list", "--first-parent", "main").splitlines()
    assert commits == set(history[:2])
    roadmap = s.remote_file("docs/roadmap.md")
    assert "- [x] 1.1 First thing" in roadmap and "- [x] 1.3 Third thing" in roadmap
    assert s.remote_file("one.txt") == "1" and s.remote_file("three.txt") == "3"


def test_a_roadmap_made_a_symlink_is_refused_and_nothing_outside_is_touched(s: Setup) -> None:
    outside = s.tmp / "outside.md"
    outside.write_text("- [ ] 1.1 not the roadmap\n")
    git(s.work, "switch", "-q", "-c", "roadmap-1.1", "origin/main")
    (s.work / "docs" / "roadmap.md").unlink()
    (s.work / "docs" / "roadmap.md").symlink_to(outside)
    (s.work / "new.txt").write_text("one\n")
    git(s.work, "add", "-A")
    git(s.work, "commit", "-q", "-m", "roadmap elsewhere")
    git(s.work, "switch", "-q", "main")
    before = s.remote_main()
    result = harn(s.work, "integrate", "roadmap-1.1", "--base", "main", "--json")
    assert result.code == 3, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert (report["ok"], report["pushed"], report["roadmapMarkedDone"], report["outcome"]) == \
        (False, False, False, "refused")
    assert "regular file (mode 120000)" in report["summary"]
    assert outside.read_text() == "- [ ] 1.1 not the roadmap\n"
    assert s.remote_main() == before


@pytest.mark.parametrize("edit, lands", [
    (lambda text: text.replace("[ ] 1.1", "[x] 1.1"), True),  # its own box: fine
    (lambda text: text.replace("[ ] 1.3", "[x] 1.3"), False),  # another task's box
    (lambda text: text + "- [ ] 1.4 Slipped in\n", False),
], ids=["own box", "other box", "other line"])
def test_the_squash_may_change_only_its_own_checkbox(s: Setup, edit: Callable[[str], str], lands: bool) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n", "docs/roadmap.md": edit(ROADMAP)})
    before = s.remote_main()
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    report = result.json()
    assert_valid(report, "integration-report")
    if lands:
        assert result.code == 0, result.err
        assert s.remote_file("docs/roadmap.md") + "\n" == ROADMAP.replace("[ ] 1.1", "[x] 1.1")
    else:
        assert (result.code, report["ok"], report["outcome"]) == (3, False, "refused")
        assert "tick other tasks" in report["summary"] and s.remote_main() == before


def test_conflict_reports_paths_and_leaves_the_task_branch(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"a.txt": "task\n"})
    tip = ref(s.work, branch)
    moved = push_from_other_clone(s, "other", {"a.txt": "main\n"})
    for _ in range(2):  # and again: a rerun after a conflict needs no cleanup
        result = harn(s.work, "integrate", branch, "--base", "main", "--json")
        assert result.code == 3, result.err
        report = result.json()
        assert_valid(report, "integration-report")
        assert report["ok"] is False and report["outcome"] == "conflict"
        assert report["conflictPaths"] == ["a.txt"] and "a.txt" in report["conflicts"]
        assert ref(s.work, branch) == tip
        assert s.remote_main() == moved
    admin = Path(git(integration_worktree(s), "rev-parse", "--absolute-git-dir"))
    assert not (admin / "rebase-merge").exists()


def test_leftover_branch_with_staged_half_squash_does_not_break_the_next_attempt(s: Setup) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    assert harn(s.work, "integrate", first, "--base", "main").code == 0
    stale = make_task(s.work, "9.9", {"stale.txt": "stale\n", "a.txt": "stale\n"}, base="main")
    wt = integration_worktree(s)
    git(wt, "switch", "-q", "-C", "integrate-1-3", "origin/main")
    git(wt, "merge", "--squash", "-q", stale)
    (wt / "untracked.txt").write_text("junk\n")
    assert git(wt, "diff", "--cached", "--name-only")  # a half-finished squash is staged
    second = make_task(s.work, "1.3", {"three.txt": "3\n"})
    result = harn(s.work, "integrate", second, "--base", "main", "--json")
    assert result.code == 0, result.err
    landed = s.remote_main()
    files = set(git(s.remote, "ls-tree", "-r", "--name-only", landed).splitlines())
    assert files == {"README.md", "a.txt", "docs/roadmap.md", "one.txt", "three.txt"}
    assert s.remote_file("a.txt") == "a"
    assert git(s.remote, "diff", "--name-only", f"{landed}^", landed).splitlines() == \
        ["docs/roadmap.md", "three.txt"]


@pytest.mark.parametrize("how", ["git dir deleted", "cloned afresh"])
def test_a_stale_integration_worktree_is_made_afresh(s: Setup, how: str) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    assert harn(s.work, "integrate", first, "--base", "main").code == 0
    wt = integration_worktree(s)
    (wt / "scratch.txt").write_text("left over\n")
    if how == "git dir deleted":
        shutil.rmtree(git(wt, "rev-parse", "--absolute-git-dir"))
    else:  # the old clone moves away with its git dir; a new one takes its place
        s.work.rename(s.tmp / "old-work")
        git(s.tmp, "clone", "-q", str(s.remote), str(s.work))
        git(s.work, "config", "harn.worktreeRoot", str(s.tmp / "worktrees"))
    second = make_task(s.work, "1.3", {"three.txt": "3\n"})
    result = harn(s.work, "integrate", second, "--base", "main", "--json")
    assert result.code == 0, result.err
    assert "- [x] 1.3" in s.remote_file("docs/roadmap.md") and s.remote_file("three.txt") == "3"
    assert not (wt / "scratch.txt").exists()
    assert Path(git(wt, "rev-parse", "--git-common-dir")).resolve() == (s.work / ".git").resolve()


def test_git_failures_in_the_integration_worktree_name_the_subcommand(tmp_path: Path) -> None:
    with pytest.raises(GitFailure, match=r"^git rev-parse failed: "):
        _wt(tmp_path, "rev-parse", "--verify", "--quiet", "no-such-rev")


def test_rerun_after_success_reports_already_integrated_and_changes_nothing(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    assert harn(s.work, "integrate", branch, "--base", "main").code == 0
    local, remote = all_refs(s.work), all_refs(s.remote)
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert report["outcome"] == "already-integrated" and report["ok"] is True
    assert report["commit"] == s.remote_main()
    assert (all_refs(s.work), all_refs(s.remote)) == (local, remote)
    human = harn(s.work, "integrate", branch, "--base", "main")
    assert human.code == 0 and "already integrated" in human.out


def test_a_box_ticked_by_another_commit_needs_the_operator(s: Setup) -> None:
    branch = make_task(s.work, "1.3", {"three.txt": "3\n"})
    push_from_other_clone(s, "other", {"docs/roadmap.md": ROADMAP.replace("[ ] 1.3", "[x] 1.3")})
    tip, remote = ref(s.work, branch), all_refs(s.remote)
    result = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert result.code == 3, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert (report["ok"], report["outcome"], report["commit"]) == (False, "needs-operator", None)
    assert not any(report[k] for k in ("rebased", "squashMerged", "pushed", "roadmapMarkedDone"))
    assert "Harnery-Task: 1.3" in report["summary"]
    assert (ref(s.work, branch), all_refs(s.remote)) == (tip, remote)


def test_an_addendum_squash_does_not_count_for_its_task(s: Setup) -> None:
    git(s.work, "branch", "roadmap-1.1", "origin/main")
    addendum = make_task(s.work, "1.1-addendum-1", {"add.txt": "add\n"})
    ticked = ROADMAP.replace("- [ ] 1.1 First thing\n", "- [x] 1.1 First thing\n  - [ ] addendum 1: more\n")
    push_from_other_clone(s, "other", {"docs/roadmap.md": ticked})
    assert harn(s.work, "integrate", addendum, "--base", "main").code == 0
    assert "  - [x] addendum 1: more\n" in s.remote_file("docs/roadmap.md")
    result = harn(s.work, "integrate", "roadmap-1.1", "--base", "main", "--json")
    assert result.code == 3 and result.json()["outcome"] == "needs-operator"


@pytest.mark.parametrize("how", ["at the base", "reverted"])
def test_an_empty_task_branch_has_nothing_to_integrate(s: Setup, how: str) -> None:
    if how == "at the base":
        git(s.work, "branch", "roadmap-1.1", "origin/main")
    else:
        make_task(s.work, "1.1", {"new.txt": "one\n"})
        git(s.work, "switch", "-q", "roadmap-1.1")
        git(s.work, "revert", "--no-edit", "HEAD")
        git(s.work, "switch", "-q", "main")
    before = s.remote_main()
    result = harn(s.work, "integrate", "roadmap-1.1", "--base", "main", "--json")
    assert result.code == 3, result.err
    report = result.json()
    assert_valid(report, "integration-report")
    assert (report["ok"], report["squashMerged"], report["pushed"], report["roadmapMarkedDone"]) == \
        (False, False, False, False)
    assert report["outcome"] == "nothing-to-integrate" and "nothing to integrate" in report["summary"]
    assert s.remote_main() == before and "- [ ] 1.1" in s.remote_file("docs/roadmap.md")


def crash_at(s: Setup, failpoint: str) -> str:
    """Integrate roadmap-1.1 and kill the integrator at ``failpoint``."""
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    crashed = harn(s.work, "integrate", branch, "--base", "main", env={"HARN_FAILPOINT": failpoint})
    assert crashed.code != 0
    return branch


def test_a_crash_is_not_retried_until_the_operator_says_so(s: Setup) -> None:
    branch = crash_at(s, "integrate-after-commit")
    before = s.remote_main()
    assert ref(s.work, "refs/heads/integrate-1-1") is not None  # left behind, unpushed
    local = all_refs(s.work)
    halted = harn(s.work, "integrate", branch, "--base", "main", "--json")
    assert halted.code == 3, halted.err
    report = halted.json()
    assert_valid(report, "integration-report")
    assert report["outcome"] == "needs-operator" and report["ok"] is False
    assert "origin/main" in report["summary"] and "docs/roadmap.md" in report["summary"]
    assert "--resume-after-crash" in report["summary"]
    assert all_refs(s.work) == local and s.remote_main() == before
    resumed = harn(s.work, "integrate", branch, "--base", "main", "--resume-after-crash", "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["outcome"] == "landed"
    assert git(s.remote, "rev-list", "--count", f"{before}..main") == "1"
    assert harn(s.work, "integrate", branch, "--base", "main").code == 0  # marker cleared


def test_a_crash_after_the_push_is_found_integrated_on_resume(s: Setup) -> None:
    branch = crash_at(s, "integrate-after-push")
    landed = s.remote_main()
    assert "- [x] 1.1" in s.remote_file("docs/roadmap.md")
    assert harn(s.work, "integrate", branch, "--base", "main").code == 3
    resumed = harn(s.work, "integrate", branch, "--base", "main", "--resume-after-crash", "--json")
    assert resumed.code == 0 and resumed.json()["outcome"] == "already-integrated"
    assert s.remote_main() == landed


def test_dead_holder_of_the_merge_lock_is_broken_with_a_warning(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    locks = s.work / ".git" / "harnery" / "locks"
    locks.mkdir(parents=True)
    (locks / "merge.lock").write_text(json.dumps(
        {"pid": 999_999_999, "start": "1", "host": os.uname().nodename, "purpose": "integrate"}))
    result = harn(s.work, "integrate", branch, "--base", "main")
    assert result.code == 0, result.err
    assert "broke the merge lock" in result.err
    assert not (locks / "merge.lock").exists()


def test_a_live_holder_makes_integrate_wait_then_give_up(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    locks = s.work / ".git" / "harnery" / "locks"
    locks.mkdir(parents=True)
    holder = subprocess.Popen(["sleep", "30"])
    try:
        start = Path(f"/proc/{holder.pid}/stat").read_text().rsplit(")", 1)[-1].split()[19]
        (locks / "merge.lock").write_text(json.dumps(
            {"pid": holder.pid, "start": start, "host": os.uname().nodename, "purpose": "test"}))
        git(s.work, "config", "harn.mergeLockTimeout", "1")
        before = s.remote_main()
        result = harn(s.work, "integrate", branch, "--base", "main")
        assert result.code == 1
        assert "waiting up to 1s: the merge lock is held by" in result.err
        assert "git harn: error: the merge lock is busy: the merge lock is held by" in result.err
        assert s.remote_main() == before
    finally:
        holder.kill()
        holder.wait()


def test_rebase_of_a_checked_out_task_branch_is_refused(s: Setup) -> None:
    branch = make_task(s.work, "1.1", {"new.txt": "one\n"})
    push_from_other_clone(s, "other", {"c.txt": "c\n"})
    git(s.work, "worktree", "add", "-q", str(s.tmp / "agent"), branch)
    tip, before = ref(s.work, branch), s.remote_main()
    result = harn(s.work, "integrate", branch, "--base", "main")
    assert result.code == 3
    assert "checked out" in result.err
    assert ref(s.work, branch) == tip and s.remote_main() == before


@pytest.mark.parametrize("args, message", [
    (["roadmap-7.7", "--base", "main"], "unknown branch"),
    (["roadmap-1.1", "--base", "main", "--task", "x.1"], "invalid task id"),
    (["roadmap-1.1", "--base", "main", "--remote", "nowhere"], "unknown remote"),
    (["roadmap-1.1", "--base", "no-such-base"], "has no branch"),
    (["roadmap-1.1", "--base", "main", "--task", "4.4"], "has no task 4.4"),
    (["roadmap-1.1", "--base", "main", "--max-attempts", "0"], "--max-attempts"),
    (["roadmap-1.1", "--base", "bad..name"], "invalid branch name"),
    (["feature", "--base", "main"], "pass --task"),
])
def test_bad_input_exits_2_and_changes_nothing(s: Setup, args: list[str], message: str) -> None:
    make_task(s.work, "1.1", {"new.txt": "one\n"})
    git(s.work, "branch", "feature", "main")
    local, remote = all_refs(s.work), all_refs(s.remote)
    result = harn(s.work, "integrate", *args)
    assert result.code == 2, result.err
    assert message in result.err and result.err.startswith("git harn: error: ")
    assert (all_refs(s.work), all_refs(s.remote)) == (local, remote)


def test_task_option_names_the_task_of_any_branch(s: Setup) -> None:
    git(s.work, "switch", "-q", "-c", "feature", "origin/main")
    (s.work / "f.txt").write_text("f\n")
    git(s.work, "add", "-A")
    git(s.work, "commit", "-q", "-m", "feature")
    git(s.work, "switch", "-q", "main")
    result = harn(s.work, "integrate", "feature", "--base", "main", "--task", "1.3", "--json")
    assert result.code == 0, result.err
    assert "- [x] 1.3 Third thing" in s.remote_file("docs/roadmap.md")
    assert "Harnery-Task: 1.3" in git(s.remote, "log", "-1", "--format=%B", "main")


def test_base_defaults_to_harn_base_else_main(s: Setup) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    assert harn(s.work, "integrate", first).code == 0  # no harn.base: main
    assert "- [x] 1.1" in s.remote_file("docs/roadmap.md")
    git(s.work, "push", "-q", "origin", "origin/main:refs/heads/dev")
    git(s.work, "config", "harn.base", "dev")
    second = make_task(s.work, "1.3", {"three.txt": "3\n"})
    main_before = s.remote_main()
    result = harn(s.work, "integrate", second, "--json")
    assert result.code == 0, result.err
    assert result.json()["base"] == "dev"
    assert "- [x] 1.3" in s.remote_file("docs/roadmap.md", "dev")
    assert s.remote_main() == main_before


def test_slug_is_one_to_one() -> None:
    assert slug("1.2.3") == "1-2-3"
    assert slug("1.23") != slug("12.3")
    assert slug("4.1", 2) == "4-1-addendum-2"


@pytest.mark.parametrize("words, expected", [
    ("[rejected] (stale info)", door.MOVED_ON),
    ("[rejected] (non-fast-forward)", door.MOVED_ON),
    ("[rejected] (fetch first)", door.MOVED_ON),
    ("[remote rejected] (failed to update ref)", door.MOVED_ON),
    ("[remote rejected] (atomic push failed)", door.MOVED_ON),
    ("[remote rejected] (pre-receive hook declined)", door.REFUSED_BY_HOOK),
    ("[remote rejected] (deny updating a hidden ref)", door.REJECTED),
    ("fatal: Could not read from remote repository.", door.UNREACHABLE),
    ("fatal: couldn't find remote ref refs/heads/nope", door.NO_SUCH_REF),
])
def test_the_one_table_reads_what_git_says(words: str, expected: str) -> None:
    assert door.meaning(words) == expected


def test_man_page_documents_integrate_and_its_options() -> None:
    from git_harn.commands.integrate import integrate

    page = (Path(__file__).resolve().parents[2] / "man" / "git-harn.1").read_text().replace("\\-", "-")
    assert "git harn integrate" in page and "harn.mergeLockTimeout" in page
    for option in integrate.params:
        for flag in getattr(option, "opts", []):
            if flag.startswith("--"):
                assert flag in page, flag


# --- several branches in one call -------------------------------------------------


def _first_parents(s: Setup, since: str) -> list[str]:
    return git(s.remote, "rev-list", "--first-parent", "--reverse", f"{since}..main").splitlines()


def test_a_batch_lands_each_task_in_order(s: Setup) -> None:
    branches = [make_task(s.work, task, {f"{task}.txt": f"{task}\n"}) for task in ("1.3", "1.1", "1.2")]
    before = s.remote_main()
    result = harn(s.work, "integrate", *branches, "--base", "main", "--json")
    assert result.code == 0, result.err
    batch = result.json()
    assert_valid(batch, "integration-batch")
    assert batch["notAttempted"] == [] and "error" not in batch
    assert [r["branch"] for r in batch["reports"]] == branches
    assert all(r["outcome"] == "landed" for r in batch["reports"])
    landed = _first_parents(s, before)
    assert landed == [r["commit"] for r in batch["reports"]]  # three squashes, in the order given
    for commit, task in zip(landed, ("1.3", "1.1", "1.2"), strict=True):
        assert git(s.remote, "rev-list", "--parents", "-n1", commit).count(" ") == 1
        assert f"Harnery-Task: {task}" in git(s.remote, "log", "-1", "--format=%B", commit).splitlines()
        assert sorted(git(s.remote, "diff", "--name-only", f"{commit}^", commit).splitlines()) == \
            [f"{task}.txt", "docs/roadmap.md"]
        assert note_of(s.work, commit)["integration"] == batch["reports"][landed.index(commit)]
    assert s.remote_file("docs/roadmap.md").count("- [x] ") == 3
    assert ref(s.work, "refs/heads/integrate-1-1") is None
    assert len(list((s.tmp / "worktrees").glob("*/.integrate"))) == 1  # one worktree, reused


def test_a_batch_stops_at_a_conflict_and_leaves_the_rest(s: Setup) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    second = make_task(s.work, "1.2", {"a.txt": "task\n"})
    third = make_task(s.work, "1.3", {"three.txt": "3\n"})
    moved = push_from_other_clone(s, "other", {"a.txt": "main\n"})
    tips = {b: ref(s.work, b) for b in (second, third)}
    result = harn(s.work, "integrate", first, second, third, "--base", "main", "--json")
    assert result.code == 3, result.err
    batch = result.json()
    assert_valid(batch, "integration-batch")
    assert [r["outcome"] for r in batch["reports"]] == ["landed", "conflict"]
    assert batch["reports"][1]["conflictPaths"] == ["a.txt"] and batch["notAttempted"] == [third]
    assert _first_parents(s, moved) == [batch["reports"][0]["commit"]]
    roadmap = s.remote_file("docs/roadmap.md")
    assert "- [x] 1.1" in roadmap and "- [ ] 1.2" in roadmap and "- [ ] 1.3" in roadmap
    assert {b: ref(s.work, b) for b in (second, third)} == tips  # the third was not even rebased
    human = harn(s.work, "integrate", second, third, "--base", "main")
    assert human.code == 3
    assert f"== {second} (task 1.2)" in human.out and "conflict: " in human.out
    assert human.out.rstrip().endswith(f"not attempted: {third}")


@pytest.mark.parametrize("extra, message", [
    (["--task", "1.3"], "--task needs exactly one task branch"),
    (["--resume-after-crash"], "--resume-after-crash needs exactly one task branch"),
    ([], "unknown branch: roadmap-7.7"),
    (["bad..name"], "invalid branch name"),
    (["refs/heads/roadmap-1.1"], "are the same task"),
], ids=["task", "resume", "unknown", "invalid", "twice"])
def test_a_bad_batch_exits_2_and_integrates_nothing(s: Setup, extra: list[str], message: str) -> None:
    branches = [make_task(s.work, task, {f"{task}.txt": "x\n"}) for task in ("1.1", "1.3")]
    if not extra or not extra[0].startswith("--"):
        branches.insert(1, extra[0] if extra else "roadmap-7.7")
        extra = []
    local, remote = all_refs(s.work), all_refs(s.remote)
    result = harn(s.work, "integrate", *branches, "--base", "main", *extra, "--json")
    assert result.code == 2, result.err
    assert message in result.err and result.err.startswith("git harn: error: ")
    assert_error_document(result.out, 2)
    assert (all_refs(s.work), all_refs(s.remote)) == (local, remote)
    assert not (s.tmp / "worktrees").exists()


def test_an_error_mid_batch_keeps_the_reports_so_far(s: Setup) -> None:
    first = make_task(s.work, "1.1", {"one.txt": "1\n"})
    stray = make_task(s.work, "4.4", {"four.txt": "4\n"})  # not in the roadmap
    third = make_task(s.work, "1.3", {"three.txt": "3\n"})
    result = harn(s.work, "integrate", first, stray, third, "--base", "main", "--json")
    assert result.code == 2, result.err
    batch = result.json()
    assert_valid(batch, "integration-batch")
    assert [r["outcome"] for r in batch["reports"]] == ["landed"]
    assert batch["error"]["branch"] == stray and "has no task 4.4" in batch["error"]["message"]
    assert (batch["error"]["exitCode"], batch["notAttempted"]) == (2, [third])
    assert f"git harn: error: {stray}: " in result.err
    assert s.remote_main() == batch["reports"][0]["commit"]


def test_the_batch_schema_rejects_a_malformed_document() -> None:
    from git_harn.schemas import schema_errors

    good = {"schemaVersion": 1, "reports": [], "notAttempted": ["roadmap-1.1"]}
    assert schema_errors(good, "integration-batch") == []
    for bad in ({**good, "schemaVersion": 2}, {**good, "reports": [{"ok": "yes"}]},
                {"schemaVersion": 1, "reports": []}, {**good, "notAttempted": ["refs/heads/x"]},
                {**good, "error": {"branch": "x", "message": "m"}}):
        assert schema_errors(bad, "integration-batch"), bad
