"""Progress of a run: one live line per running task on a terminal (stage,
attempt, elapsed time), plain event lines when piped, nothing with --json."""

from __future__ import annotations

import threading
import time

from git_harn import notices
from git_harn.text import one_line
from git_harn.workflow.model.result import TaskResult
from git_harn.workflow.model.state import State

OFF, LIVE, PLAIN = "off", "live", "plain"


class Progress:
    def __init__(self, quiet: bool) -> None:
        self.mode = OFF if quiet else (LIVE if notices.interactive() else PLAIN)
        self._lock = threading.Lock()
        self._running: dict[str, tuple[str, str, float, float]] = {}  # id -> stage, "attempt 2", since, task start
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.mode == LIVE:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def say(self, text: str) -> None:
        if self.mode == OFF:
            return
        with self._lock:
            if self.mode == LIVE:
                notices.live([])
            notices.info(text)
            self._draw()

    def stage(self, task_id: str, stage: str, count: str) -> None:
        """``count``: "attempt 2" for a writing stage, "round 2" for review."""
        with self._lock:
            began = self._running.get(task_id, ("", "", 0.0, time.monotonic()))[3]
            self._running[task_id] = (stage, count, time.monotonic(), began)
            if self.mode == PLAIN:
                notices.info(f"task {task_id}: {stage} ({count})")
            self._draw()

    def finished(self, task: TaskResult) -> None:
        with self._lock:
            self._running.pop(task.key, None)
        where = f" at {task.stage}" if task.stage and not State.of(task).landed else ""
        # Piped, lines are whole (README); the live display keeps to one screen line.
        detail = f": {one_line(task.detail, 160 if self.mode == LIVE else len(task.detail))}" if task.detail else ""
        self.say(f"task {task.key}: {task.status}{where}{detail}")

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if self.mode == LIVE:
                notices.live([])

    def _draw(self) -> None:
        if self.mode != LIVE:
            return
        now = time.monotonic()
        notices.live([f"  {tid:<12} {stage:<10} {count:<10}  {now - since:5.0f}s  (task {now - began:.0f}s)"
                      for tid, (stage, count, since, began) in self._running.items()])

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                self._draw()
