"""Messages waiting for another queue manager: what the channel part transmits and removes
once confirmed (everyplace.md items 18, 23-25, 32 transmission rules; seed 004 l.2597-3136).

A mixin of :class:`relaymq.qmgr.manager.QueueManager`.
"""

from __future__ import annotations

from collections.abc import Callable

from relaymq.message.message import Message
from relaymq.qmgr.definitions import STORE_AND_FORWARD
from relaymq.qmgr.errors import NotAllowed, UnknownUID
from relaymq.qmgr.expiry import is_expired
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


class TransmissionMixin:
    """The sending side of assured delivery."""

    def pending_transmission(self, remote_qmgr: str, *, pull: bool = False,
                             limit: int | None = None) -> list[tuple[str, str, Message]]:
        """Confirmed messages waiting to go to ``remote_qmgr``, as (uid, target_queue, message)
        in priority-then-arrival order per queue: from async remote queues owned by it and
        store-and-forward queues listing it. A store-and-forward queue with ``push = false``
        only gives its messages to ``pull=True`` (a home-server pulling, item 24). The
        queue manager rule's ``transmit(queue)`` may hold a queue back (item 32)."""
        self._check_open()
        out: list[tuple[str, str, Message]] = []
        with self._lock:
            ops: list[Op] = []
            now = self._now_ms()
            for index in list(self._queues.values()):
                definition = index.definition
                if not definition.transmits:
                    continue
                if definition.kind == STORE_AND_FORWARD and not (definition.push or pull):
                    continue
                if not self.rule.transmit(self, definition):
                    continue
                for entry in index.visible():
                    if entry.target_qmgr != remote_qmgr:
                        continue
                    if is_expired(entry.expire_at, now):
                        self._expire(index, entry, ops)
                        continue
                    out.append((entry.uid, entry.target_queue, _outgoing(entry, now)))
                    if limit is not None and len(out) >= limit:
                        break
            if ops:
                self.store.submit(ops)
        return out

    def transmission_targets(self) -> list[str]:
        """Queue managers that have confirmed messages waiting here for them."""
        with self._lock:
            return sorted({e.target_qmgr for index in self._queues.values() if index.definition.transmits
                           for e in index.visible()})

    def trigger_transmission(self) -> bool:
        """Try to transmit everything pending (seed triggerTransmission): when the queue
        manager rule agrees (item 32), each transmission listener hears of each queue manager
        that has messages waiting. Returns whether the rule agreed."""
        with self._lock:
            count = sum(len(index) for index in self._queues.values() if index.definition.transmits)
            listeners = list(self._transmission_listeners)
        if not self.rule.trigger_transmission(self, count, {}):
            return False
        for target in self.transmission_targets():
            for fn in listeners:
                fn(target)
        return True

    def transmitted(self, uid: str) -> None:
        """The remote queue manager confirmed ``uid``: remove it here (item 18)."""
        self._check_open()
        with self._lock:
            entry = self._by_uid.get(uid)
            if entry is None:
                raise UnknownUID(f"no message {uid} waiting for transmission")
            index = self._queues[(entry.qmgr, entry.queue)]
            if not index.definition.transmits:
                raise NotAllowed(f"message {uid} is on {index.definition.kind} queue {entry.queue!r},"
                                 " not waiting for transmission")
            ops: list[Op] = []
            self._drop(index, entry, ops)
            ticket = self.store.submit(ops)
            if index.rule is not None:
                index.rule.message_transmitted(index.definition, uid)
        self._finish(ticket, [])

    def add_transmission_listener(self, fn: Callable[[str], None]) -> None:
        """``fn(remote_qmgr)`` after a message for that queue manager is committed here."""
        with self._lock:
            self._transmission_listeners.append(fn)

    def remove_transmission_listener(self, fn: Callable[[str], None]) -> None:
        with self._lock:
            if fn in self._transmission_listeners:
                self._transmission_listeners.remove(fn)
