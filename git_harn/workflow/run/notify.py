"""Notifications: the operator's command, told when a run needs a person.

``harn.notify`` (an argv, shell-quoted, in the operator's own git config:
system, global or ``git -c``, never the repository's, which an agent can
write [T1]) or ``--notify`` on the command line names the notifier. It is
run with one JSON event on its stdin (``schemas/workflow-event.schema.json``)
when:

- ``run-finished``: the run finished without a halt;
- ``run-halted``: it halted; ``reason`` auth (an auth fault or a failed
  auth preflight), provider (a provider's limit, with ``resetAt``), tamper,
  budget, needs-operator-recovery, interrupted, or halted (the roadmap on
  the base could not be read again);
- ``task-needs-person``: a task ended needing a person; ``reason``
  manual-merge-ready, proposed, refused, failed-after-review or
  continue-manual (its assessment);
- ``spending-limit``: the run's spending limit was reached (as it happens;
  the run's halt follows when it ends);
- ``run-waiting``: the run waits for a provider's reset (``resetAt``,
  ``--wait-for-provider``), then goes on.

Each event names the run, the task (if any), what happened in one line,
and the one next step the run prints (``next``). Each is delivered by a
process of its own (``deliver``) that the run starts and never waits for:
the notifier gets ``harn.notifyTimeout`` seconds (30), a scrubbed
environment (``NOTIFY_ENV``: no secret, no git variable), no terminal, and
whatever becomes of it is one line in ``notify.log`` in the run's folder.
It never delays or fails the run.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from git_harn.clock import iso_of, now_iso
from git_harn.errors import BadInput
from git_harn.files import atomic_write, private_dir
from git_harn.git import Repo
from git_harn.notices import warn
from git_harn.proc import forget, spawn
from git_harn.tasks.config import Stage
from git_harn.text import one_line
from git_harn.workflow.agents.spend import Meter
from git_harn.workflow.ledger import record
from git_harn.workflow.model.result import TaskResult, WorkflowResult
from git_harn.workflow.model.state import State
from git_harn.workflow.run.breakers import Breakers

DEFAULT_TIMEOUT = 30.0
WORDS_LIMIT = 1000  # characters of an event's what
DELIVER = Path(__file__).with_name("deliver.py")  # run as a script: the standard library only
LOG = "notify.log"
# What a notifier may see of the run's environment: where it is, who, the
# language, the desktop's session bus (notify-send) and the proxies (curl).
NOTIFY_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "DISPLAY",
              "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
              "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


def notify_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in NOTIFY_ENV or k.startswith("LC_")}


def notifier_argv(repo: Repo, given: str | None) -> list[str] | None:
    """``--notify`` (given), else ``harn.notify`` from the operator's own
    scopes [T1]; an empty value: none. BadInput for a value that is no argv."""
    text, where = (given, "--notify") if given is not None else (repo.operator_config("harn.notify"), "harn.notify")
    if text is None or not text.strip():
        return None
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise BadInput(f"{where}: {text!r} is not a command line ({exc})") from None
    return argv


def notify_timeout(repo: Repo) -> float:
    value = repo.operator_config("harn.notifyTimeout")
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise BadInput(f"harn.notifyTimeout: {value!r} is not a positive number of seconds")
    return seconds


# --- the events: one function each decides what a person is told -----------------------


def needs_person(tr: TaskResult) -> str | None:
    """Why a task that ended needs a person, or None."""
    now = State.of(tr)
    if now is State.MANUAL_MERGE_READY:
        return "manual-merge-ready"
    if now is State.PROPOSED:
        return "proposed"
    if now is State.REFUSED:
        return "refused"
    if now is State.FAILED and tr.stage == Stage.REVIEW:
        return "failed-after-review"
    if (tr.assessment or {}).get("classification") == "continue-manual":
        return "continue-manual"
    return None


def halt_reason(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """Why a run halted (None: it did not), and the provider's reset time."""
    breakers = doc.get("breakers") or {}
    if breakers.get("tamper"):
        return "tamper", None
    if doc.get("blocked") or breakers.get("auth"):
        return "auth", None
    if (breakers.get("spending") or {}).get("reached") and doc.get("halted"):
        return "budget", None  # reached by the last stage a run wanted, the limit halted nothing
    if breakers.get("gaveUp"):
        until = [lim["until"] for lim in breakers.get("providerLimits") or [] if lim["agent"] == breakers["gaveUp"]]
        return "provider", (max(until) if until else None)
    if (doc.get("recovery") or {}).get("unresolved"):
        return "needs-operator-recovery", None
    if doc.get("interrupted"):
        return "interrupted", None
    return ("halted", None) if doc.get("halted") else (None, None)


def _next_of(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The one next step the run printed: its own, else the first a task or survivor has."""
    if (doc.get("next") or {}).get("command"):
        return dict(doc["next"])
    steps = [t.get("next") for t in doc.get("tasks") or []]
    steps += [u.get("next") for u in (doc.get("recovery") or {}).get("unresolved") or []]
    return next((dict(s) for s in steps if s and s.get("command")), None)


def _printable(text: str) -> str:
    """Text for a notifier, which may print it to a terminal: it may carry
    what agents said (a task's detail), so every character that is not
    printable (an escape sequence's, a line's end) is a space [T1]."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def _event(doc: dict[str, Any], kind: str, reason: str | None, what: str, **more: Any) -> dict[str, Any]:
    event = {"schemaVersion": 1, "event": kind, "reason": reason, "workflowId": doc["workflowId"],
             "remote": doc["remote"], "base": doc["base"], "taskId": None, "branch": None, "at": now_iso(),
             "what": one_line(_printable(what), WORDS_LIMIT), "next": None, "resetAt": None, "spentUsd": None,
             "limitUsd": None, "outcome": None}
    event.update(more)
    if isinstance(event["next"], dict):
        # a next step's command is kept whole (it is run as printed), made printable like its why
        event["next"] = {k: _printable(v) if isinstance(v, str) else v for k, v in event["next"].items()}
    return event


def run_event(doc: dict[str, Any]) -> dict[str, Any]:
    reason, reset = halt_reason(doc)
    spending = (doc.get("breakers") or {}).get("spending") or {}
    what = doc.get("halted") or doc.get("summary") or ""
    return _event(doc, "run-halted" if reason else "run-finished", reason, what, next=_next_of(doc),
                  resetAt=reset, outcome=doc.get("outcome"), spentUsd=spending.get("spentUsd"),
                  limitUsd=spending.get("limitUsd"))


def task_event(doc: dict[str, Any], tr: TaskResult) -> dict[str, Any] | None:
    reason = needs_person(tr)
    if reason is None:
        return None
    return _event(doc, "task-needs-person", reason, f"task {tr.key} {reason} at {tr.stage}: {tr.detail}",
                  taskId=tr.key, branch=tr.branch, next=dict(tr.next) if tr.next else None)


def spending_event(doc: dict[str, Any], meter: Meter) -> dict[str, Any]:
    crossing = meter.crossing or {}
    return _event(doc, "spending-limit", "budget",
                  f"spending limit ${meter.limit or 0:.2f} reached: ${meter.spent:.2f} spent (at "
                  f"{crossing.get('stage')} of task {crossing.get('taskId')}); no agent stage starts from now on",
                  taskId=crossing.get("taskId"), spentUsd=meter.spent, limitUsd=meter.limit)


def waiting_event(doc: dict[str, Any], agent: str, until: str, task: str) -> dict[str, Any]:
    return _event(doc, "run-waiting", "provider",
                  f"the provider of {agent} is limited (a provider fault of task {task}): no task using it starts "
                  f"until {until}, then the run goes on",
                  next={"command": None, "why": f"nothing: the run goes on after {until} (Ctrl-C stops it)"},
                  resetAt=until)


# --- delivery -------------------------------------------------------------------------


def _reap(child: subprocess.Popen[bytes]) -> None:
    """Wait for a delivery in the background (no zombie), then forget its pid."""
    with suppress(OSError):
        child.wait()
    forget(child.pid)


class Notifier:
    """One run's notifier; ``send`` returns at once, from any thread."""

    def __init__(self, argv: list[str], timeout: float) -> None:
        self.argv, self.timeout = argv, timeout
        self.folder: Path | None = None
        self._sent = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, repo: Repo, given: str | None) -> Notifier | None:
        argv = notifier_argv(repo, given)
        return cls(argv, notify_timeout(repo)) if argv is not None else None

    def bind(self, repo: Repo, workflow_id: str) -> None:
        self.folder = record.run_folder(repo, workflow_id)

    def send(self, event: dict[str, Any]) -> None:
        """Start the delivery of ``event``; a failure to start it is a line in the log and on stderr."""
        if self.folder is None:
            return
        with self._lock:
            self._sent += 1
            number = self._sent
        try:
            private_dir(self.folder.parent)
            folder = private_dir(self.folder / "notify")
            name = f"{number:03d}-{event['event']}.json"
            data = json.dumps(event, ensure_ascii=False).encode() + b"\n"
            atomic_write(folder / name, data)  # what was sent, for the operator; never read back
            # the notifier reads the event from a file with no name, which only this process wrote: the
            # run folder is in the shared git dir, where a stage agent could swap a named one [T1]
            with tempfile.TemporaryFile() as stdin:
                stdin.write(data)
                stdin.seek(0)
                # the host's own child, or the run's sweep of adopted daemons would end it (proc.end_adopted)
                child = spawn([sys.executable, "-I", str(DELIVER), str(self.timeout), str(self.folder / LOG),
                               name, *self.argv],
                              stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=notify_env(), start_new_session=True, close_fds=True)
        except OSError as exc:  # never the run's trouble: said, and the run goes on
            warn(f"notification {event['event']} not sent: {exc.strerror or exc}")
            return
        threading.Thread(target=_reap, args=(child,), name="harn-notify", daemon=True).start()

    # the run's hooks: each makes its event and starts its delivery, and never raises into the run

    def _tell(self, make: Callable[[], dict[str, Any] | None]) -> None:
        try:
            event = make()
            if event is not None:
                self.send(event)
        except Exception as exc:  # a notification is never the run's trouble  # noqa: BLE001
            warn(f"notification not sent: {type(exc).__name__}: {exc}")

    def run_ended(self, result: WorkflowResult) -> None:
        self._tell(lambda: run_event(result.document()))

    def task_ended(self, result: WorkflowResult, tr: TaskResult) -> None:
        self._tell(lambda: task_event(_names(result), tr))

    def watch(self, breakers: Breakers, result: WorkflowResult) -> None:
        """Told when the run starts waiting for a provider, and when its
        spending limit is reached (beside what the meter already does then,
        from the thread of the task whose stage reached it)."""
        names = _names(result)
        breakers.on_wait = lambda limit: self._tell(
            lambda: waiting_event(names, limit.agent, iso_of(limit.until), limit.taskId))
        meter = breakers.meter
        if meter is None or meter.limit is None:
            return
        before: Callable[[], None] | None = meter.on_reached

        def reached() -> None:
            if before is not None:
                before()
            self._tell(lambda: spending_event(names, meter))
        meter.on_reached = reached


def _names(result: WorkflowResult) -> dict[str, Any]:
    """What an event needs of the run: read once, never while another thread changes the result."""
    return {"workflowId": result.workflowId, "remote": result.remote, "base": result.base}
