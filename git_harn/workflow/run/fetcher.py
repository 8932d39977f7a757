"""The base fetches of one run: the commit new tasks start from [T4], and
the fetch that refills the queue after each landing.

Each fetch runs in a thread of its own so that neither the loop nor a
task's cleanup waits for the network; a task that lands starts one from its
own thread, beside its cleanup, and the loop takes it when it collects that
task. Fetches are numbered (their generation) in the order they finish, and
the queue is refilled only from a fetch newer than the one it was last
refilled from: with several tasks landing, never from an older view of the
base.

Thread safety, by construction: every field has one owner.

- ``_fetching`` (a lock) is held for a whole fetch and owns the repository
  handle the fetches use (libgit2's handles are not shared by threads) and
  the generation count, so numbering follows the order fetches finish.
- ``_landed`` (a queue) carries what a task's thread started to the loop's
  thread; no other field is shared with a task's thread.
- ``_started``, ``_newest`` and ``base`` belong to the loop's thread (the
  one that runs the scheduler) and are never touched by any other.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from typing import NamedTuple

from git_harn.git import Oid, Repo
from git_harn.git.branches import fetch_branch


class Fetched(NamedTuple):
    generation: int  # 1 for the first fetch to finish, 2 for the next...
    oid: Oid


class BaseFetcher:
    """Fetches ``<remote>/<base>`` aside, one at a time, for one run."""

    def __init__(self, repo: Repo, remote: str, base: str, start: Oid) -> None:
        self._repo, self._remote, self._base = repo, remote, base
        self._fetching = threading.Lock()
        self._handle: Repo | None = None  # under _fetching
        self._count = 0  # under _fetching: fetches finished
        self._landed: queue.SimpleQueue[tuple[str, Future[Fetched]]] = queue.SimpleQueue()
        self._started: dict[str, Future[Fetched]] = {}  # the loop's: run id -> its landing's fetch
        self._newest = 0  # the loop's: the generation the queue was last refilled from
        # The base new tasks start from: the commit this run fetched (at its
        # start, then after each landing), never the tracking ref, which any
        # agent can move [T4]. The loop's.
        self.base: Oid = start

    def fetch(self) -> Future[Fetched]:
        """A fetch started now in a thread of its own; its error, if any,
        is raised by ``result()``, as if the caller had fetched itself.
        RuntimeError when no thread can be started."""
        fetched: Future[Fetched] = Future()
        threading.Thread(target=self._fetch, args=(fetched,), name="harn-fetch", daemon=True).start()
        return fetched

    def _fetch(self, fetched: Future[Fetched]) -> None:
        try:
            with self._fetching:
                if self._handle is None:
                    self._handle = self._repo.reopen()
                oid = fetch_branch(self._handle, self._remote, self._base)
                self._count += 1
                fetched.set_result(Fetched(self._count, oid))
        except BaseException as exc:  # handed to the caller
            fetched.set_exception(exc)

    def landed(self, run_id: str) -> None:
        """From a task's thread, as the task lands: the fetch that refills the
        queue starts now, beside its cleanup. Never in the cleanup's way: with
        no thread to be had, the loop fetches when it collects the task."""
        with suppress(RuntimeError):
            self._landed.put((run_id, self.fetch()))

    def on_landed(self, run_id: str, stopping: Callable[[], bool]) -> Callable[[], None]:
        """What a task calls, from its own thread, once it has landed (``landed``),
        unless the run is stopping: nothing more starts, no fetch to leave behind."""
        def landed() -> None:
            if not stopping():
                self.landed(run_id)
        return landed

    def after(self, run_id: str) -> Future[Fetched]:
        """The loop's: the fetch the task ``run_id`` started as it landed, or
        one started now when it started none."""
        while True:
            try:
                landed, fetched = self._landed.get_nowait()
            except queue.Empty:
                break
            self._started[landed] = fetched
        return self._started.pop(run_id, None) or self.fetch()

    def newer(self, fetched: Fetched) -> bool:
        """The loop's: whether ``fetched`` saw the base later than the fetch the
        queue was last refilled from; if so it becomes that fetch, and its
        commit the base new tasks start from."""
        if fetched.generation <= self._newest:  # a fetch that finished earlier saw nothing a later one missed
            return False
        self._newest = fetched.generation
        self.base = fetched.oid
        return True
