"""Getting messages out: get, browse, browseAndLock, unlock, delete, confirmGet, undo and the
waiting get (everyplace.md items 4, 11-17, 20; seed 004 l.1901-2367, 3012-3100).

A part of :class:`relaymq.qmgr.manager.QueueManager`: :class:`Retrieval` keeps the consumer
side of the message states in one file and owns the lock ids it hands out; what it uses of the
manager (its indexes, store and the steps every operation shares) is :class:`RetrievalHost`,
and its lock comes in the constructor. :class:`Waiting` counts and wakes the getters that wait.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from relaymq.message.message import Message
from relaymq.qmgr.errors import BadSelector, NoMessage, WrongLock
from relaymq.qmgr.expiry import is_expired
from relaymq.qmgr.host import QueueHost
from relaymq.qmgr.listeners import Listeners
from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.rules import call_veto
from relaymq.qmgr.states import GET_UNCONFIRMED, LOCKED, PUT_UNCONFIRMED, UNLOCKED, Entry, Envelope
from relaymq.qmgr.store import Op


def _pad24(value: bytes | None) -> bytes | None:
    return None if value is None else value.ljust(24, b"\0")[:24]


def envelope_of(entry: Entry, private: bool = False) -> Envelope:
    """What a getter (or a rule) sees of ``entry``; ``private``: a copy of the message of its own."""
    message = Message.from_stored(entry.data) if private else entry.message()
    return Envelope(entry.uid, entry.queue, entry.priority, entry.msg_id, entry.correl_id, message,
                    entry.lock_id, entry.target_qmgr, entry.target_queue)


class Waiting:
    """The getters waiting for a message (item 16), on the queue manager's lock."""

    def __init__(self, lock: threading.RLock) -> None:
        self._cond = threading.Condition(lock)
        self.count = 0

    def wait(self, timeout: float) -> None:
        """Wait (with the lock held) until woken or ``timeout`` seconds passed."""
        self.count += 1
        try:
            self._cond.wait(timeout)
        finally:
            self.count -= 1
            self._cond.notify_all()  # a quiescing close counts waiters

    def wake(self) -> None:
        """Wake every waiting getter (call with the lock held)."""
        self._cond.notify_all()

    def wake_if_any(self) -> None:
        if self.count:
            self._cond.notify_all()

    def drain(self, seconds: float) -> None:
        """Let the waiting getters go on for up to ``seconds`` (a quiescing close, lock held)."""
        deadline = time.monotonic() + seconds
        while self.count and (remaining := deadline - time.monotonic()) > 0:
            self._cond.wait(remaining)


class SyncRoute(Protocol):
    """The retrieval operations of a synchronous remote queue (the channel part's SyncRemote)."""

    def get(self, qmgr: str, queue: str, **options: Any) -> Envelope | None: ...
    def browse(self, qmgr: str, queue: str, **options: Any) -> list[Envelope]: ...
    def delete(self, qmgr: str, queue: str, uid: str, lock_id: int) -> None: ...
    def unlock(self, qmgr: str, queue: str, uid: str, lock_id: int) -> None: ...
    def confirm_get(self, qmgr: str, queue: str, uid: str) -> bool: ...
    def undo(self, qmgr: str, queue: str, confirm_id: int) -> int: ...


class RetrievalHost(QueueHost, Protocol):
    """What :class:`Retrieval` uses of its queue manager beyond :class:`QueueHost`: whether it
    is closed, how to find a queue (here or over a synchronous route), how to show a message
    again and the memory of confirmed UIDs."""

    _closed: bool

    def _sync_route(self, queue: str, qmgr: str | None) -> tuple[str, str] | None: ...
    def _remote_to(self, target_qmgr: str, target_queue: str) -> SyncRoute: ...
    def _index(self, name: str, qmgr: str | None) -> QueueIndex: ...
    def _holding_index(self, name: str, qmgr: str | None, operation: str, internal: bool = False) -> QueueIndex: ...
    def _make_visible(self, index: QueueIndex, entry: Entry) -> None: ...
    def _already_confirmed(self, uid: str, what: str) -> bool: ...
    def _remember(self, uid: str, ops: list[Op]) -> None: ...


class Retrieval:
    """The get side of the queue manager."""

    def __init__(self, host: RetrievalHost, lock: threading.RLock, waiting: Waiting, listeners: Listeners) -> None:
        self._host = host
        self._lock = lock
        self._waiting = waiting
        self._listeners = listeners
        self._lock_ids = itertools.count(1)

    def lock_ids_after(self, last: int) -> None:
        """Hand out lock ids above ``last`` (the highest held by a stored message)."""
        self._lock_ids = itertools.count(last + 1)

    def _matcher(self, msg_id: bytes | None, correl_id: bytes | None, selector: str | None,
                 fields: dict[str, Any] | None) -> Callable[[Entry], bool] | None:
        """Whether an entry matches the criteria; None when there are none (every entry does)."""
        if msg_id is None and correl_id is None and not selector and not fields:
            return None
        msg_id, correl_id = _pad24(msg_id), _pad24(correl_id)
        compiled = None
        if selector or fields:  # the selector language is imported by the first get that needs it
            from relaymq.selector import SelectorError, compile_selector
            from relaymq.selector.resolvers import message_resolver

            try:
                compiled = compile_selector(selector) if selector else None
            except SelectorError as exc:
                raise BadSelector(f"selector {selector!r}: {exc}") from exc

        def match(entry: Entry) -> bool:
            if msg_id is not None and entry.msg_id != msg_id:
                return False
            if correl_id is not None and entry.correl_id != correl_id:
                return False
            if compiled is None and not fields:
                return True
            resolve = message_resolver(entry.message())
            if fields and any(resolve(k) != v for k, v in fields.items()):
                return False
            return compiled is None or compiled.matches(resolve)

        return match

    def _first(self, index: QueueIndex, match: Callable[[Entry], bool] | None, ops: list[Op]) -> Entry | None:
        now = self._host._now_ms()
        if match is None:  # a plain get: the head of the queue, once the expired ones are gone
            while (entry := index.first()) is not None and is_expired(entry.expire_at, now):
                self._host._expire(index, entry, ops)
            return entry
        for entry in index.visible():
            if is_expired(entry.expire_at, now):
                self._host._expire(index, entry, ops)
                continue
            if match(entry):
                return entry
        return None

    def get_envelope(self, queue: str, *, wait: float = 0.0, msg_id: bytes | None = None,
                     correl_id: bytes | None = None, selector: str | None = None,
                     fields: dict[str, Any] | None = None, confirm_id: int = 0, uid: str | None = None,
                     lock_id: int = 0, qmgr: str | None = None, _admin: bool = False,
                     durable: bool = True) -> Envelope | None:
        """Get with everything: with ``confirm_id > 0`` the message becomes get-unconfirmed
        until :meth:`confirm_get` (or :meth:`undo`); ``uid`` + ``lock_id`` take a message
        locked by browseAndLock (item 13). ``wait`` > 0 blocks this thread (waitForMessage,
        item 16). On a synchronous remote queue (``qmgr`` another queue manager) the get is
        made there over the channel (items 10, 20). ``durable=False`` returns once the removal is
        submitted, for a caller that waits for the store itself (the pub/sub engine takes a
        command off its control queue in the unit of work that records its effects)."""
        self._host._check_open()
        route = self._host._sync_route(queue, qmgr)
        if route is not None:
            return self._host._remote_to(*route).get(route[0], route[1], wait=wait, msg_id=msg_id,
                                                     correl_id=correl_id, selector=selector, fields=fields,
                                                     confirm_id=confirm_id, uid=uid, lock_id=lock_id)
        deadline = time.monotonic() + wait
        with self._lock:
            index = self._host._holding_index(queue, qmgr, "get", internal=_admin)
            match = self._matcher(msg_id, correl_id, selector, fields)
            while True:
                if self._host._closed:
                    return None
                ops: list[Op] = []
                entry = self._locked_entry(index, uid, lock_id) if uid is not None else self._first(index, match, ops)
                if entry is not None:
                    envelope = envelope_of(entry, private=confirm_id > 0)  # it may come back (undo)
                    call_veto("get", self._host.rule.get, self._host, index.definition, envelope)
                    if index.rule is not None:
                        call_veto("get", index.rule.get, index.definition, envelope)
                    if confirm_id > 0:
                        index.hide(entry)
                        entry.state, entry.confirm_id, entry.lock_id = GET_UNCONFIRMED, confirm_id, 0
                        ops.append(("state", entry.uid, entry.state, entry.confirm_id, 0))
                    else:
                        self._host._drop(index, entry, ops)
                    if durable or not self._host.store.defers:
                        ticket = self._host.store.submit(ops)
                    else:  # the caller waits for the engine itself: no ticket to make and finish
                        self._host.store.submit_nowait(ops)
                    break
                if ops:
                    self._host.store.submit(ops)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or uid is not None:
                    return None
                self._waiting.wait(remaining)
        if durable:
            self._host._finish(ticket, [])
        return envelope

    def _locked_entry(self, index: QueueIndex, uid: str, lock_id: int) -> Entry:
        entry = index.entries.get(uid)
        if entry is None or entry.state not in (UNLOCKED, LOCKED):
            raise NoMessage(f"no message {uid} available on queue {index.definition.name!r}")
        if entry.state == LOCKED and entry.lock_id != lock_id:
            raise WrongLock(f"message {uid} is locked; lock id {lock_id} is not the locker's")
        if is_expired(entry.expire_at, self._host._now_ms()):
            ops: list[Op] = []
            self._host._expire(index, entry, ops)
            self._host.store.submit(ops)
            raise NoMessage(f"message {uid} has expired")
        return entry

    def browse_envelopes(self, queue: str, *, msg_id: bytes | None = None, correl_id: bytes | None = None,
                         selector: str | None = None, fields: dict[str, Any] | None = None,
                         limit: int | None = None, qmgr: str | None = None, _lock_confirm: int = 0) -> list[Envelope]:
        """Envelopes of the visible matching messages in get order (with ``_lock_confirm``:
        browseAndLock). The queue rule's ``browse`` sees them first and may veto: then
        nothing is locked (item 32)."""
        self._host._check_open()
        route = self._host._sync_route(queue, qmgr)
        if route is not None:
            return self._host._remote_to(*route).browse(route[0], route[1], msg_id=msg_id, correl_id=correl_id,
                                                        selector=selector, fields=fields, limit=limit,
                                                        lock_confirm_id=_lock_confirm)
        with self._lock:
            index = self._host._holding_index(queue, qmgr, "browse")
            match = self._matcher(msg_id, correl_id, selector, fields)
            now = self._host._now_ms()
            ops: list[Op] = []
            found: list[Entry] = []
            for entry in index.visible():
                if limit is not None and len(found) >= limit:
                    break
                if is_expired(entry.expire_at, now):
                    self._host._expire(index, entry, ops)
                elif match is None or match(entry):
                    found.append(entry)
            lock_id = next(self._lock_ids) if _lock_confirm else 0
            envelopes = [replace(envelope_of(e, private=True), lock_id=lock_id) for e in found]
            if index.rule is not None:
                try:
                    call_veto("browse", index.rule.browse, index.definition, envelopes)
                except BaseException:
                    if ops:  # expired messages found on the way are still removed
                        self._host.store.submit(ops)
                    raise
            for entry in found if lock_id else ():
                index.hide(entry)
                entry.state, entry.lock_id, entry.confirm_id = LOCKED, lock_id, _lock_confirm
                ops.append(("state", entry.uid, LOCKED, _lock_confirm, lock_id))
            ticket = self._host.store.submit(ops) if ops else None
        if ticket is not None:
            self._host._finish(ticket, [])
        return envelopes

    def unlock(self, queue: str, uid: str, lock_id: int, *, qmgr: str | None = None) -> None:
        """Unlock a message locked by browseAndLock; only the locker (its lock id) may."""
        self._host._check_open()
        route = self._host._sync_route(queue, qmgr)
        if route is not None:
            self._host._remote_to(*route).unlock(route[0], route[1], uid, lock_id)
            return
        with self._lock:
            index = self._host._holding_index(queue, qmgr, "unlock")
            entry = index.entries.get(uid)
            if entry is None or entry.state != LOCKED:
                raise NoMessage(f"no locked message {uid} on queue {queue!r}")
            if entry.lock_id != lock_id:
                raise WrongLock(f"message {uid} is locked with another lock id")
            self._host._make_visible(index, entry)
            ticket = self._host.store.submit([("state", uid, UNLOCKED, 0, 0)])
        self._host._finish(ticket, [])
        self._listeners.announce(index, [entry])

    def delete(self, queue: str, uid: str, *, lock_id: int = 0, qmgr: str | None = None) -> None:
        """Delete exactly the message ``uid`` (item 14); a locked one needs its lock id."""
        self._host._check_open()
        route = self._host._sync_route(queue, qmgr)
        if route is not None:
            self._host._remote_to(*route).delete(route[0], route[1], uid, lock_id)
            return
        with self._lock:
            index = self._host._holding_index(queue, qmgr, "delete")
            entry = self._locked_entry(index, uid, lock_id)
            call_veto("delete", self._host.rule.delete, self._host, index.definition, uid)
            if index.rule is not None:
                call_veto("delete", index.rule.delete, index.definition, uid)
            ops: list[Op] = []
            self._host._drop(index, entry, ops)
            ticket = self._host.store.submit(ops)
        self._host._finish(ticket, [])

    def confirm_get(self, uid: str, *, qmgr: str | None = None, queue: str | None = None) -> bool:
        """Delete a get-unconfirmed message (item 20). True when done now, False when ``uid``
        is remembered as confirmed already; UnknownUID otherwise. ``qmgr`` and ``queue``
        name a synchronous remote queue the message was got from (confirmGetMessage(qmgr,
        queue, uid)): the confirm goes there."""
        self._host._check_open()
        if queue is not None:
            route = self._host._sync_route(queue, qmgr)
            if route is not None:
                return self._host._remote_to(*route).confirm_get(route[0], route[1], uid)
        with self._lock:
            entry = self._host._by_uid.get(uid)
            if entry is None or entry.state != GET_UNCONFIRMED:
                return self._host._already_confirmed(uid, "confirmGet")
            ops: list[Op] = []
            self._host._drop(self._host._queues[(entry.qmgr, entry.queue)], entry, ops)
            self._host._remember(uid, ops)
            ticket = self._host.store.submit(ops)
        self._host._finish(ticket, [])
        return True

    def undo(self, queue: str, confirm_id: int, *, qmgr: str | None = None) -> int:
        """Undo every operation made with ``confirm_id`` on ``queue`` (item 17): an unconfirmed
        put is deleted, a get-unconfirmed or locked message becomes visible again. Returns how
        many messages changed; NoMessage when none did. Works on synchronous remote queues
        too (seed l.3040: undo works for local and remote queues)."""
        self._host._check_open()
        route = self._host._sync_route(queue, qmgr)
        if route is not None:
            return self._host._remote_to(*route).undo(route[0], route[1], confirm_id)
        with self._lock:
            index = self._host._index(queue, qmgr)
            hits = [e for e in index.entries.values() if e.confirm_id == confirm_id and e.state != UNLOCKED]
            if not hits or confirm_id <= 0:
                raise NoMessage(f"nothing to undo on queue {queue!r} for confirm id {confirm_id}")
            call_veto("undo", self._host.rule.undo, self._host, index.definition, confirm_id)
            if index.rule is not None:
                call_veto("undo", index.rule.undo, index.definition, confirm_id)
            ops: list[Op] = []
            shown: list[Entry] = []
            for entry in hits:
                if entry.state == PUT_UNCONFIRMED:
                    self._host._drop(index, entry, ops)
                else:
                    self._host._make_visible(index, entry)
                    ops.append(("state", entry.uid, UNLOCKED, 0, 0))
                    shown.append(entry)
            ticket = self._host.store.submit(ops)
        self._host._finish(ticket, [])
        self._listeners.announce(index, shown)
        return len(hits)
