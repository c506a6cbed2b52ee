"""The bridge between the broker's in-memory state and the store (spec README decision 4).

Messages are shared by every delivery, retained slot and pending QoS 2 release that refers to
them; the store keeps one copy, counted here, and deletes it when the last reference goes.
Only persistent sessions are written: a clean session does not outlive the process anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from relaymq.broker.pins import Pins
from relaymq.broker.records import ReadEnd
from relaymq.store.base import QUEUED, DeliveryRecord, InboundRecord, SessionRecord, StoredMessage

if TYPE_CHECKING:
    from relaymq.broker.ack_watch import AckWatch
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Delivery, Session


class MessageRefs:
    """Reference counts of the messages held in the store.

    A queue's tail left unlisted at start (``Snapshot.unlisted``; broker/unlisted.py) is not
    counted until it is listed, so while a chunk of it is not, the ids its messages may have
    (``pin``) are never deleted for a count that reaches 0: the id leaves ``counts`` for
    ``deferred`` and its message stays in the store, for the sweep once the chunk is listed
    (``unpin``)."""

    def __init__(self, store) -> None:
        self.store = store
        self.counts: dict[int, int] = {}
        #: (low, high) of the ids each chunk of a tail not yet listed may refer to
        #: (broker/pins.py), and the lowest and highest of them (none while low > high): a
        #: release outside costs two comparisons, as a backlog drained in order releases
        #: below the chunks still pinned.
        self.pins = Pins()
        self.pins_low = 1
        self.pins_high = 0
        #: The ids whose count reached 0 while pinned: their messages wait for a sweep.
        self.deferred: set[int] = set()

    def acquire(self, message: StoredMessage) -> None:
        """Count one more reference; the first writes the message."""
        if self.take(message):
            self.store.put_message(message)

    def take(self, message: StoredMessage) -> bool:
        """Count one more reference without writing: True when it is the first, and the
        caller writes the message with the row that refers to it (one store call)."""
        counts = self.counts
        count = counts.get(message.msg_id)
        counts[message.msg_id] = 1 if count is None else count + 1
        return count is None

    def release(self, message: StoredMessage) -> None:
        self.release_id(message.msg_id)

    def release_id(self, msg_id: int) -> None:
        """Drop one reference to a stored message (the message object may not be in memory)."""
        if self.drop(msg_id):
            self.store.delete_message(msg_id)

    def drop(self, msg_id: int) -> bool:
        """Uncount one reference without writing: True when it was the last, and the caller
        deletes the message with the row that referred to it (one store call)."""
        counts = self.counts
        count = counts.get(msg_id)
        if count is None:
            return False
        if count <= 1:
            del counts[msg_id]
            if self.pinned(msg_id):
                self.deferred.add(msg_id)
                return False
            return True
        counts[msg_id] = count - 1
        return False

    def pinned(self, msg_id: int) -> bool:
        """Is the message kept for a tail's chunk not listed yet, whatever its count?"""
        if not self.pins_low <= msg_id <= self.pins_high:
            return False
        return self.pins.covers(msg_id)

    def pin(self, low: int, high: int) -> None:
        """A chunk of a tail left unlisted may refer to any message in ``low..high``: keep them."""
        self.pins.add(low, high)
        self.pins_low, self.pins_high = self.pins.bounds()

    def unpin(self, low: int, high: int) -> None:
        """The chunk that pinned ``low..high`` is listed (its references counted): the ids in
        it no other chunk pins are no longer kept (broker/unlisted.py sweeps them)."""
        self.pins.remove(low, high)
        self.pins_low, self.pins_high = self.pins.bounds()

    def add(self, msg_id: int) -> None:
        """Count a reference to a message already in the store (at restore)."""
        self.counts[msg_id] = self.counts.get(msg_id, 0) + 1

    def add_all(self, msg_ids: Iterable[int]) -> None:
        """``add`` for each of ``msg_ids`` (a restored backlog: one call, not one per message)."""
        counts = self.counts
        get = counts.get
        for msg_id in msg_ids:
            counts[msg_id] = get(msg_id, 0) + 1


def session_record(broker: Broker, session: Session) -> SessionRecord:
    """The session as stored: times in wall-clock seconds (the broker's monotonic clock means
    nothing to the next process), with its delayed will if one is waiting."""
    clock = broker.clock
    now_wall, now = clock.wall(), clock.monotonic()
    disconnected = None
    if session.disconnected_at is not None:
        disconnected = now_wall - (now - session.disconnected_at)
    will_msg_id = will_at = None
    will = broker.wills.pending.get(session.client_id)
    if will is not None and session.client_id in broker.wills.stored:
        due, message, _ = will
        will_msg_id, will_at = message.msg_id, now_wall + (due - now)
    return SessionRecord(session.client_id, session.protocol_level, session.expiry_interval,
                         disconnected, session.username, will_msg_id, will_at)


def save_session(broker: Broker, session: Session) -> None:
    """Write or remove the session record as its persistence requires."""
    if session.persistent:
        broker.store.put_session(session_record(broker, session))
        session.persisted = True
    elif session.persisted:
        broker.store.delete_session(session.client_id)
        session.persisted = False


def persist_delivery(broker: Broker, session: Session, delivery: Delivery, watch: AckWatch | None = None) -> None:
    """Store a delivery; with its message when it is the message's first reference: one
    store call either way."""
    message = delivery.message
    # the record is serialised at once by the store: the delivery's list is not copied
    record = DeliveryRecord(session.client_id, delivery.seq, message.msg_id, delivery.qos, delivery.retain,
                            delivery.packet_id, delivery.state, delivery.subscription_ids)
    if broker.refs.take(message):
        broker.store.put_message_and_delivery(message, record)
        writes = 2
    else:
        broker.store.put_delivery(record)
        writes = 1
    delivery.persisted = True
    if watch is not None and delivery.state != QUEUED:
        # routing a QoS 1 publication whose PUBACK may go early (ack_watch.py); only a delivery
        # going straight into flight is watched, so a watch (and the publisher's connection it
        # names) is held by at most a window of in-flight deliveries per session, never by a
        # queued backlog. A queued one's writes are not counted: that PUBACK waits for the commit.
        watch.watch(writes)
        delivery.watch = watch


def update_delivery(broker: Broker, session: Session, delivery: Delivery) -> None:
    if delivery.persisted:
        broker.store.update_delivery(session.client_id, delivery.seq, delivery.packet_id,
                                     delivery.state)


def update_deliveries(broker: Broker, session: Session, deliveries: list[Delivery]) -> None:
    """``update_delivery`` for each of a session's stored ``deliveries``, in one store call."""
    broker.store.update_deliveries(session.client_id, [(d.seq, d.packet_id, d.state) for d in deliveries])


def mark_released(broker: Broker, session: Session, deliveries: list[Delivery]) -> None:
    """The RELEASED states of a session's stored QoS 2 ``deliveries`` a read's PUBRECs moved
    (their packet ids are stored already: a QoS 2 PUBLISH goes out only once its id is
    durable), in one store call."""
    broker.store.mark_released(session.client_id, [d.seq for d in deliveries])


def record_sent(broker: Broker, session: Session) -> None:
    """The session's client went away: store the SENT state and packet id of its stored QoS 1
    deliveries in flight, which ``delivery.start`` sent without a write (their rows still say
    QUEUED), in one store call. A session not connected has exact rows, so a restart resends
    those under their packet ids with DUP=1 and the queued ones as new; only a crash while it
    was connected leaves QUEUED rows that may have been sent (persist_read.py)."""
    sent = [d for d in session.inflight.values() if d.qos == 1 and d.persisted]
    if sent:
        update_deliveries(broker, session, sent)


def forget_delivery(broker: Broker, session: Session, delivery: Delivery) -> None:
    forget_deliveries(broker, session, (delivery,))


def forget_deliveries(broker: Broker, session: Session, deliveries: Iterable[Delivery]) -> None:
    """Delete the stored ones of a session's ``deliveries``, each with its message when it held
    the last reference: one store call for all of them (a read's acknowledgements)."""
    drop = broker.refs.drop
    rows: list[tuple[int, int | None]] = []
    for delivery in deliveries:
        if delivery.persisted:
            msg_id = delivery.message.msg_id
            rows.append((delivery.seq, msg_id if drop(msg_id) else None))
            delivery.persisted = False
    if rows:
        broker.store.delete_deliveries(session.client_id, rows)


def persist_inbound(broker: Broker, session: Session, packet_id: int, message: StoredMessage) -> None:
    """Store a QoS 2 publication awaiting PUBREL: its message with the inbound state in one
    row (one store call, one write). A release earlier in the read whose clearing is still
    to be submitted (``settle_inbound``) names another message, so a packet id reused at once
    keeps its new state."""
    broker.refs.take(message)
    broker.store.put_message_and_inbound(message, InboundRecord(session.client_id, packet_id, message.msg_id))


def forget_inbound(broker: Broker, session: Session, message: StoredMessage) -> None:
    """Release a stored inbound QoS 2 state (PUBREL), with its message when it held the last
    reference, at the end of the read (a PUBREL is only handled inside one: ``settle_inbound``,
    one store call for the read's releases, inside its unit with their routing)."""
    msg_id = message.msg_id
    ReadEnd.of(broker.acknowledged, session).inbound.append((msg_id, broker.refs.drop(msg_id)))


def settle_inbound(broker: Broker, end: ReadEnd) -> None:
    """Release the inbound QoS 2 states ``forget_inbound`` left to ``end``, in one store call."""
    rows, end.inbound = end.inbound, []
    broker.store.delete_inbounds(rows)
