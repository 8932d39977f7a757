"""Whether a run's pinned settings are in flight (``git.pins``), held apart
from the module that reads them: ``Repo.config`` asks on every read, and a
command that starts no run (``status``) need not load the pins' reader for
that (issue 45: start-up)."""

from __future__ import annotations

# Set and cleared by ``pins.pinned`` alone, with the pins themselves.
_IN_FLIGHT: list[bool] = []


def set_in_flight(flag: bool) -> None:
    _IN_FLIGHT[:] = [True] if flag else []


def run_in_flight() -> bool:
    """True while ``pins.pinned`` holds a run's settings (``active_pins()`` is not None)."""
    return bool(_IN_FLIGHT)
