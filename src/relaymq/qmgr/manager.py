"""The queue manager: queues, message states and operations (everyplace.md items 6-22;
seed 004 l.804-3136).

Thread model: one lock guards every index; operations change memory and submit the matching
store operations under the lock (so the store sees them in the same order), then wait for
durability *outside* the lock, so while one caller's fsync runs the next callers' work joins
the next batch (group commit). ``get(wait=...)`` blocks the calling thread on a condition;
an asyncio program uses :class:`relaymq.qmgr.aio.AsyncQueueManager`, which runs these calls
in worker threads.

Time is injected (``clock`` returns epoch seconds) so expiry and the confirm window are
tested without sleeping.
"""

from __future__ import annotations

import logging
import os
from functools import partial
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from relaymq.auth.authorities import ANONYMOUS
from relaymq.message.message import Message
from relaymq.message.mqdlh import MQDLH
from relaymq.message.mqmd import MQMD, PutFields, put_fields
from relaymq.qmgr import resolution as res
from relaymq.qmgr.admin import AdminProcessor
from relaymq.qmgr.dynamic_queues import DynamicQueues
from relaymq.qmgr.definitions import (
    ADMIN,
    HOLDING_KINDS,
    HOME_SERVER,
    LOCAL,
    STORE_AND_FORWARD,
    SYSTEM_ADMIN_QUEUE,
    SYSTEM_DEAD_LETTER_QUEUE,
    SYSTEM_QUEUES,
    UNLIMITED,
    QueueDefinition,
    make_definition,
)
from relaymq.qmgr.errors import (
    ConfirmIdRequired,
    NotAuthorized,
    DuplicateMessage,
    UnknownQueueManager,
    MessageExpired,
    MessageTooBig,
    NotAllowed,
    NotConnected,
    QueueError,
    QueueExists,
    QueueFull,
    QueueManagerClosed,
    QueueManagerDeleted,
    QueueNotEmpty,
    StoreInUse,
    UnknownQueue,
    UnknownUID,
)
from relaymq.qmgr.expiry import ExpireTime, expiry_deadline, is_expired
from relaymq.qmgr.listeners import Listeners, MessageListener, PutListener, QueueListener, TransmissionListener
from relaymq.qmgr.names import check_name
from relaymq.qmgr.queue_index import QueueIndex
from relaymq.qmgr.queue_security import QueueSecurity
from relaymq.qmgr.retrieval import Retrieval, SyncRoute, Waiting, envelope_of
from relaymq.qmgr.rules import QueueManagerRule, QueueRule, call_veto, load_rule
from relaymq.qmgr.states import PUT_UNCONFIRMED, UNLOCKED, Entry, Envelope
from relaymq.qmgr.store import MemoryQueueStore, Op, QueueStore, Ticket
from relaymq.qmgr.transmission import Pending, Transmission, rule_reads_fields

log = logging.getLogger("relaymq.qmgr")

#: The broker's database in its data directory (relaymq.store.factory.DATABASE_FILE).
BROKER_DATABASE = "relaymq.db"
MQMI_NONE = bytes(24)
#: MQAT_QMGR: the "application" that put a dead-lettered message is the queue manager.
MQAT_QMGR = 7
#: Why a message for this queue manager goes to the dead-letter queue instead of blocking its
#: route: its queue does not exist here (MQRC_UNKNOWN_OBJECT_NAME) or cannot ever take it
#: (MQRC_MSG_TOO_BIG_FOR_Q). A full queue or a rule veto may pass; expiry is not dead-lettered.
DEAD_LETTER_REASONS = frozenset({2085, 2030})
#: How long a confirmed UID is remembered for duplicate removal (spec decision), seconds.
DEFAULT_CONFIRM_WINDOW = 24 * 3600.0


class _Definitions(Mapping[tuple[str, str], QueueDefinition]):
    """The definitions of a queue manager's queues, read through (resolution looks up one or
    two keys per put: copying every definition each time cost more than the put itself)."""

    __slots__ = ("_queues",)

    def __init__(self, queues: dict[tuple[str, str], QueueIndex]) -> None:
        self._queues = queues

    def __getitem__(self, key: tuple[str, str]) -> QueueDefinition:
        return self._queues[key].definition

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._queues)

    def __len__(self) -> int:
        return len(self._queues)


class SyncRemote(SyncRoute, Protocol):
    """What the channel part provides for synchronous remote queues and discovery (items 10,
    20, 21): each call goes to ``queue`` on ``qmgr`` over a connection at once, and raises the
    destination's QueueError (or NotConnected). The get side's calls are :class:`SyncRoute`."""

    def reachable(self, qmgr: str) -> bool: ...
    def put(self, qmgr: str, queue: str, message: Message, *, uid: str | None = None, confirm: bool = True,
            confirm_id: int = 1, resend: bool = False, expire_at: int | None = None,
            transmission: bool = False) -> bytes: ...
    def confirm_put(self, qmgr: str, queue: str, uid: str) -> bool: ...


class QueueManager:
    """A queue manager with its queues, over a :class:`QueueStore`.

    It holds the queues' indexes, the message states by UID and the lock that guards them;
    three parts that own their own state do the rest, each told in its constructor what it
    uses of the manager: :class:`Retrieval` (get, browse, lock, confirmGet, undo and the
    waiting get), :class:`Transmission` (messages waiting for another queue manager) and
    :class:`Listeners` (who hears of a new message)."""

    def __init__(self, name: str, store: QueueStore | None = None, *, clock: Callable[[], float] = time.time,
                 confirm_window: float = DEFAULT_CONFIRM_WINDOW, rule: QueueManagerRule | str | None = None,
                 define_system_queues: bool = True, dead_letter_undeliverable: bool = True,
                 recreate: bool = False, administrators: tuple[str, ...] | None = None,
                 admin_processing: bool = True, security: QueueSecurity | None = None) -> None:
        self.name = check_name(name, "queue manager")
        #: Cryptor keys, sealing and the hop checks of the queue security properties.
        self.security = security if security is not None else QueueSecurity()
        #: (uid, queue, why) of stored messages that failed to open at start-up (altered).
        self.unreadable: list[tuple[str, str, str]] = []
        self.store = store if store is not None else MemoryQueueStore()
        self.clock = clock
        self.confirm_window = confirm_window
        self.rule: QueueManagerRule = (load_rule(rule, QueueManagerRule) if isinstance(rule, str)
                                       else rule or QueueManagerRule())
        #: Does the rule look at puts (a put of many copies skips the call when it does not)?
        self._rule_puts = getattr(type(self.rule), "put", None) is not QueueManagerRule.put
        #: Set by the channel part: synchronous remote puts and discovery go through it.
        self.remote: SyncRemote | None = None
        #: Who may do what to which queue (relaymq.auth.authorities: ``allows``); None: anyone.
        self.authorities: Any = None
        #: A channel PUT for a queue of this queue manager that cannot take it goes to the
        #: dead-letter queue (:meth:`dead_letter`) instead of staying on the sender.
        self.dead_letter_undeliverable = dead_letter_undeliverable
        self.dead_lettered = 0
        self._lock = threading.RLock()
        self._queues: dict[tuple[str, str], QueueIndex] = {}
        self._queue_aliases: dict[tuple[str, str], str] = {}
        self._qmgr_aliases: dict[str, str] = {}
        #: (queue, qmgr) -> its resolution, for puts that land on a local queue (which depends
        #: on the definitions and aliases only, not on connections): emptied by every change
        #: of a definition or alias (:meth:`_definitions_changed`).
        self._resolved: dict[tuple[str, str | None], res.Resolution] = {}
        self._by_uid: dict[str, Entry] = {}
        self._confirmed: dict[str, int] = {}
        self._seq = 0
        self._last_forget = 0
        self._closed = False
        self._quiescing = False
        #: Processes SYSTEM.ADMIN.QUEUE (relaymq.qmgr.admin); ``administrators`` are the users
        #: whose admin messages are obeyed (None: anyone who can put there; empty: nobody).
        self.admin = AdminProcessor(self, administrators) if admin_processing else None
        self._waiting = Waiting(self._lock)
        self._listeners = Listeners(self._lock, listenable=partial(self._holding_index, qmgr=None, operation="listen"),
                                    wake_getters=self._waiting.wake_if_any, wake_admin=self._wake_admin,
                                    reads_fields=rule_reads_fields(self.rule))
        self._retrieval = Retrieval(self, self._lock, self._waiting, self._listeners)
        self._transmission = Transmission(self, self._lock, self._listeners)
        #: Called with each deleted queue's definition, in the deleting thread, after the
        #: deletion is durable (the pub/sub service removes its subscriptions, item 19).
        self.queue_deleted_listeners: list[Callable[[QueueDefinition], None]] = []
        #: Model queues and temporary dynamic queues (relaymq.qmgr.dynamic_queues).
        self.dynamic = DynamicQueues(self)
        self._load(define_system_queues, recreate)
        self.dynamic.delete_left_by_crash()
        if self.admin is not None and (self.name, SYSTEM_ADMIN_QUEUE) in self._queues:
            self.admin.recover()
            if next(self._queues[(self.name, SYSTEM_ADMIN_QUEUE)].visible(), None) is not None:
                self.admin.wake()

    # -- authority (issue 15 finding 6) ---------------------------------------------------
    def authorize(self, principal: str | None, action: str, queue: str, *, qmgr: str | None = None) -> None:
        """The check every entrance makes before it acts for a caller (REST, channel peers,
        psc commands): raise NotAuthorized (2035) unless ``principal`` holds ``action``
        (put, get, browse, inq, set, define, delete) on ``queue``. ``principal`` None is the
        broker itself (trusted); ``qmgr`` only names the target in the refusal: a queue's
        profile is its name as addressed, whichever queue manager holds it."""
        if self.may(principal, action, queue):
            return
        where = f"{queue!r}" if qmgr is None or qmgr == self.name else f"{queue!r} on {qmgr!r}"
        who = "an anonymous caller" if principal == ANONYMOUS else f"{principal!r}"
        raise NotAuthorized(f"{who} has no {action} authority on queue {where}")

    def may(self, principal: str | None, action: str, queue: str) -> bool:
        """:meth:`authorize` as a yes or no (a listing shows only the queues one may inquire)."""
        return self.authorities is None or self.authorities.allows(principal, "queue", queue, action)

    # -- life cycle (item 28) -------------------------------------------------------------
    @classmethod
    def open(cls, name: str, data_dir: str | None, *, store: str = "sqlite", synchronous: str = "FULL",
             recreate: bool = False, engine: Any = None, **options: Any) -> QueueManager:
        """Open (creating if needed) queue manager ``name``. Its store is the broker's database
        when ``engine`` (a :class:`relaymq.store.engine.Engine`) is given: the queue manager then
        commits with every other part of the broker (a ``qmgr-<name>.db`` left by an earlier
        relaymq is imported once); else, for ``store="sqlite"``, the broker's database when
        ``data_dir`` is a broker's (``relaymq.db``, with the broker stopped) or else
        ``<data_dir>/qmgr-<name>.db``;
        ``data_dir`` None or ``store="memory"`` keeps everything in memory. A deleted queue
        manager (:meth:`delete`) is refused with QueueManagerDeleted unless ``recreate``."""
        check_name(name, "queue manager")
        from relaymq.qmgr.sqlite_store import SqliteQueueStore, import_legacy, store_path

        if engine is not None:
            if data_dir is not None:
                import_legacy(engine, data_dir, name)
            return cls(name, SqliteQueueStore(engine=engine, synchronous=synchronous), recreate=recreate,
                       **options)
        if data_dir is None or store == "memory" or data_dir == "memory":
            return cls(name, MemoryQueueStore(), **options)
        if store != "sqlite":
            raise ValueError(f"store must be 'sqlite' or 'memory', got {store!r}")
        broker_db = os.path.join(data_dir, BROKER_DATABASE)
        try:
            if os.path.exists(broker_db):
                # a broker's data directory (the broker stopped: its lock says so): the queues
                # are in the broker's database
                own = SqliteQueueStore(broker_db, synchronous)
                if os.path.exists(store_path(data_dir, name)):
                    import_legacy(own.engine, data_dir, name)
            else:
                own = SqliteQueueStore(store_path(data_dir, name), synchronous)
        except StoreInUse as exc:
            raise StoreInUse(f"queue manager {name}'s store is in use by another process (pid {exc.holder})",
                             exc.holder) from None
        try:
            return cls(name, own, recreate=recreate, **options)
        except BaseException:
            own.close()
            raise

    def _load(self, define_system_queues: bool, recreate: bool) -> None:
        loaded = self.store.load()
        if loaded.meta.get("deleted"):
            if not recreate:
                raise QueueManagerDeleted(f"queue manager {self.name} was deleted (its messages are kept in its store);"
                                          " open it with recreate=True to make a new one of that name")
            self.store.submit([("meta", "deleted", 0)]).wait()
        for definition in loaded.queues:
            self._install(definition)
        self._seq = max([loaded.meta.get("seq", 0), *(e.seq for e in loaded.entries)])
        self._confirmed = dict(loaded.confirmed)
        readable, failed = self.security.open_entries(loaded.entries)
        self.unreadable = [(e.uid, e.queue, error.message) for e, error in failed]
        for uid, queue, why in self.unreadable:
            log.error("queue manager %s: message %s on queue %r is not delivered: %s", self.name, uid, queue, why)
        for entry in sorted(readable, key=lambda e: e.seq):
            index = self._queues.get((entry.qmgr, entry.queue))
            if index is None:  # definition deleted with data kept: keep the rows, not in memory
                continue
            index.add(entry)
            self._by_uid[entry.uid] = entry
        self._retrieval.lock_ids_after(max((e.lock_id for e in loaded.entries), default=0))
        call_veto("activate", self.rule.activate, self)
        if define_system_queues:
            for qname, kind in SYSTEM_QUEUES.items():
                if (self.name, qname) not in self._queues:
                    self.define_queue(qname, kind)
        if self.rule.activate_queues(self):
            with self._lock:
                self._purge_expired_all()

    def close(self, quiesce: float = 0.0) -> None:
        """Stop (item 28). ``quiesce`` > 0: refuse new operations at once but let getters
        already waiting go on for up to that many seconds; 0: immediate. Either way every
        operation already acknowledged is durable (the store writes what is pending before
        it closes); waiting getters then return None."""
        if self.admin is not None:
            self.admin.stop()
        with self._lock:
            if self._closed:
                return
            self._quiescing = True
            self._waiting.drain(quiesce)
            self._closed = True
            self._waiting.wake()
        for index in list(self._queues.values()):
            if index.rule is not None:
                index.rule.close(index.definition)
        self.rule.close(self)
        self.store.close()

    @property
    def state(self) -> str:
        """``running``, ``quiescing`` (stopping: new work refused, waiting getters finish) or
        ``ended`` (closed): what the REST admin interface reports."""
        if self._closed:
            return "ended"
        return "quiescing" if self._quiescing else "running"

    def delete_queue_manager(self) -> None:
        """Delete this queue manager (item 28; seed l.1736-1760): remove every queue
        definition, the system queues' too, mark the store deleted so it can no longer be
        opened, and close it. The messages stay in the store, inaccessible (the seed deletes
        the definitions, not the queues' data). ``QueueManager.open(..., recreate=True)``
        makes a new queue manager of that name on the same store; a queue defined again with
        an old name has its messages back from the next open."""
        with self._lock:
            self._check_open()
            self._quiescing = True  # refuse new work from now on
            ops: list[Op] = [("unqueue", owner, name) for owner, name in self._queues]
            ops.append(("meta", "deleted", 1))
            ticket = self.store.submit(ops)
        try:
            ticket.wait()
        finally:
            self.close()

    def __enter__(self) -> QueueManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed or self._quiescing:
            raise QueueManagerClosed(f"queue manager {self.name!r} is closed")

    # -- definitions (items 6-9) ----------------------------------------------------------
    def _definitions_changed(self) -> None:
        """A definition or an alias changed (call with the lock held): forget the resolutions."""
        self._resolved.clear()

    def _install(self, definition: QueueDefinition) -> QueueIndex:
        rule = load_rule(definition.rule, QueueRule) if definition.rule else None
        index = QueueIndex(definition, rule)
        self._definitions_changed()
        self._queues[definition.key] = index
        for alias in definition.aliases:
            self._queue_aliases[(definition.owner, alias)] = definition.name
        if rule is not None:
            rule.activate(definition)
        return index

    def define_queue(self, name: str, kind: str = LOCAL, **properties: Any) -> QueueDefinition:
        """Define a queue (see :mod:`relaymq.qmgr.definitions` for types and properties).
        Raises QueueExists, BadName, BadProperty; durable on return."""
        self._check_open()
        definition = make_definition(name, kind, self.name, **properties)
        self.security.check(definition)
        with self._lock:
            taken = [(definition.owner, n) for n in (definition.name, *definition.aliases)]
            for key in taken:
                if key in self._queues or key in self._queue_aliases:
                    raise QueueExists(f"queue {key[1]!r} (on {key[0]!r}) is already defined")
            self._check_targets(definition)
            call_veto("queue add", self.rule.queue_added, self, definition)
            self._install(definition)
            ticket = self.store.submit([("queue", definition)])
        ticket.wait()
        return definition

    def _check_targets(self, definition: QueueDefinition) -> None:
        """Item 8 and the seed's note at l.611: two store-and-forward queues may not share a
        target queue manager, and a store-and-forward queue may not target the queue manager
        a home-server queue here pulls from (both would move the same messages)."""
        targets = set(definition.target_queue_managers) if definition.kind == STORE_AND_FORWARD else set()
        for other in self._queues.values():
            theirs = other.definition
            if theirs.key == definition.key:
                continue
            if theirs.kind == STORE_AND_FORWARD and definition.kind in (STORE_AND_FORWARD, HOME_SERVER):
                shared = set(theirs.target_queue_managers) & (targets or {definition.owner})
                if shared and definition.kind == STORE_AND_FORWARD:
                    raise QueueExists(f"store-and-forward queue {theirs.name!r} already serves"
                                      f" {sorted(shared)} (item 8: two may not share a target)")
                if shared:
                    raise QueueExists(f"home-server queue {definition.name!r} would pull from {definition.owner!r},"
                                      f" which store-and-forward queue {theirs.name!r} pushes to; a store-and-forward"
                                      " queue and a home-server queue may not have the same target (seed l.611)")
            if theirs.kind == HOME_SERVER and theirs.owner in targets:
                raise QueueExists(f"store-and-forward queue {definition.name!r} would push to {theirs.owner!r},"
                                  f" which home-server queue {theirs.name!r} pulls from; a store-and-forward queue"
                                  " and a home-server queue may not have the same target (seed l.611)")

    def alter_queue(self, name: str, *, qmgr: str | None = None, **changes: Any) -> QueueDefinition:
        """Change properties of a queue (not its name, type or owner)."""
        self._check_open()
        with self._lock:
            index = self._index(name, qmgr)
            old = index.definition
            new = old.altered(**changes)
            self.security.check(new)
            self._definitions_changed()
            for alias in old.aliases:
                self._queue_aliases.pop((old.owner, alias), None)
            for alias in new.aliases:
                if (new.owner, alias) in self._queues or (new.owner, alias) in self._queue_aliases:
                    for a in old.aliases:
                        self._queue_aliases[(old.owner, a)] = old.name
                    raise QueueExists(f"alias {alias!r} is already a queue or alias")
            for alias in new.aliases:
                self._queue_aliases[(new.owner, alias)] = new.name
            index.definition = new
            if index.rule is not None:
                index.rule.attribute_changed(old, new)
            ticket = self.store.submit([("queue", new)])
        ticket.wait()
        return new

    def delete_queue(self, name: str, *, qmgr: str | None = None, purge: bool = False) -> None:
        """Delete a definition. A queue holding messages is refused (QueueNotEmpty) unless
        ``purge``; expired messages are removed first (seed l.366-368)."""
        self._check_open()
        with self._lock:
            index = self._index(name, qmgr)
            definition = index.definition
            self._purge_expired(index)
            if len(index) and not purge:
                raise QueueNotEmpty(f"queue {definition.name!r} holds {len(index)} messages")
            call_veto("queue remove", self.rule.queue_removed, self, definition)
            ops: list[Op] = []
            for entry in list(index.entries.values()):
                self._drop(index, entry, ops)
            del self._queues[definition.key]
            self._definitions_changed()
            for alias in definition.aliases:
                self._queue_aliases.pop((definition.owner, alias), None)
            ops.append(("unqueue", definition.owner, definition.name))
            ticket = self.store.submit(ops)
            if index.rule is not None:
                index.rule.close(definition)
        ticket.wait()
        self.dynamic.forget(definition)
        for listener in list(self.queue_deleted_listeners):
            listener(definition)

    def queue_names(self) -> list[str]:
        """Names of the queues owned by this queue manager (local, dead-letter, admin, S&F)."""
        with self._lock:
            return sorted(name for owner, name in self._queues if owner == self.name)

    def definitions(self) -> list[QueueDefinition]:
        """Every definition, remote and home-server ones included."""
        with self._lock:
            return [index.definition for index in self._queues.values()]

    def queue(self, name: str, *, qmgr: str | None = None) -> QueueDefinition:
        """The definition of ``name`` (an alias finds its queue)."""
        with self._lock:
            return self._index(name, qmgr).definition

    def depth(self, name: str, *, qmgr: str | None = None) -> int:
        """Messages on the queue in any state (expired ones are removed first, seed l.370)."""
        with self._lock:
            index = self._index(name, qmgr)
            self._purge_expired(index)
            return len(index)

    def is_local_name(self, name: str) -> bool:
        """Is ``name`` this queue manager, directly or through its aliases (item 27)?"""
        with self._lock:
            try:
                return res.resolve_qmgr_alias(name, self._qmgr_aliases) == self.name
            except UnknownQueueManager:
                return False

    def add_qmgr_alias(self, alias: str, target: str) -> None:
        """Make ``alias`` resolve to queue manager ``target`` (item 27; in memory: the channel
        part restores its connection definitions at start)."""
        check_name(alias, "queue manager")
        check_name(target, "queue manager")
        with self._lock:
            self._qmgr_aliases[alias] = target
            self._definitions_changed()

    def remove_qmgr_alias(self, alias: str) -> None:
        with self._lock:
            self._qmgr_aliases.pop(alias, None)
            self._definitions_changed()

    def _index(self, name: str, qmgr: str | None) -> QueueIndex:
        owner = res.resolve_qmgr_alias(qmgr, self._qmgr_aliases) if qmgr else self.name
        index = self._queues.get((owner, name))
        if index is None:
            real = self._queue_aliases.get((owner, name))
            index = self._queues.get((owner, real)) if real is not None else None
        if index is None:
            raise UnknownQueue(f"no queue {name!r} on queue manager {owner!r}")
        return index

    def _holding_index(self, name: str, qmgr: str | None, operation: str, internal: bool = False) -> QueueIndex:
        index = self._index(name, qmgr)
        if index.definition.kind == ADMIN and not internal:
            raise NotAllowed(f"{operation} is not possible on admin queue {name!r}: the queue manager processes its"
                             " messages (put a request there; the answer goes to its ReplyToQ)")
        if index.definition.kind not in HOLDING_KINDS:
            raise NotAllowed(f"{operation} is not possible on {index.definition.kind} queue {name!r}"
                             f"{' (mode ' + index.definition.mode + ')' if index.definition.kind == 'remote' else ''}")
        return index

    # -- resolution (item 22) -------------------------------------------------------------
    def resolve(self, queue: str, qmgr: str | None = None) -> res.Resolution:
        """Which queue a put to (qmgr, queue) lands on; see :mod:`relaymq.qmgr.resolution`."""
        known = self._resolved.get((queue, qmgr))
        if known is not None:
            return known
        with self._lock:
            resolved = res.resolve(self.name, qmgr or self.name, queue, definitions=_Definitions(self._queues),
                                   queue_aliases=self._queue_aliases, qmgr_aliases=self._qmgr_aliases,
                                   reachable=self.remote.reachable if self.remote is not None else None)
            if resolved.kind == res.LOCAL_QUEUE:
                self._resolved[(queue, qmgr)] = resolved
            return resolved

    # -- put (items 11, 12, 18, 19) -------------------------------------------------------
    def put(self, queue: str, message: Message, *, qmgr: str | None = None, confirm_id: int = 0,
            uid: str | None = None, resend: bool = False, expire_time: ExpireTime | None = None,
            transmission: bool = False, wait: bool = True) -> bytes:
        """Put ``message`` to ``queue`` on ``qmgr`` (default: this one); returns the MsgId.

        Durable on return; with ``wait=False`` only submitted to the store, for a caller that
        waits for the store itself before it acknowledges (the broker's event loop, inside a
        unit of work: a publication's copies for queue subscribers commit with its other
        copies); the message becomes visible to getters once its operations are in the batch,
        so no get can be submitted before the put. With ``confirm_id > 0`` the message stays invisible until
        :meth:`confirm_put` (or is removed by :meth:`undo`). ``uid`` is given by a sending
        queue manager for assured delivery: a UID already here is a DuplicateMessage unless
        ``resend`` replaces an unconfirmed copy; a UID remembered as confirmed is a
        DuplicateMessage whose message says so. MQMD.MsgId of NONE is filled in; MQMD.Priority
        -1 takes the queue's default priority. ``transmission`` (set by the channel receiver)
        says the message travels by asynchronous transmission: relayed over a synchronous
        route it stays so, and its destination dead-letters it rather than refusing it.
        """
        self._check_open()
        resolved = self.resolve(queue, qmgr)
        if resolved.kind in res.SYNCHRONOUS_ROUTES:
            return self._sync_put(resolved, message, confirm_id, uid, resend, expire_time, transmission)
        definition = resolved.definition
        assert definition is not None
        with self._lock:
            self._check_open()
            index = self._live_index(definition)
            ops: list[Op] = []
            entry = self._new_entry(index, resolved, message, confirm_id, uid, resend, expire_time, ops)
            ops.append(("meta", "seq", entry.seq))
            with self.store.unit():  # the put listeners' submissions (the archive) commit with it
                if not wait and self.store.defers:
                    self._submit_placed([(index, entry)], ops)
                    index.pending += 1  # counts toward max_depth until it is added
                    return entry.msg_id
                index.add(entry)
                self._by_uid[entry.uid] = entry
                ticket = self.store.submit(ops)
                self._listeners.heard_put(index, entry)
        if wait:
            self._finish(ticket, [entry])
        if entry.state == UNLOCKED:
            self._listeners.announce(index, [entry])
        return entry.msg_id

    def put_all(self, puts: Iterable[tuple[str, Message]]) -> list[bytes | QueueError]:
        """``put(queue, message, wait=False)`` for each of ``puts`` (queues of this queue
        manager), in one hold of the lock and one submission to the store: the copies of one
        publication for its queue subscribers (issue 14). Returns, in order, each put's MsgId
        or the QueueError that refused it; the others are still made. A queue reached over a
        synchronous route is put to on its own afterwards, as ``put`` does. The puts share one
        reading of the clock (one instant: their expiry counts from it)."""
        self._check_open()
        results: list[bytes | QueueError] = []
        made: list[tuple[QueueIndex, Entry]] = []
        later: list[tuple[int, str, Message]] = []
        ops: list[Op] = []
        now = self._now_ms()
        with self._lock, self.store.unit():
            self._check_open()
            try:
                for queue, message in puts:
                    self._place_one(queue, message, results, later, ops, made, now)
                if made:  # the puts' one high-water mark (one row each would coalesce to it anyway)
                    ops.append(("meta", "seq", self._seq))
            except BaseException:
                if self.store.defers:  # nothing was submitted: no put of them counts
                    for index, _entry in made:
                        index.pending -= 1
                raise
            self._submit_placed(made, ops)
        if not self.store.defers:
            for index, entry in made:
                if entry.state == UNLOCKED:
                    self._listeners.announce(index, [entry])
        for at, queue, message in later:
            try:
                results[at] = self.put(queue, message, wait=False)
            except QueueError as error:
                results[at] = error
        return results

    def _live_index(self, definition: QueueDefinition) -> QueueIndex:
        """The index of the queue a put resolved to, still defined (held under the lock)."""
        index = self._queues.get(definition.key)
        if index is None:
            raise UnknownQueue(f"queue {definition.name!r} was deleted")
        return index

    def _place_one(self, queue: str, message: Message, results: list[bytes | QueueError],
                   later: list[tuple[int, str, Message]], ops: list[Op], made: list[tuple[QueueIndex, Entry]],
                   now: int) -> None:
        """One put of ``put_all``: its result, or its place in ``later`` (a synchronous route).
        A local put's entry counts on its queue at once (the next put's depth check sees it)
        and its operations join ``ops``."""
        try:
            resolved = self._resolved.get((queue, None))  # resolve's cache: local queues only
            if resolved is None:
                resolved = self.resolve(queue)
                if resolved.kind in res.SYNCHRONOUS_ROUTES:
                    later.append((len(results), queue, message))
                    results.append(b"")
                    return
            definition = resolved.definition
            assert definition is not None
            index = self._live_index(definition)
            entry = self._new_entry(index, resolved, message, 0, None, False, None, ops, now)
        except QueueError as error:
            results.append(error)
            return
        if self.store.defers:
            index.pending += 1  # counts toward max_depth until it is added
        else:
            index.add(entry)
            self._by_uid[entry.uid] = entry
        made.append((index, entry))
        results.append(entry.msg_id)

    def _submit_placed(self, made: list[tuple[QueueIndex, Entry]], ops: list[Op]) -> None:
        """Submit what ``put_all`` (or a ``put`` with ``wait=False``) placed, in one go (with the
        lock held, inside the unit); with a deferring store they join their queues once their
        operations are in the batch (``_added_all``)."""
        if not made:
            return
        if self.store.defers:
            self.store.submit_nowait(ops)
        else:
            self.store.submit(ops)
        self._listeners.heard_puts(made)
        if self.store.defers:
            self.store.after_submit(partial(self._added_all, made))

    def _added_all(self, made: list[tuple[QueueIndex, Entry]]) -> None:
        """Puts submitted with ``wait=False`` join their queues (their operations are in the batch)."""
        visible: list[tuple[QueueIndex, Entry]] = []
        queues, by_uid = self._queues, self._by_uid
        with self._lock:
            for placed in made:
                index, entry = placed
                index.pending -= 1
                if queues.get(index.definition.key) is not index:
                    continue  # the queue was deleted meanwhile: the store's row goes with the purge
                index.add(entry)
                by_uid[entry.uid] = entry
                if entry.state == UNLOCKED:
                    visible.append(placed)
            told = self._listeners.hearers_each(visible)  # as announce, in the same hold of the lock
        for index, entry, heard in told:
            self._listeners.tell(index, [entry], heard)

    def _sync_put(self, resolved: res.Resolution, message: Message, confirm_id: int, uid: str | None,
                  resend: bool, expire_time: ExpireTime | None, transmission: bool) -> bytes:
        """A put whose route here is synchronous (a sync remote definition or discovery): it
        goes to the destination at once and nothing is kept here (items 8, 21).

        An assured put (``confirm_id > 0``, or a ``uid`` from a sending queue manager) stays
        two-phase end to end: the destination holds it unconfirmed and ``confirm_put(uid,
        qmgr=, queue=)`` (a CONFIRM frame naming the destination) confirms it there (seed
        l.2640-2700, synchronous assured put). Otherwise the put is confirmed at once."""
        remote = self._remote_to(resolved.target_qmgr, resolved.target_queue)
        assured = confirm_id > 0 or uid is not None
        expire_at = expire_time.deadline(self._now_ms()) if expire_time is not None else None
        return remote.put(resolved.target_qmgr, resolved.target_queue, message, uid=uid, confirm=not assured,
                          confirm_id=max(confirm_id, 1), resend=resend, expire_at=expire_at,
                          transmission=transmission)

    def _remote_to(self, target_qmgr: str, target_queue: str) -> SyncRemote:
        remote = self.remote
        if remote is None or not remote.reachable(target_qmgr):
            raise NotConnected(f"no connection to queue manager {target_qmgr!r}"
                               f" for synchronous queue {target_queue!r}")
        return remote

    def _sync_route(self, queue: str, qmgr: str | None) -> tuple[str, str] | None:
        """(queue manager, queue) when an operation on ``queue`` at ``qmgr`` goes over a
        synchronous route (a sync remote definition or discovery, item 22); None when the
        queue is held here (or is not reachable synchronously: the caller then reports why)."""
        if qmgr is None:
            return None
        with self._lock:
            if res.resolve_qmgr_alias(qmgr, self._qmgr_aliases) == self.name:
                return None
        try:
            resolved = self.resolve(queue, qmgr)
        except UnknownQueueManager:
            return None
        if resolved.kind in res.SYNCHRONOUS_ROUTES:
            return resolved.target_qmgr, resolved.target_queue
        return None

    def _new_entry(self, index: QueueIndex, resolved: res.Resolution, message: Message, confirm_id: int,
                   uid: str | None, resend: bool, expire_time: ExpireTime | None, ops: list[Op],
                   now: int | None = None) -> Entry:
        """The entry a put adds to ``index``, once every check passed (duplicates, expiry, size,
        depth, the rules' vetoes), its store operations appended to ``ops`` (the caller records
        the sequence's high-water mark); ``now``: the put's instant (epoch ms) when the caller
        read the clock for a run of puts (``put_all``)."""
        definition = index.definition
        if not definition.active:
            raise NotAllowed(f"queue {definition.name!r} is not active")
        if now is None:
            now = self._now_ms()
        if uid is not None:
            self._replace_unconfirmed(index, uid, resend, ops)
        self._seq += 1
        seq = self._seq
        data, md = self._put_fields(message, definition, seq, now)
        deadline = expiry_deadline(now, definition.expiry, md.Expiry, expire_time)
        if is_expired(deadline, now):
            raise MessageExpired(f"message expired before it was put to {definition.name!r}")
        if data is None:
            data = message.to_bytes()
        self._check_room(index, len(data))
        if self._rule_puts:
            call_veto("put", self.rule.put, self, definition, message, resolved.target_qmgr)
        if index.rule is not None:
            call_veto("put", index.rule.put, definition, message)
        local = resolved.kind == res.LOCAL_QUEUE
        entry = Entry(uid or f"{self.name}:{now}:{seq}", definition.owner, definition.name, seq, min(md.Priority, 9),
                      data, md.MsgId, md.CorrelId, now, deadline, PUT_UNCONFIRMED if confirm_id > 0 else UNLOCKED,
                      max(confirm_id, 0), 0, "" if local else resolved.target_qmgr,
                      "" if local else resolved.target_queue)
        if definition.sealed_at_rest:  # else nothing to seal: ``sealed`` stays None
            self.security.seal_entry(definition, entry)
        ops.append(("entry", entry))
        return entry

    def _put_fields(self, message: Message, definition: QueueDefinition, seq: int,
                    now: int) -> tuple[bytes | None, MQMD | PutFields]:
        """The MQMD fields a put reads (Priority, MsgId, CorrelId, Expiry), MQMD.Priority -1 (as the
        queue's default) and a MsgId of NONE filled in first; with the message's bytes when they
        are stored as they are: a message made of stored bytes and not looked at since (a
        publication's copy for a queue subscriber, issue 14) is read where its fields are (or
        taken as its maker gave them), not decoded, when it needs no field filled in."""
        data = message.stored_bytes()
        if data is not None:
            fields = message.stored_fields() or put_fields(data)
            if fields is not None and fields.Priority >= 0 and fields.MsgId != MQMI_NONE:
                return data, fields
        md = message.mq.md
        if md.Priority < 0:
            md.Priority = definition.default_priority
        if md.MsgId == MQMI_NONE:
            md.MsgId = (b"RMQ" + self.name.encode("ascii")[:8].ljust(8, b".") + seq.to_bytes(8, "big")
                        + (now % 2**40).to_bytes(5, "big"))
        return None, md

    def _replace_unconfirmed(self, index: QueueIndex, uid: str, resend: bool, ops: list[Op]) -> None:
        """Duplicate removal for a put with a sender's ``uid`` (items 18, 19): a UID confirmed
        here, or held here without ``resend`` replacing an unconfirmed copy, is a
        DuplicateMessage (the queue rule hears of it); a resend drops the old copy."""
        definition = index.definition
        old = self._by_uid.get(uid)
        if uid in self._confirmed or (old is not None and not (resend and old.state == PUT_UNCONFIRMED)):
            if index.rule is not None:
                index.rule.duplicate_put(definition, uid)
            if old is None or uid in self._confirmed:
                raise DuplicateMessage(f"message {uid} was already put and confirmed here")
            raise DuplicateMessage(f"message {uid} is already on queue {old.queue!r}"
                                   f"{'' if resend else ' (put without Resend)'}")
        if old is not None:
            self._drop(self._queues[(old.qmgr, old.queue)], old, ops)  # item 19: resend replaces

    def _check_room(self, index: QueueIndex, size: int) -> None:
        """Raise MessageTooBig or QueueFull when a message of ``size`` bytes cannot go on
        ``index`` (expired messages are removed before a queue counts as full)."""
        definition = index.definition
        limit = definition.max_message_size
        if limit != UNLIMITED and size > limit:
            raise MessageTooBig(f"message of {size} bytes exceeds max_message_size {limit}"
                                f" of queue {definition.name!r}")
        if definition.max_depth != UNLIMITED and len(index) + index.pending >= definition.max_depth:
            self._purge_expired(index)
            if len(index) + index.pending >= definition.max_depth:
                raise QueueFull(f"queue {definition.name!r} is full (max_depth {definition.max_depth})")

    def dead_letter(self, message: Message, error: QueueError, *, qmgr: str, queue: str, uid: str | None = None,
                    confirm_id: int = 0, resend: bool = False) -> bool:
        """Put a message that cannot be delivered to ``queue`` on this queue manager
        (``error`` says why) on SYSTEM.DEAD.LETTER.QUEUE, behind an MQDLH carrying the reason
        code and the destination, as MQ does (seed l.618-622). Only for a message whose
        destination is this queue manager and an error in DEAD_LETTER_REASONS; returns False
        when that does not apply. Raises the dead-letter queue's own error (full, ...)."""
        if error.reason not in DEAD_LETTER_REASONS:
            return False
        with self._lock:
            if res.resolve_qmgr_alias(qmgr, self._qmgr_aliases) != self.name:
                return False
            if (self.name, SYSTEM_DEAD_LETTER_QUEUE) not in self._queues:
                return False
        dead = Message.from_bytes(message.to_bytes())
        md = dead.mq.md
        now = time.gmtime(self.clock())
        dead.mq.headers.insert(0, MQDLH(Reason=error.reason, DestQName=queue, DestQMgrName=qmgr,
                                        Encoding=md.Encoding, CodedCharSetId=md.CodedCharSetId, Format=md.Format,
                                        PutApplType=MQAT_QMGR, PutApplName=f"relaymq {self.name}"[:28],
                                        PutDate=time.strftime("%Y%m%d", now), PutTime=time.strftime("%H%M%S00", now)))
        self.put(SYSTEM_DEAD_LETTER_QUEUE, dead, confirm_id=confirm_id, uid=uid, resend=resend)
        self.dead_lettered += 1
        return True

    def confirm_put(self, uid: str, *, qmgr: str | None = None, queue: str | None = None) -> bool:
        """Make an unconfirmed put visible (item 12: in confirm order). Returns True when
        confirmed now, False when ``uid`` is remembered as confirmed already (a repeated
        confirm after a lost acknowledgement); raises UnknownUID otherwise.

        ``qmgr`` and ``queue`` name where the put went (the seed's confirmPutMessage(qmgr,
        queue, uid)): a put over a synchronous route is held unconfirmed at its destination
        and confirmed there."""
        self._check_open()
        with self._lock:
            entry = self._by_uid.get(uid)
            local = entry is not None and entry.state == PUT_UNCONFIRMED
        if not local and queue is not None:
            route = self._sync_route(queue, qmgr)
            if route is not None and uid not in self._confirmed:
                return self._remote_to(*route).confirm_put(route[0], route[1], uid)
        with self._lock:
            entry = self._by_uid.get(uid)
            if entry is None or entry.state != PUT_UNCONFIRMED:
                return self._already_confirmed(uid, "confirmPut")
            index = self._queues[(entry.qmgr, entry.queue)]
            self._seq += 1
            entry.seq, entry.state, entry.confirm_id = self._seq, UNLOCKED, 0
            index.show(entry)
            ops: list[Op] = [("entry", entry), ("meta", "seq", self._seq)]
            self._remember(uid, ops)
            with self.store.unit():
                ticket = self.store.submit(ops)
                self._listeners.heard_put(index, entry)
        self._finish(ticket, [])
        self._listeners.announce(index, [entry])
        return True

    def _already_confirmed(self, uid: str, what: str) -> bool:
        if uid in self._confirmed:
            return False
        raise UnknownUID(f"{what}: no unconfirmed message {uid} here and none confirmed recently")

    def _remember(self, uid: str, ops: list[Op]) -> None:
        """Remember a confirmed UID for the configured window (spec decision) and forget old
        ones now and then."""
        now = self._now_ms()
        self._confirmed[uid] = now
        ops.append(("confirmed", uid, now))
        window_ms = int(self.confirm_window * 1000)
        if now - self._last_forget > window_ms // 10:
            cutoff = now - window_ms
            for old in [u for u, at in self._confirmed.items() if at < cutoff]:
                del self._confirmed[old]
            ops.append(("forget", cutoff))
            self._last_forget = now

    def is_confirmed(self, uid: str) -> bool:
        """Is ``uid`` remembered as confirmed (within the window)?"""
        with self._lock:
            return uid in self._confirmed

    # -- get side (items 4, 11-17, 20): the Retrieval part ------------------------------------
    def get(self, queue: str, *, wait: float = 0.0, msg_id: bytes | None = None, correl_id: bytes | None = None,
            selector: str | None = None, fields: dict[str, Any] | None = None, confirm_id: int = 0,
            qmgr: str | None = None, durable: bool = True) -> Message | None:
        """Destructive get of the first match, priority then FIFO (item 15); None when
        nothing matches within ``wait`` seconds. See :meth:`get_envelope` for the UID."""
        envelope = self.get_envelope(queue, wait=wait, msg_id=msg_id, correl_id=correl_id, selector=selector,
                                     fields=fields, confirm_id=confirm_id, qmgr=qmgr, durable=durable)
        return envelope.message if envelope is not None else None

    def get_envelope(self, queue: str, *, wait: float = 0.0, msg_id: bytes | None = None,
                     correl_id: bytes | None = None, selector: str | None = None,
                     fields: dict[str, Any] | None = None, confirm_id: int = 0, uid: str | None = None,
                     lock_id: int = 0, qmgr: str | None = None, _admin: bool = False,
                     durable: bool = True) -> Envelope | None:
        """Get with everything (:meth:`Retrieval.get_envelope`): with ``confirm_id > 0`` the
        message stays get-unconfirmed until :meth:`confirm_get`; ``uid`` + ``lock_id`` take a
        locked message; ``wait`` > 0 blocks this thread (waitForMessage, item 16)."""
        return self._retrieval.get_envelope(queue, wait=wait, msg_id=msg_id, correl_id=correl_id, selector=selector,
                                            fields=fields, confirm_id=confirm_id, uid=uid, lock_id=lock_id,
                                            qmgr=qmgr, _admin=_admin, durable=durable)

    wait_for_message = get_envelope  # item 16: a get that waits (seed l.2138-2151)

    def browse(self, queue: str, *, msg_id: bytes | None = None, correl_id: bytes | None = None,
               selector: str | None = None, fields: dict[str, Any] | None = None, limit: int | None = None,
               qmgr: str | None = None) -> list[Message]:
        """Copies of the visible matching messages in get order, nothing removed."""
        return [e.message for e in self.browse_envelopes(queue, msg_id=msg_id, correl_id=correl_id,
                                                          selector=selector, fields=fields, limit=limit, qmgr=qmgr)]

    def browse_envelopes(self, queue: str, *, msg_id: bytes | None = None, correl_id: bytes | None = None,
                         selector: str | None = None, fields: dict[str, Any] | None = None,
                         limit: int | None = None, qmgr: str | None = None, _lock_confirm: int = 0) -> list[Envelope]:
        """Envelopes of the visible matching messages in get order (:meth:`Retrieval.browse_envelopes`)."""
        return self._retrieval.browse_envelopes(queue, msg_id=msg_id, correl_id=correl_id, selector=selector,
                                                fields=fields, limit=limit, qmgr=qmgr, _lock_confirm=_lock_confirm)

    def browse_and_lock(self, queue: str, *, confirm_id: int, msg_id: bytes | None = None,
                        correl_id: bytes | None = None, selector: str | None = None,
                        fields: dict[str, Any] | None = None, limit: int | None = None,
                        qmgr: str | None = None) -> list[Envelope]:
        """Lock the current matches (item 13); each envelope carries the lock id that get,
        delete and unlock need. ``confirm_id`` (> 0) lets :meth:`undo` unlock them all."""
        if confirm_id <= 0:
            raise ConfirmIdRequired("browse_and_lock needs confirm_id > 0")
        return self.browse_envelopes(queue, msg_id=msg_id, correl_id=correl_id, selector=selector, fields=fields,
                                     limit=limit, qmgr=qmgr, _lock_confirm=confirm_id)

    def unlock(self, queue: str, uid: str, lock_id: int, *, qmgr: str | None = None) -> None:
        """Unlock a message locked by browseAndLock; only the locker (its lock id) may."""
        self._retrieval.unlock(queue, uid, lock_id, qmgr=qmgr)

    def delete(self, queue: str, uid: str, *, lock_id: int = 0, qmgr: str | None = None) -> None:
        """Delete exactly the message ``uid`` (item 14); a locked one needs its lock id."""
        self._retrieval.delete(queue, uid, lock_id=lock_id, qmgr=qmgr)

    def confirm_get(self, uid: str, *, qmgr: str | None = None, queue: str | None = None) -> bool:
        """Delete a get-unconfirmed message (item 20): :meth:`Retrieval.confirm_get`."""
        return self._retrieval.confirm_get(uid, qmgr=qmgr, queue=queue)

    def undo(self, queue: str, confirm_id: int, *, qmgr: str | None = None) -> int:
        """Undo every operation made with ``confirm_id`` on ``queue`` (item 17): :meth:`Retrieval.undo`."""
        return self._retrieval.undo(queue, confirm_id, qmgr=qmgr)

    # -- transmission (items 18, 23-25, 32): the Transmission part --------------------------
    def pending_transmission(self, remote_qmgr: str, *, pull: bool = False,
                             limit: int | None = None) -> list[tuple[str, str, Message]]:
        """Confirmed messages waiting to go to ``remote_qmgr``, as (uid, target_queue, message);
        see :meth:`pending_messages`."""
        return [(p.uid, p.queue, p.message) for p in self.pending_messages(remote_qmgr, pull=pull, limit=limit)]

    def pending_messages(self, remote_qmgr: str, *, pull: bool = False, limit: int | None = None,
                         store_queue: str | None = None) -> list[Pending]:
        """Confirmed messages waiting to go to ``remote_qmgr``: :meth:`Transmission.pending_messages`."""
        return self._transmission.pending_messages(remote_qmgr, pull=pull, limit=limit, store_queue=store_queue)

    def pending_count(self) -> int:
        """Confirmed messages waiting for transmission on every transmitting queue (seed l.5339)."""
        return self._transmission.pending_count()

    def transmission_allowed(self, fields: dict[str, Any] | None = None) -> bool:
        """Does the queue manager rule let pending messages go now (:meth:`Transmission.transmission_allowed`)?"""
        return self._transmission.transmission_allowed(fields)

    def transmission_targets(self) -> list[str]:
        """Queue managers that have confirmed messages waiting here for them."""
        return self._transmission.transmission_targets()

    def trigger_transmission(self) -> bool:
        """Transmit everything pending now when the rule agrees (:meth:`Transmission.trigger_transmission`)."""
        return self._transmission.trigger_transmission()

    def transmitted(self, uid: str) -> None:
        """The remote queue manager confirmed ``uid``: remove it here (item 18)."""
        self._transmission.transmitted(uid)

    # -- listeners (item 16): the Listeners part ---------------------------------------------
    def add_listener(self, queue: str, fn: QueueListener) -> None:
        """``fn(queue)`` is called (in the putting thread) after a message on ``queue``
        becomes visible and durable. Local queues only (item 10)."""
        self._listeners.add_listener(queue, fn)

    def remove_listener(self, queue: str, fn: QueueListener) -> None:
        self._listeners.remove_listener(queue, fn)

    def listener_count(self, queue: str) -> int:
        """How many queue listeners ``queue`` has (each waiting asynchronous or channel GET is one)."""
        return self._listeners.listener_count(queue)

    def add_message_listener(self, queue: str, fn: MessageListener) -> None:
        """``fn(MessageEvent)``: queue name, UID, MsgID, CorrelID, priority (item 16)."""
        self._listeners.add_message_listener(queue, fn)

    def remove_message_listener(self, queue: str, fn: MessageListener) -> None:
        self._listeners.remove_message_listener(queue, fn)

    def add_put_listener(self, queue: str, fn: PutListener) -> None:
        """``fn(PutEvent)`` for every message put to ``queue`` (a two-phase put: when it is
        confirmed), with the stored bytes, when the put is submitted to the store: in the
        putter's thread and unit of work, with the queue manager's lock held, so what ``fn``
        submits to the same storage engine commits with the put (the archive, issue 14). ``fn``
        must not call the queue manager. Not called for messages made visible again (unlock,
        undo). An internal hook: queue rules are not told of it."""
        self._listeners.add_put_listener(queue, fn)

    def remove_put_listener(self, queue: str, fn: PutListener) -> None:
        self._listeners.remove_put_listener(queue, fn)

    def add_transmission_listener(self, fn: TransmissionListener) -> None:
        """``fn(remote_qmgr, fields, False)`` after a message for that queue manager is
        committed here (``fields``: :func:`relaymq.qmgr.listeners.message_fields` of it, for
        the rule), and ``fn(None, {}, True)`` when :meth:`trigger_transmission` was agreed."""
        self._listeners.add_transmission_listener(fn)

    def remove_transmission_listener(self, fn: TransmissionListener) -> None:
        self._listeners.remove_transmission_listener(fn)

    # -- internals ------------------------------------------------------------------------
    def _wake_admin(self) -> None:
        if self.admin is not None:
            self.admin.wake()

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _drop(self, index: QueueIndex, entry: Entry, ops: list[Op]) -> None:
        index.remove(entry)
        self._by_uid.pop(entry.uid, None)
        ops.append(("delete", entry.uid))

    def _make_visible(self, index: QueueIndex, entry: Entry) -> None:
        entry.state, entry.confirm_id, entry.lock_id = UNLOCKED, 0, 0
        index.show(entry)
        self._waiting.wake()

    def _expire(self, index: QueueIndex, entry: Entry, ops: list[Op]) -> None:
        """Remove an expired message; the queue rule hears of it and cannot prevent it."""
        self._drop(index, entry, ops)
        if index.rule is not None:
            try:
                index.rule.message_expired(index.definition, envelope_of(entry))
            except Exception:  # noqa: BLE001 - l.306: the rule cannot affect the deletion
                pass

    def _purge_expired(self, index: QueueIndex) -> None:
        now = self._now_ms()
        ops: list[Op] = []
        for entry in index.expired(now):
            self._expire(index, entry, ops)
        if ops:
            self.store.submit(ops)

    def _purge_expired_all(self) -> None:
        for index in list(self._queues.values()):
            self._purge_expired(index)

    def purge_expired(self) -> None:
        """Remove every expired message now (a periodic sweep calls this)."""
        with self._lock:
            self._purge_expired_all()

    def _finish(self, ticket: Ticket, undo_entries: Iterable[Entry]) -> None:
        """Wait for durability; if the store failed, the change is not kept in memory either."""
        try:
            ticket.wait()
        except Exception:
            with self._lock:
                for entry in undo_entries:
                    index = self._queues.get((entry.qmgr, entry.queue))
                    if index is not None:
                        index.remove(entry)
                    self._by_uid.pop(entry.uid, None)
            raise
