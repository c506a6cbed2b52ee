"""The in-memory index of one queue: every entry by UID, and the visible (unlocked) ones in
priority-then-arrival order (everyplace.md items 4 and 15).

Visible entries live in ten buckets, one per priority, each a dict in arrival (``seq``) order,
so the next message is the first entry of the highest non-empty bucket: O(1) for the common
put/get, no sorting. An entry that becomes visible again out of order (undo of a get, unlock)
is placed by ``seq`` by rebuilding its bucket, which is rare; a new put's ``seq`` is above
every one its bucket ever showed (``_top``), which one comparison sees.

Entries with an expiry time are also in a heap by deadline, so finding the expired ones (every
depth query removes them first, seed l.370: a metrics scrape asks for every queue's depth)
visits those only, not the whole queue. Entries removed before they expired stay in the heap
until their deadline passes or the heap is rebuilt, which it is once it holds more than twice
the entries it is for.
"""

from __future__ import annotations

from collections.abc import Iterator
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

from relaymq.qmgr.definitions import QueueDefinition
from relaymq.qmgr.rules import QueueRule
from relaymq.qmgr.states import UNLOCKED, Entry

if TYPE_CHECKING:
    from relaymq.qmgr.listeners import Hearers


class QueueIndex:
    """Entries of one queue and the ordered view of the visible ones."""

    __slots__ = ("definition", "entries", "_buckets", "_top", "rule", "pending", "heard", "_deadlines",
                 "_expiring")

    def __init__(self, definition: QueueDefinition, rule: QueueRule | None = None) -> None:
        self.definition = definition
        self.entries: dict[str, Entry] = {}
        self._buckets: list[dict[str, Entry]] = [{} for _ in range(10)]
        #: Per bucket, the highest ``seq`` it ever showed: an entry above it goes last as it is.
        self._top = [0] * 10
        self.rule = rule
        #: Puts submitted in an open unit of work, not yet added (QueueManager.put(wait=False)).
        self.pending = 0
        #: Who hears of a put here (``Listeners``): (its listener generation, the definition it
        #: was found for, the hearers), kept with the queue so that it goes with it.
        self.heard: tuple[int, QueueDefinition, Hearers | None] | None = None
        #: (expiry deadline in ms, seq, uid) of entries that expire, and some removed since.
        self._deadlines: list[tuple[int, int, str]] = []
        #: How many entries in ``entries`` have an expiry time.
        self._expiring = 0

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Entry) -> None:
        if entry.expire_at is not None and entry.uid not in self.entries:
            self._note_deadline(entry)
        self.entries[entry.uid] = entry
        if entry.state == UNLOCKED:
            self.show(entry)

    def remove(self, entry: Entry) -> None:
        if self.entries.pop(entry.uid, None) is not None and entry.expire_at is not None:
            self._expiring -= 1
        self.hide(entry)

    def _note_deadline(self, entry: Entry) -> None:
        assert entry.expire_at is not None
        self._expiring += 1
        deadlines = self._deadlines
        if len(deadlines) > 2 * self._expiring + 64:  # mostly entries long gone: rebuild
            deadlines = self._deadlines = [(e.expire_at, e.seq, e.uid) for e in self.entries.values()
                                           if e.expire_at is not None]
            heapify(deadlines)
        heappush(deadlines, (entry.expire_at, entry.seq, entry.uid))

    def expired(self, now_ms: int) -> list[Entry]:
        """The entries whose expiry time has come (``now_ms`` at or past it), in arrival
        order; they leave the deadline heap, so the caller removes them."""
        deadlines, entries = self._deadlines, self.entries
        found: dict[str, Entry] = {}  # by uid: a uid removed and added again is in it twice
        while deadlines and deadlines[0][0] <= now_ms:
            uid = heappop(deadlines)[2]
            entry = entries.get(uid)
            if entry is not None and entry.expire_at is not None and entry.expire_at <= now_ms:
                found[uid] = entry
        return sorted(found.values(), key=lambda e: e.seq)

    def show(self, entry: Entry) -> None:
        """Make ``entry`` visible (state already UNLOCKED), keeping arrival order."""
        priority, seq = entry.priority, entry.seq
        bucket = self._buckets[priority]
        if seq > self._top[priority]:
            self._top[priority] = seq
            bucket[entry.uid] = entry
        elif bucket and next(reversed(bucket.values())).seq > seq:
            bucket[entry.uid] = entry
            ordered = sorted(bucket.values(), key=lambda e: e.seq)
            bucket.clear()
            bucket.update((e.uid, e) for e in ordered)
        else:
            bucket[entry.uid] = entry

    def hide(self, entry: Entry) -> None:
        self._buckets[entry.priority].pop(entry.uid, None)

    def first(self) -> Entry | None:
        """The first visible entry (the next a get takes), None when none is."""
        for bucket in reversed(self._buckets):
            if bucket:
                return next(iter(bucket.values()))
        return None

    def visible(self) -> Iterator[Entry]:
        """Visible entries, priority descending then arrival (a snapshot: safe to change the
        index while iterating). A bucket's first entry is handed out before its snapshot is
        taken, and the snapshot only when more is asked for (a get takes the first: copying a
        deep queue's bucket for each get made it O(depth))."""
        for bucket in reversed(self._buckets):
            if bucket:
                first = next(iter(bucket.values()))
                yield first
                rest = list(bucket.values())
                # the caller may have removed ``first`` meanwhile (an expired message)
                yield from rest[1:] if rest and rest[0] is first else rest
