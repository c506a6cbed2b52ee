"""What waits to be written to one real-time client, and the seed's overflow policy. No I/O.

Seed 003 l.2026-2038 (maxBrokerQueueSize): past ``limit`` bytes queued for a client, every
queued message is deleted except the latest, the high-priority ones (JMS priority 5-9) and
the responses (to the client's requests: acknowledgements, PONGs, and publications that carry a
correlation id). ``limit`` 0: no limit. Frames leave in the order they were queued.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: kinds of queued frame
NORMAL, HIGH, RESPONSE = 0, 1, 2


@dataclass
class _Entry:
    data: bytes
    kind: int


class OutQueue:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: deque[_Entry] = deque()
        self.size = 0
        self.dropped = 0
        self.dropped_bytes = 0
        self.overflows = 0

    def push(self, data: bytes, kind: int = NORMAL) -> None:
        self.entries.append(_Entry(data, kind))
        self.size += len(data)
        if self.limit and self.size > self.limit:
            self._overflow()

    def _overflow(self) -> None:
        self.overflows += 1
        latest = self.entries[-1]
        kept: deque[_Entry] = deque()
        for entry in self.entries:
            if entry.kind != NORMAL or entry is latest:
                kept.append(entry)
            else:
                self.dropped += 1
                self.dropped_bytes += len(entry.data)
        self.entries = kept
        self.size = sum(len(entry.data) for entry in kept)

    def take(self, budget: int) -> bytes:
        """Up to ``budget`` bytes of whole frames (at least one frame if any wait)."""
        out: list[bytes] = []
        taken = 0
        while self.entries and (not out or taken + len(self.entries[0].data) <= budget):
            entry = self.entries.popleft()
            out.append(entry.data)
            taken += len(entry.data)
        self.size -= taken
        return b"".join(out)

    def __len__(self) -> int:
        return len(self.entries)
