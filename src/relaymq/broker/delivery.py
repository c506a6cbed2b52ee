"""Outbound delivery to one session: the queue, the in-flight window, retransmission
(mqtt.md items 7-12, 26; MQTT 5 receive maximum), and the limits that keep memory bounded.

QoS 0 goes straight to a connected client's link, or is dropped (and counted) when the client
is offline or its link is congested. QoS 1/2 joins the session queue (written to the store for
a persistent session) and moves into the in-flight window as slots free up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.persistence import forget_delivery, persist_delivery, update_delivery
from relaymq.broker.session import Delivery
from relaymq.mqtt import packets as p
from relaymq.store.base import QUEUED, RELEASED, SENT, StoredMessage

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session

log = logging.getLogger("relaymq.delivery")


def deliver(broker: Broker, session: Session, message: StoredMessage, qos: int, retain: bool,
            subscription_ids: list[int] | None = None) -> None:
    conn = session.connection
    if qos == 0:
        # mqtt.md item 26: QoS 0 is not kept for a disconnected client
        if conn is None or not conn.connected or conn.outbound_congested():
            broker.stats.publish_dropped += 1
            return
        conn.send_publish(message, 0, retain, None, False, subscription_ids)
        return
    limits = broker.limits
    size = len(message.payload)
    if len(session.queue) >= limits.max_queued_messages or (
            limits.max_queued_bytes and session.queued_bytes + size > limits.max_queued_bytes):
        broker.stats.publish_dropped += 1
        session.dropped += 1
        if session.dropped == 1 or session.dropped % 1000 == 0:
            log.warning("session %s: queue full (%d messages, %d bytes); %d messages dropped",
                        session.client_id, len(session.queue), session.queued_bytes, session.dropped)
        return
    d = Delivery(broker.new_seq(), message, qos, retain, list(subscription_ids or ()))
    if session.persistent:
        persist_delivery(broker, session, d)
    session.queue.append(d)
    session.queued_bytes += size
    if conn is not None and conn.connected:
        pump(broker, session)


def pump(broker: Broker, session: Session) -> None:
    """Move queued messages into the in-flight window while it has room."""
    conn = session.connection
    if conn is None or not conn.connected or conn.closed:
        return
    queue = session.queue
    inflight = session.inflight
    now = broker.clock.monotonic()
    wall = broker.clock.wall()
    while queue and len(inflight) < conn.send_quota and not conn.outbound_congested():
        d = queue.popleft()
        msg = d.message
        if msg.expiry_at is not None and msg.expiry_at <= wall:
            release(broker, session, d)  # MQTT 5 message expiry: never delivered late
            continue
        d.packet_id = session.next_packet_id()
        d.state = SENT
        d.sent_at = now
        inflight[d.packet_id] = d
        update_delivery(broker, session, d)
        if not conn.send_publish(msg, d.qos, d.retain, d.packet_id, False, d.subscription_ids):
            inflight.pop(d.packet_id, None)
            release(broker, session, d)


def resend_inflight(broker: Broker, session: Session) -> None:
    """On reconnect: PUBLISH again with DUP=1, or PUBREL for QoS 2 already received (item 8-9)."""
    conn = session.connection
    if conn is None:
        return
    now = broker.clock.monotonic()
    for pid, d in list(session.inflight.items()):
        d.sent_at = now
        if d.state == RELEASED:
            conn.send(p.Pubrel(pid))
        else:
            conn.send_publish(d.message, d.qos, d.retain, pid, True, d.subscription_ids)


def retransmit_due(broker: Broker, session: Session, now: float) -> None:
    """MQIsdp v3: retransmit unacknowledged messages on a timer (mqtt.md decision)."""
    interval = broker.config.broker.retry_interval
    conn = session.connection
    if not interval or conn is None:
        return
    for pid, d in session.inflight.items():
        if now - d.sent_at >= interval:
            d.sent_at = now
            if d.state == RELEASED:
                conn.send(p.Pubrel(pid))
            else:
                conn.send_publish(d.message, d.qos, d.retain, pid, True, d.subscription_ids)


def release(broker: Broker, session: Session, d: Delivery) -> None:
    """The delivery is finished (acknowledged, expired or refused): forget it."""
    session.queued_bytes -= len(d.message.payload)
    forget_delivery(broker, session, d)


def discard(broker: Broker, session: Session, d: Delivery, persist: bool) -> None:
    """Drop a delivery when its session ends; the session's store rows go with the session."""
    session.queued_bytes -= len(d.message.payload)
    if d.persisted:
        if persist:
            forget_delivery(broker, session, d)
        else:
            broker.refs.release(d.message)
            d.persisted = False


def acknowledged(broker: Broker, session: Session, packet_id: int, expected_state: int,
                 qos: int) -> Delivery | None:
    """Remove an in-flight delivery acknowledged by PUBACK (QoS 1) or PUBCOMP (QoS 2)."""
    d = session.inflight.get(packet_id)
    if d is None or d.qos != qos or d.state != expected_state:
        return None
    del session.inflight[packet_id]
    release(broker, session, d)
    pump(broker, session)
    return d


def received(broker: Broker, session: Session, packet_id: int) -> Delivery | None:
    """PUBREC for an outbound QoS 2 message: it now waits for PUBCOMP."""
    d = session.inflight.get(packet_id)
    if d is None or d.qos != 2:
        return None
    if d.state == SENT:
        d.state = RELEASED
        update_delivery(broker, session, d)
    return d


__all__ = ["deliver", "pump", "resend_inflight", "retransmit_due", "release", "discard",
           "acknowledged", "received", "QUEUED"]
