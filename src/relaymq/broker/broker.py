"""The Broker: the state every connection shares, and the session lifecycle.

It holds the sessions, the subscription tree, the retained tree and the store. Protocol
handling per packet lives in the handle_*.py modules; fan-out in routing.py and delivery.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from relaymq.broker import backpressure
from relaymq.broker.backpressure import Backpressure
from relaymq.broker import delivery as delivery_mod
from relaymq.broker import sys_tree
from relaymq.broker.handle_subscribe import remove_subscription
from relaymq.pubsub.model import REMOVED_EXPIRED, REMOVED_SESSION_ENDED
from relaymq.clock import Clock
from relaymq.broker.persist_read import restore_snapshot
from relaymq.broker.persistence import MessageRefs, save_session
from relaymq.broker.unlisted import list_all
from relaymq.broker.routing import process_publication
from relaymq.broker.session import Session
from relaymq.broker.shared import SharedGroup
from relaymq.broker.stats import BrokerStats
from relaymq.broker.wills import Wills
from relaymq.pubsub.retained import RetainedTree
from relaymq.pubsub.topictree import SubscriptionTree
from relaymq.store.base import NEVER_EXPIRES, Snapshot, Store, StoredMessage, StoreUnavailable

if TYPE_CHECKING:
    from relaymq.broker.connection import Connection
    from relaymq.broker.records import ReadEnd
    from relaymq.pubsub.lazy_view import LazyView

log = logging.getLogger("relaymq.broker")


class Broker:
    def __init__(self, config: Any, store: Store, clock: Clock | None = None,
                 passwords: Any = None, acl: Any = None) -> None:
        self.config = config
        self.limits = config.limits
        self.store = store
        self.clock = clock or Clock()
        self.passwords = passwords  # relaymq.auth.passwords.PasswordFile or None
        self.acl = acl  # relaymq.auth.acl.Acl or None (everything allowed)
        #: Why the subscription being removed from ``subscriptions`` goes, while it goes (set by
        #: handle_subscribe.remove_subscription; read by the tree's observers: item 45).
        self.removal_cause: str | None = None
        self.sessions: dict[str, Session] = {}
        # The open connections, as the keys of a dict (a set of 10,000 takes 52 to 105 bytes a
        # connection, a dict 30: issue 8, scenario 6)
        self.connections: dict[Connection, None] = {}
        self.subscriptions: SubscriptionTree = SubscriptionTree()
        self.retained: RetainedTree[StoredMessage] = RetainedTree()
        self.shared_groups: dict[tuple[str, str], SharedGroup] = {}  # (group, filter) -> group
        self.refs = MessageRefs(store)
        self.stats = BrokerStats()
        self.started_at = self.clock.monotonic()
        self._next_msg_id = 1
        self._next_seq = 1
        self._next_client_number = 1
        self._next_sys = 0.0
        # Set by the server: start/stop a listener ("1883" or "all", on/off).
        self.listener_control: Callable[[str, bool], bool] | None = None
        self.wills = Wills(self)  # wills.py: the delayed ones and publishing them
        # Set by the server: check a password off the event loop (bcrypt is slow on purpose):
        # fn(user, password, peer, done) and later done(ok). None: check here, synchronously.
        self.authenticator: Callable[[str, bytes | None, str, Callable[[bool], None]], None] | None = None
        # Called with every publication once it is routed (the message log, flows that listen
        # to topics): fn(message). A tap must not block; one that raises is logged and skipped.
        self.publication_taps: list[Callable[[StoredMessage], int | None]] = []
        # While the taps are called: the publication's view for content filters that routing
        # used, so a tap filtering it (the pub/sub engine's queue subscribers) evaluates each
        # filter text once with the sessions' filters (routing.process_publication).
        self.tapped_view: LazyView | None = None
        # Called with every new persistent session, saved, before its CONNACK (a cloned
        # broker's subscriptions replicated here are installed in it: relaymq.network.clones).
        self.session_openers: list[Callable[[Session], None]] = []
        # Full sessions holding publishers back, the listeners' overflow policies, the server's
        # call_soon (backpressure.py). One attribute: past 30 attributes an instance's __dict__
        # stops sharing its keys and every broker.<attribute> on the hot path gets slower
        # (bench/README.md, "Figures behind the constants").
        self.backpressure = Backpressure(getattr(config, "listeners", ()))
        # Sessions whose refill from the store waits for it to write again (a full disk:
        # delivery.refill); tick() pumps them once it does.
        self.refill_stalled: set[Session] = set()
        # What the read being handled acknowledged, by session (records.ReadEnd): the rows of
        # deliveries acknowledged and of inbound QoS 2 records released go, the RELEASED states
        # are stored and the windows refill once, at the end of the read (delivery.settle_acknowledged).
        self.acknowledged: dict[Session, ReadEnd] = {}

    # ------------------------------------------------------------------ identifiers
    def new_msg_id(self) -> int:
        mid = self._next_msg_id
        self._next_msg_id = mid + 1
        return mid

    def new_seq(self) -> int:
        seq = self._next_seq
        self._next_seq = seq + 1
        return seq

    def assign_client_id(self) -> str:
        """An id for a client that sent an empty one (3.1.1 clean session; 5.0 always)."""
        while True:
            cid = f"relaymq-{self._next_client_number:08d}"
            self._next_client_number += 1
            if cid not in self.sessions:
                return cid

    def new_message(self, topic: str, payload: bytes, qos: int, retain: bool,
                    properties: dict | None = None, expiry_interval: int | None = None) -> StoredMessage:
        now = self.clock.wall()
        expiry_at = now + expiry_interval if expiry_interval is not None else None
        return StoredMessage(self.new_msg_id(), topic, payload, qos, retain, properties or {},
                             expiry_at, now)

    def authenticate(self, user: str, password: bytes | None, peer: str,
                     done: Callable[[bool], None]) -> None:
        """Is ``password`` right for ``user``? The answer goes to ``done(ok)``, now or later."""
        if self.authenticator is not None:
            self.authenticator(user, password, peer, done)
        else:
            done(self.passwords is not None and self.passwords.check(user, password))

    @property
    def names_are_verified(self) -> bool:
        """Is a user name proven rather than claimed? With a password file it is (a name comes
        with its password), and when every listener requires a client certificate (the name is
        the certificate's). Only then does a name tell principals apart: a session belongs to
        its user (``handle_connect.owner_refusal``). The same condition as for administrators
        (``config._check_administrators``)."""
        if self.passwords is not None:
            return True
        listeners = getattr(self.config, "listeners", ())
        return bool(listeners) and all(listener.require_certificate for listener in listeners)

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` soon, outside the packet being handled (a held publisher resumes so):
        through ``backpressure.call_soon`` (the server's ``loop.call_soon``), else kept for
        ``run_deferred``."""
        state = self.backpressure
        if state.call_soon is not None:
            state.call_soon(fn)
        else:
            state.deferred.append(fn)

    def run_deferred(self) -> None:
        """Run what ``defer`` kept (no event loop given), including what those calls defer."""
        deferred = self.backpressure.deferred
        while deferred:
            deferred.pop(0)()

    # ------------------------------------------------------------------ sessions
    def end_session(self, session: Session, cause: str = REMOVED_SESSION_ENDED) -> None:
        """Discard a session: its subscriptions, queued and in-flight messages (mqtt.md item 20).
        ``cause``: why, for the subscriptions' Removed events (pubsub.md item 45)."""
        for topic_filter in list(session.subscriptions):
            remove_subscription(self, session, topic_filter, persist=False, cause=cause)
        for d in list(session.inflight.values()) + list(session.queue):
            delivery_mod.discard(self, session, d, persist=False)
        session.inflight.clear()
        session.clear_queue()
        list_all(self, session)  # a tail left in the store unlisted: its references are counted first
        while session.spilled:
            self.refs.release_id(session.spilled.popleft()[1])
        for msg in session.inbound.values():
            if msg is not None and session.persisted:
                self.refs.release(msg)
        session.inbound.clear()
        session.inbound_bytes = 0
        backpressure.unblock(self, session)  # its publishers go on without it
        if session.persisted:
            self.store.delete_session(session.client_id)
            session.persisted = False
        if self.sessions.get(session.client_id) is session:
            del self.sessions[session.client_id]
        # a session that ends publishes its delayed will now (MQTT 5 3.1.3.2)
        self.wills.fire(session.client_id)

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False,
                properties: dict | None = None, expiry_interval: int | None = None) -> int:
        """Publish from inside the broker (a flow, a ``psc`` command, the REST interface) as
        if a client had; returns the number of receiving clients. The topic is taken as
        valid: callers check names they did not make themselves (relaymq.pubsub.topics)."""
        with self.store.unit():  # every copy commits together
            return process_publication(self, self.new_message(topic, payload, qos, retain, properties,
                                                              expiry_interval), origin=None)

    # ------------------------------------------------------------------ restore
    def restore(self, snap: Snapshot) -> None:
        """Rebuild sessions, subscriptions, queues and retained messages from the store
        (persist_read.py)."""
        restore_snapshot(self, snap)

    def restore_stored(self, page: int = delivery_mod.BACKLOG_PAGE) -> None:
        """Restore from this broker's store; a session's queue past ``page`` queued messages
        waits there until the session drains that far (issue 16, row 9)."""
        restore_snapshot(self, self.store.load(page))

    # ------------------------------------------------------------------ time
    def tick(self) -> None:
        """Called about once a second by the server: keep-alive, retries, wills, expiry, $SYS."""
        now = self.clock.monotonic()
        self.run_deferred()
        for conn in list(self.connections):
            conn.check_timers(now)
        if self.backpressure.blocking:
            backpressure.check(self, now)
        if self.refill_stalled and self.store.write_error is None:
            stalled, self.refill_stalled = self.refill_stalled, set()
            for session in stalled:
                delivery_mod.pump(self, session)
        for cid in self.wills.fire_due(now):
            owner = self.sessions.get(cid)
            if owner is not None and owner.persisted:
                save_session(self, owner)  # the stored will is gone
        for session in [s for s in self.sessions.values() if s.expired(now)]:
            log.info("session %s expired", session.client_id)
            self.end_session(session, REMOVED_EXPIRED)
        interval = self.config.broker.sys_interval
        if interval and now >= self._next_sys:
            self._next_sys = now + interval
            sys_tree.publish_stats(self)

    def shutdown(self) -> None:
        """Close every connection without publishing wills, then flush the store."""
        for conn in list(self.connections):
            conn.shutdown()
        for session in self.sessions.values():
            if session.persistent:
                save_session(self, session)
        try:
            self.store.flush()
        except StoreUnavailable as exc:
            # Not stored, so never acknowledged: the store's close() tries once more and logs.
            log.error("stopping while the store cannot write: %s", exc)

    # ------------------------------------------------------------------ helpers
    def session_expiry_for(self, level: int, clean_start: bool, requested: int | None) -> int:
        if level < 5:
            return 0 if clean_start else NEVER_EXPIRES
        value = requested or 0
        return min(value, self.config.broker.session_expiry_max)
