"""Log lines anybody on the network can cause, rate-limited (issue 15 finding 8).

A refused connection, or one closed before its CONNECT, costs one log line - but an attacker
makes those as fast as it can connect. Past ``burst`` lines in ``window`` seconds the events
are only counted, and the next line that is written says how many went unlogged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class RefusalLog:
    """At most ``burst`` lines per ``window`` seconds to ``log``; the rest are counted."""

    def __init__(self, log: logging.Logger, burst: int = 10, window: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.burst = burst
        self.window = window
        self.clock = clock
        self._window_start = float("-inf")
        self._lines = 0
        self.suppressed = 0  # refusals not logged since the last line

    def refused(self, message: str, *args: object) -> bool:
        """Log one refusal (``message % args``) unless over the rate; True when logged."""
        now = self.clock()
        if now - self._window_start >= self.window:
            self._window_start = now
            self._lines = 0
        if self._lines >= self.burst:
            self.suppressed += 1
            return False
        self._lines += 1
        if self.suppressed:
            message += " (%d more refused and not logged)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self.log.warning(message, *args)
        return True
