"""Cheap-rate transmission: the seed's transmission rule example (MQ Everyplace 2.0.2,
"A more complex transmit rule example", seed 004 l.5444-5530) as a relaymq queue manager rule.

Messages waiting for another queue manager (async remote and store-and-forward queues) are
held back outside the cheap-rate period, 18:00 to 09:00 by default; during it a background
thread triggers transmission every 15 seconds. The thread is started when the queue manager is
activated and stopped when it closes, as in the seed.

Use it by putting this directory on PYTHONPATH and naming the rule::

    [qmgr]
    rule = "cheap_rate:CheapRateRule"
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from typing import Any

from relaymq.qmgr import QueueManagerRule


class CheapRateRule(QueueManagerRule):
    """Transmit only between ``start_hour`` and ``end_hour`` (local time; wraps midnight)."""

    #: Seconds between triggers during the cheap-rate period (the seed's 15000 ms).
    trigger_interval: float | None = 15.0

    def __init__(self, start_hour: int = 18, end_hour: int = 9,
                 now: Callable[[], datetime.datetime] = datetime.datetime.now) -> None:
        self.start_hour = start_hour
        self.end_hour = end_hour
        self.now = now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def in_cheap_rate(self) -> bool:
        hour = self.now().hour
        if self.start_hour <= self.end_hour:
            return self.start_hour <= hour < self.end_hour
        return hour >= self.start_hour or hour < self.end_hour

    # -- transmission rules ---------------------------------------------------------------
    def trigger_transmission(self, qm: Any, count: int, fields: dict[str, Any]) -> bool:
        return self.in_cheap_rate()

    def transmit(self, qm: Any, definition: Any) -> bool:
        return self.in_cheap_rate()

    # -- the background trigger, started at activate and stopped at close -----------------
    def activate(self, qm: Any) -> None:
        if self.trigger_interval is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(qm,), name="cheap-rate-trigger", daemon=True)
        self._thread.start()

    def _loop(self, qm: Any) -> None:
        while not self._stop.wait(self.trigger_interval):
            if self.in_cheap_rate():
                try:
                    qm.trigger_transmission()
                except Exception:  # a closed queue manager: the close rule stops us next
                    return

    def close(self, qm: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)  # the seed's ten-second wait for the thread
