"""What the parts of a queue manager (:mod:`relaymq.qmgr.retrieval`,
:mod:`relaymq.qmgr.transmission`) use of it: its name and rule, the store, the lock-guarded
indexes (queues by (owner, name), messages by UID) and the steps every operation on them
shares. Each part's own protocol adds what only it needs."""

from __future__ import annotations

from typing import Protocol

from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.queue_security import QueueSecurity
from relaymq.qmgr.rules import QueueManagerRule
from relaymq.qmgr.states import Entry
from relaymq.qmgr.store import Op, QueueStore, Ticket


class QueueHost(Protocol):
    """The queue manager as its parts see it (:class:`relaymq.qmgr.manager.QueueManager`)."""

    name: str
    #: The queue manager rule; its hooks get the queue manager itself (this host).
    rule: QueueManagerRule
    store: QueueStore
    #: Cryptor keys and sealing of the queue security properties (items 7, 26).
    security: QueueSecurity
    _by_uid: dict[str, Entry]
    _queues: dict[tuple[str, str], QueueIndex]

    def _check_open(self) -> None: ...
    def _now_ms(self) -> int: ...
    def _drop(self, index: QueueIndex, entry: Entry, ops: list[Op]) -> None: ...
    def _expire(self, index: QueueIndex, entry: Entry, ops: list[Op]) -> None: ...
    def _finish(self, ticket: Ticket, undo_entries: list[Entry]) -> None: ...
