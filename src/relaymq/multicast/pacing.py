"""The transmission rate limit (seed 003 l.737-795). No I/O.

``Disabled``: as fast as the socket takes them. ``Static``: at most ``trans_rate_limit_kbps``
kilobits a second (a token bucket holding one control interval's worth, so a burst after a
quiet spell is not all delayed). ``Dynamic``: the limit is the ceiling; each batch of NAKs (data
lost somewhere) halves the rate, down to the seed's minimum of 10 kbps, and every control
interval without one it climbs back by a tenth of the ceiling.
"""

from __future__ import annotations

#: The lowest rate the seed allows (l.789).
FLOOR_KBPS = 10


class Pacer:
    def __init__(self, mode: str, limit_kbps: int, burst_seconds: float) -> None:
        self.mode = mode
        self.ceiling = limit_kbps * 1000 / 8  # bytes a second
        self.rate = self.ceiling
        self.burst_seconds = burst_seconds
        self.tokens = self.ceiling * burst_seconds
        self.stamp: float | None = None

    @property
    def active(self) -> bool:
        return self.mode != "Disabled"

    def _refill(self, now: float) -> None:
        if self.stamp is not None:
            self.tokens = min(self.rate * self.burst_seconds, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self, now: float, size: int) -> float:
        """Seconds to wait before ``size`` bytes may go (0: now, and they are counted)."""
        if not self.active:
            return 0.0
        self._refill(now)
        if self.tokens >= size or self.tokens >= self.rate * self.burst_seconds:
            self.tokens -= size
            return 0.0
        return (size - self.tokens) / self.rate

    def losses_reported(self) -> None:
        if self.mode == "Dynamic":
            self.rate = max(FLOOR_KBPS * 1000 / 8, self.rate / 2)

    def interval_passed(self) -> None:
        if self.mode == "Dynamic":
            self.rate = min(self.ceiling, self.rate + self.ceiling / 10)
