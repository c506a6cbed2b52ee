"""Who gets a socket: the connection caps of one listener, in total and per source address,
and the log of those refused (issue 15 finding 8: neither the MQTT nor the HTTP listener had a
cap, so one address could take every socket and every byte of memory the broker had).

A refused connection is closed at once, before a byte is read from it, and costs one log
line; the lines are rate-limited (``RefusalLog``), so a flood of refused connections cannot
flood the log either (relaymq.ratelog).

No I/O here: the listener asks ``admit(address)`` when a socket is accepted and calls
``release(address)`` when it is gone.
"""

from __future__ import annotations

import sys

from relaymq.ratelog import RefusalLog

#: The value of a cap that means "no cap".
UNLIMITED = -1


class Admission:
    """The caps of one listener (``what`` names it in log lines): ``max_connections`` open
    sockets in all and ``max_per_address`` from one source address; ``UNLIMITED`` for none."""

    def __init__(self, what: str, max_connections: int, max_per_address: int,
                 refusals: RefusalLog) -> None:
        self.what = what
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        self.refusals = refusals
        self.open = 0
        self.by_address: dict[str, int] = {}
        self.refused_total = 0

    def admit(self, address: str) -> bool:
        """Count a new socket from ``address`` and say True, or log the refusal and say False."""
        if self.max_connections != UNLIMITED and self.open >= self.max_connections:
            self._refuse(address, f"max_connections ({self.max_connections}) reached")
            return False
        count = self.by_address.get(address, 0)
        if self.max_per_address != UNLIMITED and count >= self.max_per_address:
            self._refuse(address, f"max_connections_per_address ({self.max_per_address}) reached "
                                  f"for {address}")
            return False
        self.open += 1
        self.by_address[address] = count + 1
        return True

    def release(self, address: str) -> None:
        """A socket ``admit`` counted is gone."""
        self.open -= 1
        count = self.by_address.get(address, 0) - 1
        if count > 0:
            self.by_address[address] = count
        else:
            self.by_address.pop(address, None)

    def _refuse(self, address: str, why: str) -> None:
        self.refused_total += 1
        self.refusals.refused("%s: refusing a connection from %s: %s", self.what, address, why)


def peer_host(peer: object) -> str:
    """The host part of a socket's peer address (``"?"`` when there is none, a Unix socket)."""
    if isinstance(peer, (tuple, list)) and peer:
        # One string per address, however many sockets come from it: a listener keeps each
        # socket's address as long as the socket lives (bench/compare row 6: 58 B a connection).
        return sys.intern(str(peer[0]))
    return "?"
