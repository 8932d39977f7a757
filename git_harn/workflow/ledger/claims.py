"""Task claims through the remote: several machines, one roadmap, no task
worked twice, and a dead machine's tasks taken over only on purpose.

With ``workflow.claims = true`` (or ``--claims``) a run claims each task on
``<remote>`` before its workspace is made: it creates
``refs/harnery/claims/<task-id>``, a small commit naming the workflow, host,
clone and time, with a push that succeeds only if the ref does not exist
(never forced) [P3]. A lost race means another machine has the task: it is
skipped with reason ``claimed-elsewhere`` and the claimant named. Once the
claim is ours the base is fetched again: a task that another machine landed
meanwhile (it released its claim after landing) is released and skipped as
``done-elsewhere``, so no task lands twice.

While the task runs a heartbeat thread adds a commit to its claim every
``claimHeartbeat`` seconds, pushed with a lease on the value it holds. When
the task ends (done, failed, blocked, halted: every end leaves its branch to
the survivor rules) the claim is deleted with a lease on its exact value, so
a clone never deletes a claim it does not hold. A claim whose heartbeat is
older than ``claimStaleAfter`` is stale: ``git harn workflow claims`` reports
it, and ``--take-over`` replaces it (a commit on top of the stale one, pushed
with a lease on it). The taken-over claim is then this clone's: its task's
surviving branch is held out of normal selection as every survivor is, for
the resume modes; a run here that selects the task adopts the claim.
Addenda are claimed by their own id (``<task-id>-addendum-<n>``).

A claim whose task the base has ticked guards nothing (a runner killed
between its push and its release leaves one): the next run and ``git harn
workflow claims`` drop it, from any clone, with a lease on the value read,
and say so.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from git_harn.clock import epoch_of, now_iso
from git_harn.errors import BadInput, CorruptRecord, GitFailure, HarnError, Refused
from git_harn.git import Oid, Repo, open_repo
from git_harn.git.branches import check_branch_name, check_remote, fetch_branch
from git_harn.git.identity import clone_id, host_name
from git_harn.git.remote import DEFAULT_REMOTE, MOVED_ON, UNREACHABLE, Outcome
from git_harn.results import Result
from git_harn.store import claims as refs
from git_harn.store.clone import this_clone
from git_harn.tasks.branches import DEFAULT_BASE
from git_harn.tasks.config import DEFAULT_CLAIM_STALE_AFTER, settings_at
from git_harn.tasks.roadmap import task_branch, tasks_at, ticked_at, work_key
from git_harn.text import one_line
from git_harn.workflow.model import state
from git_harn.workflow.model.result import Skipped
from git_harn.workflow.model.state import SkipReason

# events of a claim's chain
CLAIM, HEARTBEAT, TAKE_OVER, PROBE = "claim", "heartbeat", "take-over", "probe"
PROBES = "probe/"  # refs/harnery/claims/probe/<workflow-id>: the check that the remote takes claims
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def valid_claim_id(claim_id: str) -> str:
    if not _ID.fullmatch(claim_id) or ".." in claim_id or claim_id.endswith((".lock", ".")):
        raise BadInput(f"invalid task id {claim_id!r}")
    return claim_id


# --- a claim as the remote holds it ------------------------------------------------


@dataclass
class Claim:
    claimId: str
    ref: str
    oid: str
    body: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # not a claim git-harn wrote [P5]

    def text(self, key: str) -> str:
        value = self.body.get(key)
        return one_line(value, 200) if isinstance(value, str) else ""

    def age(self, now: float | None = None) -> float | None:
        beat = epoch_of(self.body.get("heartbeatAt"))
        return None if beat is None else max(0.0, (now or time.time()) - beat)

    def stale(self, after: float, now: float | None = None) -> bool:
        age = self.age(now)
        return age is None or age > after  # an unreadable claim has no heartbeat to trust

    def holder(self) -> str:
        if self.error is not None:
            return f"an unreadable claim ({self.error})"
        who = self.text("workflowId") or "an operator's take-over"
        return f"{who} on host {self.text('host') or '?'} (clone {self.text('clone') or '?'})"

    def shown(self, stale_after: float, mine: str | None) -> dict[str, Any]:
        now = time.time()  # one clock reading, so the age shown is the age judged
        age = self.age(now)
        return {"taskId": self.claimId, "ref": self.ref, "oid": self.oid, "event": self.text("event") or None,
                "workflowId": self.text("workflowId") or None, "host": self.text("host") or None,
                "clone": self.text("clone") or None, "thisClone": bool(mine) and self.text("clone") == mine,
                "claimedAt": self.text("claimedAt") or None, "heartbeatAt": self.text("heartbeatAt") or None,
                "ageSeconds": None if age is None else round(age, 1), "stale": self.stale(stale_after, now),
                "error": self.error}


def _parse(repo: Repo, claim_id: str, ref: str, oid: str) -> Claim:
    try:
        return Claim(claim_id, ref, oid, refs.read_claim(repo, claim_id, oid))
    except (CorruptRecord, GitFailure, ValueError) as exc:
        return Claim(claim_id, ref, oid, {}, one_line(str(exc), 200))


def read_remote(repo: Repo, remote: str, ids: list[str] | None = None) -> list[Claim]:
    """The claims ``remote`` holds (of ``ids``, or all), read from their commits."""
    found = refs.remote_claims(repo, remote, ids or ())
    exact = {refs.claim_ref(i) for i in ids or ()}
    wanted = {name: oid for name, oid in found.items() if not name[len(refs.PREFIX):].startswith(PROBES)
              and (not exact or name in exact)}  # ls-remote matches patterns by their tail
    if wanted:
        refs.fetch_claims(repo, remote, sorted(wanted))
    claims = []
    for name, oid in sorted(wanted.items()):
        claim_id = name[len(refs.PREFIX):]
        if not _ID.fullmatch(claim_id):
            claims.append(Claim(one_line(claim_id, 100), name, oid, {}, "not a task id"))
            continue
        claims.append(_parse(repo, claim_id, name, oid))
    return claims


# --- writing claims ----------------------------------------------------------------


@dataclass
class Me:
    """Who claims: this host, this clone, this run."""

    host: str
    clone: str
    workflow_id: str | None

    @classmethod
    def of(cls, repo: Repo, workflow_id: str | None) -> Me:
        return cls(host_name(repo), this_clone(repo)["id"], workflow_id)


def _commit(repo: Repo, me: Me, claim_id: str, event: str, parent: str | None,
            claimed_at: str | None = None, extra: dict[str, Any] | None = None) -> str:
    now = now_iso()
    body = {"schemaVersion": 1, "claimId": claim_id, "workflowId": me.workflow_id, "host": me.host,
            "clone": me.clone, "pid": os.getpid(), "claimedAt": claimed_at or now, "heartbeatAt": now,
            "event": event, **(extra or {})}
    content = (json.dumps(body, indent=2, sort_keys=True) + "\n").encode()
    more = [("Harnery-Workflow", me.workflow_id or "-"), ("Harnery-Host", me.host), ("Harnery-Clone", me.clone)]
    return refs.make(repo, claim_id, content, event, f"{claim_id} by {me.workflow_id or 'an operator'} on {me.host}",
                     more, parent)


@dataclass
class Held:
    """A claim this run holds, and its heartbeat."""

    claim_id: str
    oid: str
    claimed_at: str
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    lost: str | None = None  # someone else moved it: it is not ours any more
    thread: threading.Thread | None = None


class Claims:
    """The claims of one workflow run: take, heartbeat, release, and what happened."""

    def __init__(self, repo: Repo, remote: str, base: str, workflow_id: str, heartbeat: float) -> None:
        self.repo, self.remote, self.base = repo, remote, base
        self.me = Me.of(repo, workflow_id)
        self.heartbeat = heartbeat
        self.held: dict[str, Held] = {}
        self._lock = threading.Lock()
        self.made: list[str] = []
        self.lost: list[dict[str, Any]] = []
        self.released: list[str] = []
        self.refreshed: dict[str, int] = {}
        self.kept: list[dict[str, str]] = []
        self.dropped: list[dict[str, Any]] = []

    # --- before anything starts ---------------------------------------------------

    def preflight(self) -> None:
        """Create and delete a probe claim: a remote that refuses
        ``refs/harnery/claims/*`` stops the run before anything is made [P7]."""
        ref = refs.claim_ref(PROBES + str(self.me.workflow_id))
        oid = _commit(self.repo, self.me, PROBES + str(self.me.workflow_id), PROBE, None)
        made = refs.push_claim(self.repo, self.remote, ref, oid, None)
        if not made.ok:
            raise Refused(f"{self.remote} refuses the claim refs refs/harnery/claims/*: {made.why}; "
                          "claims need a remote that takes them (or run without claims)")
        gone = refs.push_claim(self.repo, self.remote, ref, None, oid)
        if not gone.ok:
            raise Refused(f"{self.remote} takes claim refs but does not let them be deleted ({gone.why}); "
                          f"claims could never be released (the probe {ref} is left there)")

    def drop_landed(self, base: Oid) -> None:
        """Drop the claims of tasks ``base`` has ticked, whoever left them."""
        self.dropped = drop_landed(self.repo, self.remote, base)[1]

    # --- one task -------------------------------------------------------------------

    def take(self, task_id: str) -> Skipped | None:
        """Claim ``task_id``; None when it is ours, else why it is skipped."""
        try:
            claimed = self._claim(task_id)
        except HarnError as exc:
            return Skipped(task_id, SkipReason.CLAIM_FAILED, one_line(exc.message, 300))
        if isinstance(claimed, Skipped):
            return claimed
        # Another machine may have landed it and released its claim before ours was made.
        try:
            oid = fetch_branch(self.repo, self.remote, self.base)
            landed = ticked_at(self.repo, oid, task_id)
        except HarnError as exc:
            self.release(task_id)
            return Skipped(task_id, SkipReason.CLAIM_FAILED, f"the base could not be read after the claim: "
                           f"{one_line(exc.message, 200)}")
        if landed:
            self.release(task_id)
            return Skipped(task_id, SkipReason.DONE_ELSEWHERE,
                           f"{self.remote}/{self.base} ({str(oid)[:12]}) has it ticked: another machine landed it")
        return None

    def _claim(self, task_id: str) -> Held | Skipped:
        ref = refs.claim_ref(task_id)
        oid = _commit(self.repo, self.me, task_id, CLAIM, None)
        push = refs.push_claim(self.repo, self.remote, ref, oid, None)
        if push.ok:
            return self._hold(task_id, oid, now_iso())
        if push.status != MOVED_ON:
            return Skipped(task_id, SkipReason.CLAIM_FAILED, f"claiming it on {self.remote} failed: {push.why}")
        there = read_remote(self.repo, self.remote, [task_id])
        if not there:  # it was there, and is gone again: try once more on the next selection
            return Skipped(task_id, SkipReason.CLAIMED_ELSEWHERE, f"claimed on {self.remote} by another machine "
                           f"meanwhile ({push.why})")
        claim = there[0]
        if claim.text("clone") == self.me.clone and claim.text("event") == TAKE_OVER:
            return self._adopt(task_id, claim)
        self._note_lost(task_id, claim)
        ours = ("; that is this clone (a run that was killed?): once stale, take it over with "
                f"git harn workflow claims --take-over {task_id}") if claim.text("clone") == self.me.clone else ""
        return Skipped(task_id, SkipReason.CLAIMED_ELSEWHERE, f"claimed by {claim.holder()} at "
                       f"{claim.text('claimedAt') or '?'}, heartbeat {claim.text('heartbeatAt') or '?'}{ours}")

    def _adopt(self, task_id: str, claim: Claim) -> Held | Skipped:
        """This clone took the claim over: this run works the task under it."""
        oid = _commit(self.repo, self.me, task_id, CLAIM, claim.oid, extra={"adopted": claim.oid})
        push = refs.push_claim(self.repo, self.remote, claim.ref, oid, claim.oid)
        if push.ok:
            return self._hold(task_id, oid, now_iso())
        return Skipped(task_id, SkipReason.CLAIMED_ELSEWHERE, f"the claim taken over here moved on {self.remote} "
                       f"({push.why})")

    def _note_lost(self, task_id: str, claim: Claim) -> None:
        with self._lock:
            self.lost.append({"taskId": task_id, "workflowId": claim.text("workflowId") or None,
                              "host": claim.text("host") or None, "clone": claim.text("clone") or None,
                              "heartbeatAt": claim.text("heartbeatAt") or None})

    def _hold(self, task_id: str, oid: str, claimed_at: str) -> Held:
        held = Held(task_id, oid, claimed_at)
        with self._lock:
            self.held[task_id] = held
            self.made.append(task_id)
        held.thread = threading.Thread(target=self._beat, args=(held,), daemon=True,
                                       name=f"harn-claim-{task_id}")
        held.thread.start()
        return held

    def _beat(self, held: Held) -> None:
        repo = open_repo(self.repo.invoked_from)  # a handle of its own in this thread
        ref = refs.claim_ref(held.claim_id)
        while not held.stop.wait(self.heartbeat):
            with held.lock:
                if held.stop.is_set():
                    return
                try:
                    oid = _commit(repo, self.me, held.claim_id, HEARTBEAT, held.oid, held.claimed_at)
                    push = refs.push_claim(repo, self.remote, ref, oid, held.oid)
                except HarnError:
                    continue  # the next beat tries again
                if push.ok:
                    held.oid = oid
                    with self._lock:
                        self.refreshed[held.claim_id] = self.refreshed.get(held.claim_id, 0) + 1
                elif push.status == MOVED_ON:
                    held.lost = f"it moved on {self.remote} (taken over?): {push.why}"
                    return

    def keep(self, task_id: str) -> None:
        """Stop the heartbeat of a claim whose task is proposed and leave the
        claim on the remote: its request is not merged, so no other machine
        takes the task [F1]; the base ticking it, or its request closing,
        lets it go (``drop_landed``, ``release_mine``)."""
        with self._lock:
            held = self.held.pop(task_id, None)
        if held is not None:
            self._stop(held)

    def release(self, task_id: str) -> None:
        """Delete the claim with a lease on the value this run holds; a claim
        that moved is someone else's and stays [P3]."""
        with self._lock:
            held = self.held.pop(task_id, None)
        if held is None:
            return
        self._stop(held)
        reason = held.lost
        if reason is None:
            try:
                gone = refs.push_claim(self.repo, self.remote, refs.claim_ref(task_id), None, held.oid)
            except HarnError as exc:
                gone = Outcome(UNREACHABLE, exc.message)
            if gone.ok:
                with self._lock:
                    self.released.append(task_id)
                return
            reason = (f"it moved on {self.remote}: {gone.why}" if gone.status == MOVED_ON else
                      f"{self.remote} did not delete it: {gone.why}")
        with self._lock:
            self.kept.append({"taskId": task_id, "reason": one_line(reason, 300)})

    def _stop(self, held: Held) -> None:
        held.stop.set()
        with held.lock:  # a heartbeat in flight finishes first
            pass
        if held.thread is not None:
            held.thread.join(timeout=30)

    def close(self) -> None:
        """Stop every heartbeat; claims still held stay on the remote (the
        task was still running when the run stopped): they go stale."""
        with self._lock:
            left = list(self.held.values())
            self.held.clear()
        for held in left:
            self._stop(held)
            with self._lock:
                self.kept.append({"taskId": held.claim_id, "reason": held.lost or
                                  "the task was still running when the workflow stopped; the claim goes stale"})

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"remote": self.remote, "host": self.me.host, "clone": self.me.clone,
                    "made": list(self.made), "lost": [dict(x) for x in self.lost],
                    "released": list(self.released), "refreshed": dict(self.refreshed),
                    "kept": [dict(x) for x in self.kept], "dropped": [dict(x) for x in self.dropped]}


def release_dead_run(repo: Repo, remote: str, workflow_id: str) -> list[str]:
    """Delete the claims a dead run of this clone left on ``remote`` (settling
    it, workflow/after/settle.py), each with a lease on its value: they are this
    clone's and no process works under them, so no take-over is needed. A
    claim that moved since it was read, or another's, stays."""
    mine = clone_id(repo)
    released = []
    for claim in read_remote(repo, remote):
        if claim.error is not None or not mine or claim.text("clone") != mine \
                or claim.text("workflowId") != workflow_id:
            continue
        gone = refs.push_claim(repo, remote, claim.ref, None, claim.oid)
        if gone.ok:
            released.append(claim.claimId)
    return released


def release_mine(repo: Repo, remote: str, claim_id: str) -> bool:
    """Delete this clone's claim of ``claim_id`` on ``remote`` (a proposal of it
    was closed), with a lease on the value read; another's stays."""
    mine = clone_id(repo)
    for claim in read_remote(repo, remote, [claim_id]):
        if claim.error is None and mine and claim.text("clone") == mine:
            return refs.push_claim(repo, remote, claim.ref, None, claim.oid).ok
    return False


def landed_keys(repo: Repo, base: Oid) -> set[str]:
    """The claim ids of the tasks and addenda the roadmap at ``base`` has ticked."""
    ticked = set()
    for task in tasks_at(repo, base) or []:
        if task.done:
            ticked.add(task.id)
        ticked |= {work_key(task.id, a.number) for a in task.addenda if a.done}
    return ticked


def drop_landed(repo: Repo, remote: str, base: Oid, there: list[Claim] | None = None,
                ) -> tuple[list[Claim], list[dict[str, Any]]]:
    """Delete each claim on ``remote`` whose task ``base`` has ticked: it
    guards nothing (its runner died between the push and the release). Any
    clone may: the lease on the value read keeps a claim that moved. Returns
    the claims left and those dropped."""
    ticked = landed_keys(repo, base)
    left, dropped = [], []
    for claim in read_remote(repo, remote) if there is None else there:
        if claim.error is None and claim.claimId in ticked:
            try:
                gone = refs.push_claim(repo, remote, claim.ref, None, claim.oid)
            except HarnError:
                gone = Outcome(UNREACHABLE, "")
            if gone.ok:
                dropped.append({"taskId": claim.claimId, "oid": claim.oid, "holder": claim.holder()})
                continue
        left.append(claim)
    return left, dropped


def claimed_elsewhere(repo: Repo, remote: str, task_ids: list[str]) -> list[Skipped]:
    """For a dry run: which of ``task_ids`` the remote holds claims on (read only)."""
    claims = {c.claimId: c for c in read_remote(repo, remote)}
    return [Skipped(t, SkipReason.CLAIMED_ELSEWHERE, f"claimed by {claims[t].holder()}")
            for t in task_ids if t in claims]


# --- git harn workflow claims ----------------------------------------------------


@dataclass
class ClaimsResult(Result):
    SCHEMA: ClassVar[str] = "workflow-claims"

    remote: str
    staleAfter: float
    claims: list[dict[str, Any]] = field(default_factory=list)
    takenOver: dict[str, Any] | None = None
    released: dict[str, Any] | None = None
    dropped: list[dict[str, Any]] = field(default_factory=list)  # claims of landed tasks, deleted now

    @property
    def outcome(self) -> str:
        return "ok"


@dataclass(frozen=True)
class ClaimSettings:
    """Where a run's claims live and when one goes stale (``workflow claims``)."""

    remote: str
    stale_after: float
    base: Oid | None = None  # the base as fetched now (None: no such branch)


def claim_settings(repo: Repo, remote: str | None, base: str | None, stale_after: float | None) -> ClaimSettings:
    """The remote and ``claimStaleAfter``: flags over ``.harn/workflow.toml`` at
    the base (when it has one) over the defaults."""
    if stale_after is not None and not stale_after > 0:
        raise BadInput("--stale-after must be a positive number of seconds")
    name = remote or DEFAULT_REMOTE
    check_remote(repo, name)
    branch = check_branch_name(base or repo.config("harn.base") or DEFAULT_BASE, "--base")
    tip: Oid | None = None
    try:
        tip = fetch_branch(repo, name, branch)
        settings = settings_at(repo, tip, f"{name}/{branch}")
    except BadInput:
        if base is not None:
            raise
        settings = None  # no such base: the defaults
    if settings is not None and remote is None and settings.remote and settings.remote != name:
        name = settings.remote
        check_remote(repo, name)
    configured = settings.claimStaleAfter if settings is not None else None
    return ClaimSettings(name, stale_after or configured or DEFAULT_CLAIM_STALE_AFTER, tip)


def list_claims(repo: Repo, remote: str, stale_after: float, base: Oid | None = None) -> ClaimsResult:
    """The claims ``remote`` holds; with ``base``, those of tasks it has
    ticked are dropped first (and listed as dropped)."""
    check_remote(repo, remote)
    mine = clone_id(repo)
    there = read_remote(repo, remote)
    dropped: list[dict[str, Any]] = []
    if base is not None:
        there, dropped = drop_landed(repo, remote, base, there)
    return ClaimsResult(remote, stale_after, [c.shown(stale_after, mine) for c in there], dropped=dropped)


def _claim_on(repo: Repo, remote: str, task_id: str) -> Claim:
    """The claim ``remote`` holds on ``task_id``; BadInput when there is none."""
    check_remote(repo, remote)
    valid_claim_id(task_id)
    there = read_remote(repo, remote, [task_id])
    if not there:
        raise BadInput(f"{remote} holds no claim on task {task_id}")
    return there[0]


def take_over(repo: Repo, remote: str, task_id: str, stale_after: float,
              confirm: Callable[[Claim], bool]) -> ClaimsResult:
    """Replace a stale claim with this clone's, with a lease on the stale value."""
    claim = _claim_on(repo, remote, task_id)
    if not claim.stale(stale_after):
        raise Refused(f"the claim on task {task_id} by {claim.holder()} is live (heartbeat "
                      f"{claim.age() or 0:.0f}s ago, stale after {stale_after:g}s); not taken over")
    if not confirm(claim):
        raise BadInput(f"take-over of task {task_id} not confirmed (add --yes); nothing was changed")
    me = Me.of(repo, None)
    oid = _commit(repo, me, task_id, TAKE_OVER, claim.oid,
                  extra={"takenOverFrom": {"oid": claim.oid, "workflowId": claim.text("workflowId") or None,
                                           "host": claim.text("host") or None,
                                           "clone": claim.text("clone") or None,
                                           "heartbeatAt": claim.text("heartbeatAt") or None}})
    push = refs.push_claim(repo, remote, claim.ref, oid, claim.oid)
    if not push.ok:
        raise Refused(f"the claim on task {task_id} changed on {remote} meanwhile ({push.why}); "
                      "not taken over: list the claims again")
    branch = task_branch(task_id)
    survivor = repo.ref_oid(f"refs/heads/{branch}")
    result = list_claims(repo, remote, stale_after)
    resume = state.Where(remote, "", ("--remote", remote)).workflow_run(*state.RESUME_FLAGS)
    result.takenOver = {
        "taskId": task_id, "oid": oid, "from": claim.shown(stale_after, me.clone), "branch": branch,
        "survivor": str(survivor) if survivor is not None else None,
        "next": (f"{branch} survives here at {str(survivor)[:12]}: it is held out of normal selection; resume "
                 f"it: {resume} (or assess it first: "
                 f"git harn assess {branch} --task {task_id})")
        if survivor is not None else
        (f"no {branch} in this clone: its work was on the dead machine; the next run here that selects "
         f"task {task_id} starts it afresh under this claim"),
    }
    return result


def release_claim(repo: Repo, remote: str, task_id: str, stale_after: float,
                  confirm: Callable[[Claim], bool]) -> ClaimsResult:
    """Delete a claim this clone holds (a take-over whose branch the operator
    settled), with a lease on its exact value; another clone's claim is refused."""
    claim = _claim_on(repo, remote, task_id)
    mine = clone_id(repo)
    if claim.error is not None or not mine or claim.text("clone") != mine:
        raise Refused(f"the claim on task {task_id} is held by {claim.holder()}, not by this clone; "
                      "only the clone that holds a claim releases it (take it over first if that machine is dead)")
    if claim.text("workflowId") and not claim.stale(stale_after):
        raise Refused(f"the claim on task {task_id} is held by a running workflow of this clone "
                      f"({claim.text('workflowId')}); it releases it when the task ends")
    if not confirm(claim):
        raise BadInput(f"release of the claim on task {task_id} not confirmed (add --yes); nothing was changed")
    gone = refs.push_claim(repo, remote, claim.ref, None, claim.oid)
    if not gone.ok:
        raise Refused(f"the claim on task {task_id} changed on {remote} meanwhile ({gone.why}); not released")
    result = list_claims(repo, remote, stale_after)
    result.released = {"taskId": task_id, "oid": claim.oid}
    return result
