"""The queue manager's storage interface and the in-memory engine.

Why this shape: the queue manager keeps every queue's index in memory (the seed keeps index
fields in memory too, everyplace.md item 4) and only *records* changes in a store. A change is
an operation tuple; the store applies submitted operations in order and returns a
:class:`Ticket` the caller waits on before it acknowledges (spec README decision 4: durable
before acknowledged). An engine may apply many callers' operations in one transaction (group
commit, :mod:`relaymq.qmgr.sqlite_store`).

Operations:
    ("entry", Entry)                               insert or replace a message row
    ("state", uid, state, confirm_id, lock_id)     change a message's state
    ("delete", uid)                                remove a message
    ("queue", QueueDefinition)                     insert or replace a definition
    ("unqueue", owner, name)                       remove a definition
    ("confirmed", uid, at_ms)                      remember a confirmed UID (duplicate removal)
    ("forget", before_ms)                          forget confirmed UIDs older than before_ms
    ("meta", name, int)                            a counter (sequence, UID clock)
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from relaymq.qmgr.definitions import QueueDefinition
from relaymq.qmgr.errors import StoreFailed
from relaymq.store.base import StoreError
from relaymq.store.ticket import Ticket as EngineTicket
from relaymq.qmgr.states import Entry

Op = tuple[Any, ...]


class Ticket(EngineTicket):
    """Completion of one submission: ``wait()`` returns once its operations are durable, or
    raises StoreFailed (MQRC_RESOURCE_PROBLEM) if the batch holding them could not be written."""

    __slots__ = ()

    def wait(self, timeout: float | None = None) -> None:
        try:
            super().wait(timeout)
        except StoreError as exc:
            raise StoreFailed(str(exc)) from exc.__cause__


DONE = Ticket(done=True)


@dataclass
class Loaded:
    """Everything a store holds, read once when the queue manager opens."""

    queues: list[QueueDefinition] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    confirmed: dict[str, int] = field(default_factory=dict)
    meta: dict[str, int] = field(default_factory=dict)


class QueueStore:
    """Interface of a queue manager store."""

    kind = "abstract"
    #: Whether :meth:`submit_nowait` and :meth:`after_submit` work: a store in a storage engine,
    #: whose caller may wait for the engine itself instead of a ticket per submission.
    defers = False

    def load(self) -> Loaded:
        raise NotImplementedError

    def submit(self, ops: list[Op]) -> Ticket:
        raise NotImplementedError

    def submit_nowait(self, ops: list[Op]) -> None:
        """Submit without a ticket (only where :attr:`defers`)."""
        raise NotImplementedError

    def after_submit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the current unit of work is submitted (only where :attr:`defers`)."""
        raise NotImplementedError

    def unit(self) -> AbstractContextManager[None]:
        """A unit of work of the storage engine (what is submitted inside commits together)."""
        return nullcontext()

    def close(self) -> None:
        raise NotImplementedError


class MemoryQueueStore(QueueStore):
    """Nothing survives the process: for tests, embedded use without persistence, and
    ``[broker] store = "memory"``. Every submission is complete at once."""

    kind = "memory"

    def load(self) -> Loaded:
        return Loaded()

    def submit(self, ops: list[Op]) -> Ticket:
        return DONE

    def close(self) -> None:
        pass
