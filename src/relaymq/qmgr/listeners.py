"""Listeners: who hears that a message arrived (everyplace.md item 16; seed 004 l.2130-2367),
and the wake-up of waiting getters.

A mixin of :class:`relaymq.qmgr.manager.QueueManager`. Listeners run in the thread that made
the message visible, after it is durable and outside the lock (a listener may call back).

Queue and message listeners hear of every message that becomes visible (a put, a confirmPut,
and a message made visible again by unlock or undo). Put listeners hear of puts only (a put,
or the confirmPut of a two-phase put) and get the stored bytes with it: a message taken off
the queue at once by a waiting getter is still handed over (the archive service copies queue
messages into its log with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaymq.qmgr.definitions import ADMIN, APPLICATION_KINDS
from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.states import UNLOCKED, Entry, MessageEvent, PutEvent
from relaymq.qmgr.transmission import message_fields


class ListenerMixin:
    """Queue listeners, message listeners and the announcement of new visible messages."""

    def add_listener(self, queue: str, fn: Callable[[str], None]) -> None:
        """``fn(queue)`` is called (in the putting thread) after a message on ``queue``
        becomes visible and durable. Local queues only (item 10)."""
        with self._lock:
            index = self._listenable(queue)
            self._listeners.setdefault(index.definition.name, []).append(fn)
            if index.rule is not None:
                index.rule.listener_added(index.definition)

    def remove_listener(self, queue: str, fn: Callable[[str], None]) -> None:
        with self._lock:
            index = self._listenable(queue)
            fns = self._listeners.get(index.definition.name, [])
            if fn in fns:
                fns.remove(fn)
                if index.rule is not None:
                    index.rule.listener_removed(index.definition)

    def add_message_listener(self, queue: str, fn: Callable[[MessageEvent], None]) -> None:
        """``fn(MessageEvent)``: queue name, UID, MsgID, CorrelID, priority (item 16)."""
        with self._lock:
            index = self._listenable(queue)
            self._message_listeners.setdefault(index.definition.name, []).append(fn)
            if index.rule is not None:
                index.rule.listener_added(index.definition)

    def remove_message_listener(self, queue: str, fn: Callable[[MessageEvent], None]) -> None:
        with self._lock:
            fns = self._message_listeners.get(self._listenable(queue).definition.name, [])
            if fn in fns:
                fns.remove(fn)

    def add_put_listener(self, queue: str, fn: Callable[[PutEvent], None]) -> None:
        """``fn(PutEvent)`` for every message put to ``queue`` (a two-phase put: when it is
        confirmed), with the stored bytes, when the put is submitted to the store: in the
        putter's thread and unit of work, with the queue manager's lock held, so what ``fn``
        submits to the same storage engine commits with the put (the archive, issue 14). ``fn``
        must not call the queue manager. Not called for messages made visible again (unlock,
        undo). An internal hook: queue rules are not told of it."""
        with self._lock:
            index = self._listenable(queue)
            self._put_listeners.setdefault(index.definition.name, []).append(fn)

    def remove_put_listener(self, queue: str, fn: Callable[[PutEvent], None]) -> None:
        with self._lock:
            fns = self._put_listeners.get(self._listenable(queue).definition.name, [])
            if fn in fns:
                fns.remove(fn)

    def _heard_put(self, index: QueueIndex, entry: Entry) -> None:
        """Tell the put listeners of ``entry`` (call with the lock held, inside the unit of
        work that submits the put)."""
        if entry.state != UNLOCKED or index.definition.kind not in APPLICATION_KINDS:
            return
        listeners = self._put_listeners.get(index.definition.name)
        if listeners:
            event = PutEvent(index.definition.name, entry.uid, entry.msg_id, entry.correl_id, entry.priority,
                             entry.data)
            for fn in list(listeners):
                fn(event)

    def _listenable(self, queue: str) -> QueueIndex:
        return self._holding_index(queue, None, "listen")

    def _announce(self, index: QueueIndex, entries: list[Entry], *, put: bool = False) -> None:
        """Wake waiters, then tell listeners (outside the lock: a listener may call back).
        ``put``: the entries were just put (or their put confirmed), so put listeners hear too."""
        if not entries:
            return
        with self._lock:
            hearers = self._hearers(index)
        if hearers is not None:
            self._tell(index, entries, hearers)

    def _hearers(self, index: QueueIndex) -> tuple[list[Callable[[str], None]], list[Callable[[MessageEvent], None]],
                                                   list[Callable[[str | None, dict[str, Any], bool], None]]] | None:
        """Wake the getters waiting (call with the lock held) and say who is to hear of new
        messages on ``index``: None when nobody is (then :meth:`_tell` has nothing to do)."""
        if self._waiters:
            self._cond.notify_all()
        definition = index.definition
        local = definition.kind in APPLICATION_KINDS
        listeners = list(self._listeners.get(definition.name, ())) if local else []
        message_listeners = list(self._message_listeners.get(definition.name, ())) if local else []
        transmission = list(self._transmission_listeners) if definition.transmits else []
        if listeners or message_listeners or transmission or definition.kind == ADMIN:
            return listeners, message_listeners, transmission
        return None

    def _tell(self, index: QueueIndex, entries: list[Entry],
              hearers: tuple[list[Callable[[str], None]], list[Callable[[MessageEvent], None]],
                             list[Callable[[str | None, dict[str, Any], bool], None]]]) -> None:
        """Tell what :meth:`_hearers` named of ``entries`` (outside the lock)."""
        listeners, message_listeners, transmission = hearers
        name = index.definition.name
        if index.definition.kind == ADMIN and self.admin is not None:
            self.admin.wake()
        for fn in listeners:
            fn(name)
        if not (message_listeners or transmission):
            return
        for entry in entries:
            event = MessageEvent(name, entry.uid, entry.msg_id, entry.correl_id, entry.priority)
            for mfn in message_listeners:
                mfn(event)
            if transmission:
                fields = message_fields(entry) if self._rule_reads_fields() else {}
                for tfn in transmission:
                    tfn(entry.target_qmgr, fields, False)
