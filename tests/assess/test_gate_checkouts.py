"""A workflow run keeps its gates' checkout from one task to the next, and
each gate run still sees exactly its tip: nothing a gate left behind (files,
ignored output, index bits, a branch it switched to, a lock of a git it ran)
reaches the next one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.kit.harn import git
from tests.kit.workflow_repo import setup

ROADMAP = "# R\n\n- [ ] 5.1 One\n- [ ] 5.2 Two\n- [ ] 5.3 Three\n"

# The gate: fails when it finds what an earlier gate left, then leaves all of it.
GATE = r'''
import json, os, subprocess, sys
log, leave_lock = sys.argv[1], sys.argv[2] == "lock"
def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout.strip()
tracked = git("ls-files", "-z").split("\0")
found = {
    "cwd": os.getcwd(),
    "head": git("rev-parse", "HEAD"),
    "detached": subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], capture_output=True).returncode != 0,
    "leftovers": sorted(p for p in ("junk.txt", "build/out.o", "nested/.git") if os.path.lexists(p)),
    "missing": sorted(p for p in tracked if p and not os.path.lexists(p)),
    "hidden": sorted(line for line in git("ls-files", "-v").splitlines() if not line.startswith("H ")),
}
with open(log, "a") as f:
    f.write(json.dumps(found) + "\n")
open("junk.txt", "w").write("left by a gate\n")
os.makedirs("build", exist_ok=True)
open("build/out.o", "w").write("ignored output\n")
os.makedirs("nested", exist_ok=True)
subprocess.run(["git", "init", "-q", "nested"], check=True)
git("update-index", "--skip-worktree", "README.md")
os.remove("README.md")
# a branch it switched to, by HEAD alone: a ref it made would be a tamper fault [T2]
git("symbolic-ref", "HEAD", "refs/heads/gate-" + found["head"][:12])
if leave_lock:
    admin = git("rev-parse", "--absolute-git-dir")
    open(os.path.join(admin, "index.lock"), "w").close()
sys.exit(1 if found["leftovers"] or found["missing"] or found["hidden"] or not found["detached"]
         or found["head"] != os.environ["HARN_GATE_COMMIT"] else 0)
'''


def _run_with_gate(tmp_path: Path, mode: str) -> tuple[list[dict[str, object]], dict[str, object], Path]:
    wf = setup(tmp_path, roadmap=ROADMAP, files={".gitignore": "build/\n"})
    gate, log = tmp_path / "gate.py", tmp_path / "gate.log"
    gate.write_text(GATE)
    # the operator's own setting (git -c): a run takes none from the repository's config [T1]
    command = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "harn.gate",
               "GIT_CONFIG_VALUE_0": f"{sys.executable} {gate} {log} {mode}"}
    done = wf.run("--json", env=command)
    doc = done.json()
    assert done.code == 0, [(t["taskId"], t["status"], t["detail"]) for t in doc["tasks"]]
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    return runs, doc, wf.work


def test_one_checkout_serves_every_task_and_each_gate_sees_only_its_tip(tmp_path: Path) -> None:
    runs, doc, work = _run_with_gate(tmp_path, "keep")
    assert [t["status"] for t in doc["tasks"]] == ["done"] * 3
    assert len(runs) == 3 and len({r["cwd"] for r in runs}) == 1  # one checkout, reused
    assert [r["head"] for r in runs] == [t["tip"] for t in doc["tasks"]]
    assert all(not r["leftovers"] and not r["missing"] and not r["hidden"] and r["detached"] for r in runs)
    # making the checkout exact again moved no branch: the one each gate switched to was never made
    assert "gate-" not in git(work, "for-each-ref", "--format=%(refname)", "refs/heads")
    # the run removed its checkout, folder and registration
    assert not Path(str(runs[0]["cwd"])).parent.exists()
    assert "git-harn-gates-" not in git(work, "worktree", "list", "--porcelain")


def test_a_checkout_a_gate_left_unusable_is_replaced(tmp_path: Path) -> None:
    runs, doc, work = _run_with_gate(tmp_path, "lock")
    assert [t["status"] for t in doc["tasks"]] == ["done"] * 3
    assert len({r["cwd"] for r in runs}) == 3  # each locked checkout went; a new one took its place
    assert all(not r["leftovers"] and not r["missing"] for r in runs)
    assert not any(Path(str(r["cwd"])).parent.exists() for r in runs)
    assert "git-harn-gates-" not in git(work, "worktree", "list", "--porcelain")
