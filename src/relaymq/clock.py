"""Injected time: keep-alive, expiry, retries and statistics read a clock, never time.* directly,
so tests can move time without sleeping."""

from __future__ import annotations

import time


class Clock:
    """Real time. ``monotonic()`` for intervals, ``wall()`` for timestamps that are stored."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


class ManualClock(Clock):
    """A clock that moves only when told to (for tests and simulations)."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._now = start

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
