"""Messages waiting for another queue manager: what the channel part transmits and removes
once confirmed (everyplace.md items 18, 23-25, 32 transmission rules; seed 004 l.2597-3136).

A part of :class:`relaymq.qmgr.manager.QueueManager`; what it uses of the manager is
:class:`relaymq.qmgr.host.QueueHost`, and the transmission listeners it calls are the manager's
:class:`relaymq.qmgr.listeners.Listeners`.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from relaymq.message.message import Message
from relaymq.qmgr.definitions import STORE_AND_FORWARD
from relaymq.qmgr.errors import NotAllowed, UnknownQueue, UnknownUID
from relaymq.qmgr.expiry import is_expired
from relaymq.qmgr.host import QueueHost
from relaymq.qmgr.listeners import Listeners
from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.rules import QueueManagerRule
from relaymq.qmgr.states import Entry
from relaymq.qmgr.store import Op


def _outgoing(entry: Entry, now_ms: int) -> Message:
    """A private copy to send; an MQMD.Expiry counts down by the time spent here, as MQ does
    when a message moves on, so a message does not live longer for each hop it makes."""
    message = Message.from_bytes(entry.data)
    md = message.mq.md
    if md.Expiry > 0 and entry.expire_at is not None:
        md.Expiry = max(1, (entry.expire_at - now_ms + 99) // 100)
    return message


class Pending(NamedTuple):
    """A confirmed message waiting here for another queue manager."""

    uid: str
    queue: str  # its final destination queue (on the remote queue manager)
    message: Message
    expire_at: int | None  # its absolute deadline, epoch ms, kept across hops (item 5)
    #: The message sealed with the transmitting queue's cryptor and compressor (queue
    #: security, item 26: what the channel carries); None when that queue has neither.
    sealed: bytes | None = None

    def data(self) -> bytes:
        """What a PUT frame carries: the sealed form, else the message in MQ format."""
        return self.sealed if self.sealed is not None else self.message.to_bytes()


def rule_reads_fields(rule: QueueManagerRule) -> bool:
    """Does the queue manager rule have its own trigger_transmission (so the fields of each
    put message are worth decoding for it)?"""
    return type(rule).trigger_transmission is not QueueManagerRule.trigger_transmission


class Transmission:
    """The sending side of assured delivery."""

    def __init__(self, host: QueueHost, lock: threading.RLock, listeners: Listeners) -> None:
        self._host = host
        self._lock = lock
        self._listeners = listeners

    def pending_messages(self, remote_qmgr: str, *, pull: bool = False, limit: int | None = None,
                         store_queue: str | None = None) -> list[Pending]:
        """Confirmed messages waiting to go to ``remote_qmgr`` in priority-then-arrival order
        per queue: from async remote queues owned by it and store-and-forward queues listing
        it. A store-and-forward queue with ``push = false`` only gives its messages to
        ``pull=True`` (a home-server pulling, item 24); ``store_queue`` limits a pull to the
        store-and-forward queue of that name (the home-server queue's name, l.3371; raises
        UnknownQueue when there is no such store-and-forward queue here). The queue manager
        rule's ``transmit(queue)`` may hold a queue back (item 32)."""
        host = self._host
        host._check_open()
        out: list[Pending] = []
        with self._lock:
            if store_queue is not None:
                index = host._queues.get((host.name, store_queue))
                if index is None or index.definition.kind != STORE_AND_FORWARD:
                    raise UnknownQueue(f"no store-and-forward queue {store_queue!r} on queue manager {host.name!r}")
            ops: list[Op] = []
            now = host._now_ms()
            for index in (i for i in list(host._queues.values()) if self._gives(i, pull, store_queue)):
                definition = index.definition
                for entry in index.visible():
                    if entry.target_qmgr != remote_qmgr:
                        continue
                    if is_expired(entry.expire_at, now):
                        host._expire(index, entry, ops)
                        continue
                    message = _outgoing(entry, now)
                    sealed = (host.security.seal(definition, entry.uid, message.to_bytes())
                              if definition.sealed_at_rest else None)
                    out.append(Pending(entry.uid, entry.target_queue, message, entry.expire_at, sealed))
                    if limit is not None and len(out) >= limit:
                        break
                if limit is not None and len(out) >= limit:
                    break
            if ops:
                host.store.submit(ops)
        return out

    def _gives(self, index: QueueIndex, pull: bool, store_queue: str | None) -> bool:
        """Does the queue of ``index`` give its messages to this transmission (or pull)?"""
        definition = index.definition
        if not definition.transmits:
            return False
        if store_queue is not None and definition.key != (self._host.name, store_queue):
            return False
        if definition.kind == STORE_AND_FORWARD and not (definition.push or pull):
            return False
        return bool(self._host.rule.transmit(self._host, definition))

    def pending_count(self) -> int:
        """Confirmed messages waiting for transmission on every transmitting queue (the
        count the triggerTransmission rule gets, seed l.5339)."""
        with self._lock:
            return sum(len(list(index.visible())) for index in self._host._queues.values()
                       if index.definition.transmits)

    def transmission_allowed(self, fields: dict[str, Any] | None = None) -> bool:
        """Ask the queue manager rule's ``trigger_transmission(count, fields)`` (item 32,
        seed l.5314-5360) whether pending messages may be transmitted now; ``fields`` are
        those of the message whose put triggered it ({} for a periodic look). False when
        nothing is pending (the rule is not asked then); True without counting when the rule
        is the default one, which always agrees."""
        rule = self._host.rule
        if not rule_reads_fields(rule):
            return True  # the default rule always agrees: no need to count
        count = self.pending_count()
        if count == 0:
            return False
        return bool(rule.trigger_transmission(self._host, count, dict(fields or {})))

    def transmission_targets(self) -> list[str]:
        """Queue managers that have confirmed messages waiting here for them."""
        with self._lock:
            return sorted({e.target_qmgr for index in self._host._queues.values() if index.definition.transmits
                           for e in index.visible()})

    def trigger_transmission(self) -> bool:
        """Transmit everything pending now and let home-server queues pull (seed
        triggerTransmission, l.2371-2382): when the queue manager rule agrees (item 32),
        each transmission listener is called with ``(None, {}, True)``: every link
        transmits without asking the rule again, and pulls. Returns whether the rule agreed."""
        listeners = self._listeners.transmission_listeners()
        if not self._host.rule.trigger_transmission(self._host, self.pending_count(), {}):
            return False
        for fn in listeners:
            fn(None, {}, True)
        return True

    def transmitted(self, uid: str) -> None:
        """The remote queue manager confirmed ``uid``: remove it here (item 18)."""
        host = self._host
        host._check_open()
        with self._lock:
            entry = host._by_uid.get(uid)
            if entry is None:
                raise UnknownUID(f"no message {uid} waiting for transmission")
            index = host._queues[(entry.qmgr, entry.queue)]
            if not index.definition.transmits:
                raise NotAllowed(f"message {uid} is on {index.definition.kind} queue {entry.queue!r},"
                                 " not waiting for transmission")
            ops: list[Op] = []
            host._drop(index, entry, ops)
            ticket = host.store.submit(ops)
            if index.rule is not None:
                index.rule.message_transmitted(index.definition, uid)
        host._finish(ticket, [])
