"""What people read of a run (issue 21, Deliver 10): DETAIL whole when piped
and wrapped to the terminal, never cut; the next step whole; which
workspaces cleanup released and which it kept."""

from __future__ import annotations

import re
from pathlib import Path

from git_harn.commands.render import wrapped_table
from git_harn.text import with_article
from tests.kit.fault_repo import fault_setup, faults
from tests.kit.harn import harn

TWO = "# Roadmap\n\n- [ ] 21.1 One thing\n- [ ] 21.2 Another thing\n"


def test_piped_output_keeps_the_whole_detail_and_the_whole_next_step(tmp_path: Path) -> None:
    # failed before: DETAIL was cut at about 100 characters, which is where the advice was lost
    wf = fault_setup(tmp_path, TWO, workflow="stageTimeout = 30\nreviewRounds = 1\n")
    faults(wf, {"21.2:implement": "exit75"})
    done = wf.run()
    assert done.code == 3
    doc = harn(wf.work, "workflow", "show", "--json").json()
    task = next(t for t in doc["tasks"] if t["taskId"] == "21.2")
    assert len(task["detail"]) > 100
    row = next(line for line in done.out.splitlines() if line.startswith("21.2 "))
    assert row.endswith(task["detail"])  # one line, whole
    assert f"next for roadmap-21.2: {task['next']['command']}" in done.out.splitlines()
    shown = harn(wf.work, "workflow", "show").out
    assert "workspaces released: 21.1" in shown
    assert re.search(r"^workspace of roadmap-21\.2 preserved_unmerged: unmerged workspace was preserved", shown,
                     re.MULTILINE), shown


def test_the_detail_column_wraps_to_the_width_and_loses_no_word() -> None:
    detail = " ".join(f"word{n}" for n in range(60))
    text = wrapped_table(["TASK", "STATUS", "DETAIL"], [["1.1", "failed", detail], ["1.2", "done", "short"]], 60)
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    indent = lines[0].index("DETAIL")
    assert lines[1].startswith("1.1") and lines[2].startswith(" " * indent + "word")
    words = " ".join(line[indent:] for line in lines if not line.startswith(("TASK", "1.2"))).split()
    assert words == detail.split()
    assert wrapped_table(["A", "B"], [["x", detail]], None) == f"A  B\nx  {detail}"  # piped: whole lines


def test_articles_follow_the_sound() -> None:
    assert [with_article(f"{w} fault") for w in ("auth", "infra", "provider")] == [
        "an auth fault", "an infra fault", "a provider fault"]


def _on_a_terminal(cwd: Path, argv: list[str], columns: int) -> str:
    """Run ``argv`` with its stdout on a pseudo-terminal ``columns`` wide; what it printed."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(argv, cwd=cwd, stdout=follower, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_on_a_terminal_the_detail_wraps_to_its_width(tmp_path: Path) -> None:
    wf = fault_setup(tmp_path, TWO, workflow="stageTimeout = 30\nreviewRounds = 1\n")
    faults(wf, {"21.2:implement": "exit75"})
    assert wf.run().code == 3
    detail = next(t for t in harn(wf.work, "workflow", "show", "--json").json()["tasks"]
                  if t["taskId"] == "21.2")["detail"]
    out = _on_a_terminal(wf.work, ["git", "harn", "workflow", "show"], 80)
    lines = out.splitlines()
    start = next(line for line in lines if line.startswith("TASK")).index("DETAIL")
    at = next(i for i, line in enumerate(lines) if line.startswith("21.2 "))
    wrapped = [lines[at]]
    for line in lines[at + 1:]:
        if line[:start].strip():  # the next row, or what follows the table
            break
        wrapped.append(line)
    assert len(wrapped) > 1 and all(len(line) <= 80 for line in wrapped), wrapped
    assert " ".join(line[start:].strip() for line in wrapped).split() == detail.split()


def test_a_fault_report_of_class_auth_reads_an_auth_fault(tmp_path: Path) -> None:
    # failed before: "the plan agent reported a auth fault"
    wf = fault_setup(tmp_path, TWO, workflow="stageTimeout = 30\nreviewRounds = 1\n")
    faults(wf, {"21.1:plan": "fault-auth", "21.2:plan": "fault-infra"})
    # both at once: after an auth fault the circuit breaker starts no further task (issue 21)
    doc = wf.run("--json", "--stage-attempts", "1", "--parallel", "2").json()
    details = {t["taskId"]: t["detail"] for t in doc["tasks"]}
    assert "the plan agent reported an auth fault: HTTP 401: token expired" in details["21.1"]
    assert "the plan agent reported an infra fault" in details["21.2"]
    shown = harn(wf.work, "workflow", "show").out
    assert "reported an auth fault" in shown and " a auth" not in shown and " a infra" not in shown
