"""How long the storage engine's commits take: a histogram with fixed bucket bounds, filled
by the writer thread after each commit and read at scrape time (relaymq.http.metrics,
issue 18). One commit is one fsync with ``synchronous = FULL``, so this is what an
acknowledgement waiting for durability waits for."""

from __future__ import annotations

from bisect import bisect_left

#: Upper bounds (seconds) of the buckets: from a page-cache commit to a slow disk.
BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class CommitLatency:
    """Counts per bucket (not cumulative; the last one is +Inf), their sum and count. Written by
    one thread; a reader may see a commit in ``counts`` a moment before it is in ``total``."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, commits at or under it), ending with (inf, count): Prometheus' shape."""
        out: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out
