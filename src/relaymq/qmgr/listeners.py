"""Listeners: who hears that a message arrived (everyplace.md item 16; seed 004 l.2130-2367),
and the wake-up of waiting getters.

A part of :class:`relaymq.qmgr.manager.QueueManager` that owns the four kinds of listener;
what it needs from the manager comes in its constructor (the lock, how to find a queue one may
listen to, how to wake waiting getters and the admin processor). Listeners run in the thread
that made the message visible, after it is durable and outside the lock (a listener may call
back).

Queue and message listeners hear of every message that becomes visible (a put, a confirmPut,
and a message made visible again by unlock or undo). Put listeners hear of puts only (a put,
or the confirmPut of a two-phase put) and get the stored bytes with it: a message taken off
the queue at once by a waiting getter is still handed over (the archive service copies queue
messages into its log with it). Transmission listeners (the channel part) hear of messages
committed on a transmitting queue, and of an agreed triggerTransmission.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from relaymq.message.message import Message
from relaymq.qmgr.definitions import ADMIN, APPLICATION_KINDS, QueueDefinition
from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.states import UNLOCKED, Entry, MessageEvent, PutEvent

QueueListener = Callable[[str], None]
MessageListener = Callable[[MessageEvent], None]
PutListener = Callable[[PutEvent], None]
#: ``fn(remote_qmgr, fields, trigger)``: see :meth:`Listeners.add_transmission_listener`.
TransmissionListener = Callable[[str | None, dict[str, Any], bool], None]


def message_fields(entry: Entry) -> dict[str, Any]:
    """The fields of a message the transmission rules see (seed l.5331: triggerTransmission
    gets the message's MQeFields): the message properties of everyplace.md item 3 that
    relaymq keeps, its destination, and the Message itself."""
    message = Message.from_bytes(entry.data)
    md = message.mq.md
    return {"UID": entry.uid, "OriginQMgr": entry.uid.split(":", 1)[0], "Time": entry.created_ms,
            "MsgID": entry.msg_id, "CorrelID": entry.correl_id, "Priority": entry.priority,
            "ExpireTime": entry.expire_at, "ReplyToQ": md.ReplyToQ.strip(), "ReplyToQMgr": md.ReplyToQMgr.strip(),
            "DestQMgr": entry.target_qmgr, "DestQ": entry.target_queue, "Message": message}


class Hearers(NamedTuple):
    """Who is to hear of new messages on one queue, taken under the lock and told outside it."""

    queue: list[QueueListener]
    message: list[MessageListener]
    transmission: list[TransmissionListener]


class Listeners:
    """Queue, message, put and transmission listeners, and the announcement of new visible
    messages."""

    def __init__(self, lock: threading.RLock, *, listenable: Callable[[str], QueueIndex],
                 wake_getters: Callable[[], None], wake_admin: Callable[[], None], reads_fields: bool) -> None:
        """``listenable(queue)`` is the queue's index (raising when one may not listen there);
        ``wake_getters`` wakes the getters waiting (called with the lock held); ``wake_admin``
        tells the admin processor its queue has work; ``reads_fields``: the queue manager
        rule reads the fields of each message put for transmission (:func:`message_fields`)."""
        self._lock = lock
        self._listenable = listenable
        self._wake_getters = wake_getters
        self._wake_admin = wake_admin
        self._reads_fields = reads_fields
        self._queue: dict[str, list[QueueListener]] = {}
        self._message: dict[str, list[MessageListener]] = {}
        self._put: dict[str, list[PutListener]] = {}
        self._transmission: list[TransmissionListener] = []
        #: Counts the comings and goings of queue, message and transmission listeners: a
        #: queue's index keeps ``_hearers`` with the count it was found at (``QueueIndex.heard``;
        #: every put asks, issue 14), and it goes with the queue.
        self._generation = 0

    def add_listener(self, queue: str, fn: QueueListener) -> None:
        with self._lock:
            index = self._listenable(queue)
            self._queue.setdefault(index.definition.name, []).append(fn)
            self._generation += 1
            if index.rule is not None:
                index.rule.listener_added(index.definition)

    def remove_listener(self, queue: str, fn: QueueListener) -> None:
        with self._lock:
            index = self._listenable(queue)
            fns = self._queue.get(index.definition.name, [])
            if fn in fns:
                fns.remove(fn)
                self._generation += 1
                if index.rule is not None:
                    index.rule.listener_removed(index.definition)

    def listener_count(self, queue: str) -> int:
        """How many queue listeners ``queue`` has (a waiting channel GET is one)."""
        with self._lock:
            return len(self._queue.get(queue, ()))

    def add_message_listener(self, queue: str, fn: MessageListener) -> None:
        with self._lock:
            index = self._listenable(queue)
            self._message.setdefault(index.definition.name, []).append(fn)
            self._generation += 1
            if index.rule is not None:
                index.rule.listener_added(index.definition)

    def remove_message_listener(self, queue: str, fn: MessageListener) -> None:
        with self._lock:
            fns = self._message.get(self._listenable(queue).definition.name, [])
            if fn in fns:
                fns.remove(fn)
                self._generation += 1

    def add_put_listener(self, queue: str, fn: PutListener) -> None:
        with self._lock:
            index = self._listenable(queue)
            self._put.setdefault(index.definition.name, []).append(fn)

    def remove_put_listener(self, queue: str, fn: PutListener) -> None:
        with self._lock:
            fns = self._put.get(self._listenable(queue).definition.name, [])
            if fn in fns:
                fns.remove(fn)

    def add_transmission_listener(self, fn: TransmissionListener) -> None:
        with self._lock:
            self._transmission.append(fn)
            self._generation += 1

    def remove_transmission_listener(self, fn: TransmissionListener) -> None:
        with self._lock:
            if fn in self._transmission:
                self._transmission.remove(fn)
                self._generation += 1

    def transmission_listeners(self) -> list[TransmissionListener]:
        with self._lock:
            return list(self._transmission)

    def heard_put(self, index: QueueIndex, entry: Entry) -> None:
        """Tell the put listeners of ``entry`` (call with the lock held, inside the unit of
        work that submits the put)."""
        if entry.state != UNLOCKED or index.definition.kind not in APPLICATION_KINDS:
            return
        listeners = self._put.get(index.definition.name)
        if listeners:
            event = PutEvent(index.definition.name, entry.uid, entry.msg_id, entry.correl_id, entry.priority,
                             entry.data)
            for fn in list(listeners):
                fn(event)

    def heard_puts(self, made: list[tuple[QueueIndex, Entry]]) -> None:
        """:meth:`heard_put` of each of ``made`` (the puts of one ``put_all``); nothing to do
        when no queue has a put listener."""
        if self._put:
            for index, entry in made:
                self.heard_put(index, entry)

    def announce(self, index: QueueIndex, entries: list[Entry]) -> None:
        """Wake waiters, then tell listeners (outside the lock: a listener may call back)."""
        if not entries:
            return
        with self._lock:
            hearers = self.hearers(index)
        if hearers is not None:
            self.tell(index, entries, hearers)

    def hearers(self, index: QueueIndex) -> Hearers | None:
        """Wake the getters waiting (call with the lock held) and say who is to hear of new
        messages on ``index``: None when nobody is (then :meth:`tell` has nothing to do)."""
        self._wake_getters()
        return self._hearers(index)

    def hearers_each(self, added: list[tuple[QueueIndex, Entry]]) -> list[tuple[QueueIndex, Entry, Hearers]]:
        """:meth:`hearers` for each newly visible ``(index, entry)`` (the puts of a
        ``put_all``), the getters woken once: those that someone is to hear of, to :meth:`tell`."""
        self._wake_getters()
        told = []
        for index, entry in added:
            heard = self._hearers(index)
            if heard is not None:
                told.append((index, entry, heard))
        return told

    def _hearers(self, index: QueueIndex) -> Hearers | None:
        definition = index.definition
        known = index.heard
        if known is not None and known[0] == self._generation and known[1] is definition:
            return known[2]
        heard = self._find_hearers(definition)
        index.heard = (self._generation, definition, heard)
        return heard

    def _find_hearers(self, definition: QueueDefinition) -> Hearers | None:
        local = definition.kind in APPLICATION_KINDS
        listeners = self._queue.get(definition.name) if local else None
        message_listeners = self._message.get(definition.name) if local else None
        transmission = self._transmission if definition.transmits else None
        if listeners or message_listeners or transmission or definition.kind == ADMIN:
            return Hearers(list(listeners or ()), list(message_listeners or ()), list(transmission or ()))
        return None

    def tell(self, index: QueueIndex, entries: list[Entry], hearers: Hearers) -> None:
        """Tell what :meth:`hearers` named of ``entries`` (outside the lock)."""
        name = index.definition.name
        if index.definition.kind == ADMIN:
            self._wake_admin()
        for fn in hearers.queue:
            fn(name)
        if not (hearers.message or hearers.transmission):
            return
        for entry in entries:
            event = MessageEvent(name, entry.uid, entry.msg_id, entry.correl_id, entry.priority)
            for mfn in hearers.message:
                mfn(event)
            if hearers.transmission:
                fields = message_fields(entry) if self._reads_fields else {}
                for tfn in hearers.transmission:
                    tfn(entry.target_qmgr, fields, False)
