"""The ranges of message ids kept for a restored backlog's chunks not listed yet
(``MessageRefs.pin``; broker/unlisted.py), and whether any of them covers an id.

Why not a list scanned per question: a restart with many backlogged sessions whose messages
interleave (a fan-out's offline subscribers) pins many overlapping ranges, and every last
release inside their bounds asks, as does every orphan check and every sweep; a scan of every
range per question, and a removal from a list per chunk listed, made the drain quadratic.
Here a range is kept as +1 at its low and -1 past its high in a Fenwick tree over the points
where ranges start and end, so an id is covered when the prefix sum up to it is positive:
O(log n) to ask, to remove a range, and to find the bounds (heaps cleaned lazily). Ranges are
added in a burst at start; the tree is built once asked, and again only if ranges are added
after that.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from heapq import heappop, heappush


class Pins:
    """A multiset of inclusive id ranges (the same range may be pinned more than once)."""

    __slots__ = ("_live", "_lows", "_highs", "_low_heap", "_high_heap", "_points", "_tree", "_built")

    def __init__(self) -> None:
        self._live: Counter[tuple[int, int]] = Counter()
        self._lows: Counter[int] = Counter()  # live ranges by their low, and by their high
        self._highs: Counter[int] = Counter()
        self._low_heap: list[int] = []
        self._high_heap: list[int] = []  # highs negated
        self._points: list[int] = []  # sorted: every live range's low and high + 1
        self._tree: list[int] = [0]  # Fenwick tree over _points, 1-based
        self._built = True

    def __len__(self) -> int:
        return sum(self._live.values())

    def ranges(self) -> list[tuple[int, int]]:
        """The live ranges, each as often as it is pinned, in order."""
        return sorted(self._live.elements())

    def add(self, low: int, high: int) -> None:
        self._live[(low, high)] += 1
        self._lows[low] += 1
        self._highs[high] += 1
        heappush(self._low_heap, low)
        heappush(self._high_heap, -high)
        self._built = False

    def remove(self, low: int, high: int) -> None:
        """One pin of ``low..high`` gone; ValueError if there is none (as ``list.remove``)."""
        count = self._live.get((low, high), 0)
        if not count:
            raise ValueError(f"no pin {low}..{high}")
        self._drop_one(self._live, (low, high))
        self._drop_one(self._lows, low)
        self._drop_one(self._highs, high)
        if self._built:
            self._update(low, -1)
            self._update(high + 1, 1)

    def bounds(self) -> tuple[int, int]:
        """The lowest low and highest high of the live ranges; (1, 0) when there are none."""
        lows, low_heap = self._lows, self._low_heap
        while low_heap and not lows[low_heap[0]]:
            heappop(low_heap)
        highs, high_heap = self._highs, self._high_heap
        while high_heap and not highs[-high_heap[0]]:
            heappop(high_heap)
        if not low_heap:
            return 1, 0
        return low_heap[0], -high_heap[0]

    def covers(self, msg_id: int) -> bool:
        """Is ``msg_id`` in some live range?"""
        if not self._built:
            self._build()
        i = bisect_right(self._points, msg_id)  # points at or below it: their sum
        tree, total = self._tree, 0
        while i:
            total += tree[i]
            i &= i - 1
        return total > 0

    @staticmethod
    def _drop_one(counter: Counter, key: object) -> None:
        if counter[key] <= 1:
            del counter[key]
        else:
            counter[key] -= 1

    def _build(self) -> None:
        self._points = sorted({low for low, _ in self._live} | {high + 1 for _, high in self._live})
        self._tree = [0] * (len(self._points) + 1)
        self._built = True
        for (low, high), count in self._live.items():
            self._update(low, count)
            self._update(high + 1, -count)

    def _update(self, point: int, delta: int) -> None:
        tree = self._tree
        i = bisect_left(self._points, point) + 1  # the point is one of _points
        while i < len(tree):
            tree[i] += delta
            i += i & -i
