"""Connection caps of a listener: at most so many connections in all and per source address,
and the log line of each refusal, rate-limited (issue 15 finding 8: no listener had a cap, so
one source could open connections until memory or descriptors ran out).

Used by the queue manager's channel listener (relaymq.qmgr.channel_transport) on the TCP server
of this package; nothing here is channel-specific, so the HTTP listener can take it as it is.
No sockets here: the listener asks
:meth:`Admission.admit` with the peer's address when it accepts a connection and calls
:meth:`Admission.release` when the connection ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

#: A cap of -1 is no cap.
UNLIMITED = -1


class RefusalLog:
    """One log line per refused connection, but at most ``burst`` lines per ``interval``
    seconds; the refusals left out are counted in the next line that is written, so a flood
    costs a few lines and the log still says how many there were."""

    def __init__(self, log: logging.Logger, *, burst: int = 5, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log, self.burst, self.interval, self.clock = log, burst, interval, clock
        self._window_start = -interval
        self._written = 0
        self.suppressed = 0

    def refused(self, text: str, *args: object) -> bool:
        """Log ``text % args`` as a warning unless the window's lines are used up; True when
        it was written."""
        now = self.clock()
        if now - self._window_start >= self.interval:
            self._window_start, self._written = now, 0
        if self._written >= self.burst:
            self.suppressed += 1
            return False
        self._written += 1
        if self.suppressed:
            text += " (%d more refused connections were not logged)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self.log.warning(text, *args)
        return True


class Admission:
    """Connection counts of one listener, in total and per source address."""

    def __init__(self, max_connections: int = UNLIMITED, max_per_address: int = UNLIMITED) -> None:
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        self.total = 0
        self._by_address: dict[str, int] = {}

    def admit(self, address: str) -> str | None:
        """Count a new connection from ``address``; or, when a cap is reached, do not count it
        and return which cap (for the log line)."""
        if self.max_connections != UNLIMITED and self.total >= self.max_connections:
            return f"the listener's cap of {self.max_connections} connections is reached"
        held = self._by_address.get(address, 0)
        if self.max_per_address != UNLIMITED and held >= self.max_per_address:
            return f"{address} already holds the cap of {self.max_per_address} connections per address"
        self.total += 1
        self._by_address[address] = held + 1
        return None

    def release(self, address: str) -> None:
        """A connection admitted for ``address`` ended."""
        self.total -= 1
        held = self._by_address.get(address, 0) - 1
        if held > 0:
            self._by_address[address] = held
        else:
            self._by_address.pop(address, None)

    def held(self, address: str) -> int:
        return self._by_address.get(address, 0)
