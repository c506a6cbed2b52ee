"""Restore from the store at start (Mosquitto's persist_read.c): sessions and their delayed
wills, subscriptions, queued and in-flight deliveries, inbound QoS 2 messages awaiting PUBREL,
retained messages; then the orphans a crash left between two writes are deleted. One function
per record type, each with names of its own."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.handle_subscribe import add_subscription_to_tree
from relaymq.broker.records import PendingWill
from relaymq.broker.session import Delivery, Session, made
from relaymq.store.base import QUEUED, DeliveryRecord, InboundRecord, QueueTail, SessionRecord, Snapshot, StoredMessage

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker

log = logging.getLogger("relaymq.broker")


def restore_snapshot(broker: Broker, snap: Snapshot) -> None:
    """Rebuild sessions, subscriptions, queues and retained messages from ``snap``."""
    now = broker.clock.monotonic()
    wall = broker.clock.wall()
    broker._next_msg_id = max(broker._next_msg_id, getattr(snap, "next_msg_id", 1))
    broker._next_seq = max(broker._next_seq, getattr(snap, "next_seq", 1))
    for record in snap.sessions.values():
        _restore_session(broker, record, snap.messages, now, wall)
    for subscription in snap.subscriptions:
        session = broker.sessions.get(subscription.client_id)
        if session is not None:
            session.subscriptions = made(session.subscriptions)
            session.subscriptions[subscription.topic_filter] = subscription
            add_subscription_to_tree(broker, session, subscription)
    # sessions connected when the broker stopped (a crash): their QUEUED QoS 1 rows may have
    # been sent (delivery.start writes no SENT state for them), so they go out with DUP=1
    crashed = {client_id for client_id, record in snap.sessions.items() if record.disconnected_at is None}
    for delivery in snap.deliveries:
        _restore_delivery(broker, delivery, snap.messages, delivery.client_id in crashed)
    for client_id, tail in snap.unlisted.items():
        _restore_unlisted(broker, client_id, tail)
    for inbound in snap.inbound:
        _restore_inbound(broker, inbound, snap.messages)
    for topic, msg_id in snap.retained.items():
        retained = snap.messages.get(msg_id)
        if retained is not None:
            broker.retained.set(topic, retained)
            broker.refs.add(msg_id)
    for msg_id in snap.messages:
        # an orphan a crash left between two writes; one a tail may refer to waits for the sweep
        if msg_id not in broker.refs.counts and not broker.refs.pinned(msg_id):
            broker.store.delete_message(msg_id)
        broker._next_msg_id = max(broker._next_msg_id, msg_id + 1)
    for delivery in snap.deliveries:
        broker._next_seq = max(broker._next_seq, delivery.seq + 1)
    for tail in snap.unlisted.values():
        broker._next_seq = max(broker._next_seq, tail.through + 1)
    unlisted = sum(tail.count for tail in snap.unlisted.values())
    log.info("restored %d sessions, %d subscriptions, %d queued messages (%d left in the store "
             "until their sessions drain), %d inbound QoS 2 awaiting PUBREL, %d retained",
             len(snap.sessions), len(snap.subscriptions), len(snap.deliveries) + unlisted,
             unlisted, len(snap.inbound), len(snap.retained))


def _restore_session(broker: Broker, record: SessionRecord, messages: dict[int, StoredMessage],
                     now: float, wall: float) -> None:
    session = Session(record.client_id, record.protocol_level, record.expiry_interval, record.username)
    session.persisted = True
    session.overflow = broker.backpressure.default_overflow
    # The expiry clock runs on from the stored disconnect time, so the time the broker was down
    # counts; a session still connected when it stopped (a crash) counts from now, the first
    # moment it is known to be disconnected.
    session.disconnected_at = (now if record.disconnected_at is None
                               else now - max(0.0, wall - record.disconnected_at))
    broker.sessions[record.client_id] = session
    will = messages.get(record.will_msg_id) if record.will_msg_id is not None else None
    if will is not None:
        due = now + max(0.0, (record.will_at or wall) - wall)
        broker.wills.restored(record.client_id, PendingWill(due, will, record.username))
        broker.refs.add(will.msg_id)


def _restore_delivery(broker: Broker, record: DeliveryRecord, messages: dict[int, StoredMessage],
                      crashed: bool) -> None:
    """In flight again under its packet id, or queued; past the queue's limits it stays in
    the store until there is room (spilled). ``crashed``: its session was connected when the
    broker stopped, so a queued QoS 1 one may have been sent already: DUP=1 (MQTT 3.1.1
    3.3.1.1, "this might be re-delivery of an earlier attempt")."""
    session = broker.sessions.get(record.client_id)
    message = messages.get(record.msg_id)
    if session is None or message is None:
        return
    broker.refs.add(message.msg_id)
    limits = broker.limits
    inflight = record.state != QUEUED and record.packet_id is not None and record.packet_id not in session.inflight
    if not inflight and (session.spilled or len(session.queue) >= limits.max_queued_messages or (
            limits.max_queued_bytes and session.queue
            and session.queued_bytes + len(message.payload) > limits.max_queued_bytes)):
        session.spill(record.seq, message.msg_id)
        return
    delivery = Delivery(record.seq, message, record.qos, record.retain, list(record.subscription_ids),
                        record.packet_id, record.state, persisted=True)
    if inflight and record.packet_id is not None:  # (inflight says it is not None)
        session.inflight = made(session.inflight)
        session.inflight[record.packet_id] = delivery
    else:
        delivery.state, delivery.packet_id = QUEUED, None
        delivery.maybe_sent = crashed and record.qos == 1
        session.enqueue(delivery)
    session.queued_bytes += len(message.payload)


def _restore_unlisted(broker: Broker, client_id: str, tail: QueueTail) -> None:
    """A session's queue past what the store read at start (``Snapshot.unlisted``): kept in
    the store unlisted, after everything in memory, listed and read back as it drains
    (broker/unlisted.py); the messages it may refer to are kept until it is listed."""
    session = broker.sessions.get(client_id)
    if session is None:
        return
    session.unlisted = tail
    for _, low, high in tail.chunks:
        broker.refs.pin(low, high)


def _restore_inbound(broker: Broker, record: InboundRecord, messages: dict[int, StoredMessage]) -> None:
    """A QoS 2 message received (PUBREC sent) and not yet released by PUBREL."""
    session = broker.sessions.get(record.client_id)
    message = messages.get(record.msg_id)  # the record is a state of the message's row
    if session is None or message is None:
        return  # a session ended before the crash: its message is an orphan
    session.inbound = made(session.inbound)
    session.inbound[record.packet_id] = message
    broker.refs.add(message.msg_id)
    session.inbound_bytes += len(message.payload)
