"""The operations submitted to the storage engine since its writer last took a batch, and what
of them may be coalesced (:mod:`relaymq.store.engine`, "How a write travels").

Its own module, compiled with the broker's per-message path (``relaymq.native_build``): every
durable message puts and deletes its rows through it, under the engine's lock, on the event
loop's thread (issue 16, bench/compare rows 3 and 5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: One statement: SQL text and the row of plain values it binds.
Op = tuple[str, tuple[Any, ...]]


class Batch:
    """The operations submitted since the writer last took a batch, with what may be coalesced.

    ``index`` maps a key (a part's name for one row: ``("m", msg_id)``, ``("q", uid)``) to the
    position of the latest operation on it in this batch. A later operation on that key either
    folds into that one (:meth:`update`) or cancels it (:meth:`delete`). Cancelling is safe
    because nothing else in between touched the key: every operation on the key moves or
    removes its index entry, and :meth:`barrier` clears the whole index for operations that
    touch keys they do not name.

    A put is *fresh* when no row with its key can exist yet (a part knows: its ids only grow);
    a delete of it in the same batch then needs no DELETE at all.
    """

    __slots__ = ("ops", "callbacks", "commits", "index", "coalesced", "afterwards", "gathered")

    def __init__(self) -> None:
        self.ops: list[Op | None] = []
        self.callbacks: list[Callable[[], None]] = []  # to notify's thread after the commit
        self.commits: list[Callable[[BaseException | None], None]] = []  # on the writer thread
        self.index: dict[tuple[Any, ...], tuple[bool, int, bool]] = {}  # key -> (is_put, pos, fresh)
        self.coalesced = 0
        #: Operations added when the writer takes the batch (high-water marks): name -> op.
        self.afterwards: dict[str, Op] = {}
        #: Items gathered under a key, turned into operations at commit (:meth:`gather`).
        self.gathered: dict[Any, tuple[Callable[..., list[Op]], tuple[Any, ...], list[Any]]] = {}

    def __bool__(self) -> bool:
        return bool(self.ops or self.callbacks or self.commits or self.gathered)

    def append(self, op: Op) -> None:
        self.ops.append(op)

    def put(self, key: tuple[Any, ...], op: Op, fresh: bool = False) -> None:
        """A whole row (INSERT OR REPLACE): any pending operation on the key is superseded."""
        entry = self.index.get(key)
        if entry is not None:
            is_put, pos, was_fresh = entry
            self.ops[pos] = None
            self.coalesced += 1
            fresh = fresh or (is_put and was_fresh)
        self.index[key] = (True, len(self.ops), fresh)
        self.ops.append(op)

    def update(self, key: tuple[Any, ...], op: Op, fold: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> None:
        """Fold into a pending put of the same key (``fold(row)`` gives the new row), replace a
        pending update of it by the same statement (which sets the same columns), or else
        append ``op`` (behind an update by another statement, which may set other columns:
        a delivery's packet id and state, then its RELEASED state alone)."""
        entry = self.index.get(key)
        if entry is not None:
            is_put, pos, _ = entry
            pending = self.ops[pos]
            assert pending is not None  # an index entry names a live operation
            if is_put:
                self.ops[pos] = (pending[0], fold(pending[1]))
                self.coalesced += 1
                return
            if pending[0] == op[0]:
                self.ops[pos] = op
                self.coalesced += 1
                return
        self.index[key] = (False, len(self.ops), False)
        self.ops.append(op)

    def delete(self, key: tuple[Any, ...], op: Op) -> None:
        entry = self.index.pop(key, None)
        if entry is not None:
            is_put, pos, fresh = entry
            self.ops[pos] = None
            self.coalesced += 1
            if is_put and fresh:
                self.coalesced += 1  # the DELETE itself is not needed either
                return
        self.ops.append(op)

    def gather(self, key: Any, build: Callable[..., list[Op]], *args: Any) -> list[Any]:
        """The list of items gathered under ``key`` in this batch, to extend; at commit (on the
        writer thread, outside the lock) ``build(items, *args)`` gives their operations, which
        run after the batch's others (``build`` and ``args`` are those of the key's first
        gather in the batch). How many small items become few rows: the message log's record
        batches. ``build`` must give the same operations when a commit is retried."""
        group = self.gathered.get(key)
        if group is None:
            group = self.gathered[key] = (build, args, [])
        return group[2]

    def barrier(self, ops: list[Op]) -> None:
        """Operations that touch keys they do not name: nothing before them may fold into later ones."""
        self.index.clear()
        self.ops.extend(ops)
