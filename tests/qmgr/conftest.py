"""Fixtures of the queue manager tests: an injected clock (never sleep to see time pass) and
a queue manager on each store engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relaymq.qmgr import QueueManager


class FakeClock:
    """Epoch seconds that move only when a test says so."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def qm(request: pytest.FixtureRequest, tmp_path, clock: FakeClock) -> Iterator[QueueManager]:
    """QM1 on the memory store and on SQLite (NORMAL sync: the tests check behaviour, the
    benchmark checks FULL)."""
    data_dir = None if request.param == "memory" else str(tmp_path)
    manager = QueueManager.open("QM1", data_dir, synchronous="NORMAL", clock=clock)
    yield manager
    manager.close()
