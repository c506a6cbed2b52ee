"""Outbound delivery to one session: the queue, the in-flight window, retransmission
(mqtt.md items 7-12, 26; MQTT 5 receive maximum), and the limits that keep memory bounded.

QoS 0 goes straight to a connected client's link, or is dropped (and counted) when the client
is offline or its link is congested. QoS 1/2 joins the session queue (written to the store for
a persistent session) and moves into the in-flight window as slots free up.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from relaymq.broker import backpressure
from relaymq.broker.persistence import (
    forget_deliveries, forget_delivery, mark_released, persist_delivery, settle_inbound, update_deliveries,
    update_delivery,
)
from relaymq.broker.records import ReadEnd
from relaymq.broker.session import Delivery, grown, made
from relaymq.broker.states import CONNECTED
from relaymq.broker.unlisted import list_unlisted
from relaymq.broker.stats import DROP_QOS0_NOT_CONNECTED, DROP_QUEUE_FULL
from relaymq.mqtt import packets as p
from relaymq.mqtt.reason_codes import QUOTA_EXCEEDED, SUCCESS
from relaymq.store.base import QUEUED, RELEASED, SENT, StoredMessage, StoreUnavailable

if TYPE_CHECKING:
    from relaymq.broker.ack_watch import AckWatch
    from relaymq.broker.broker import Broker
    from relaymq.broker.connection import Connection
    from relaymq.broker.session import Session

log = logging.getLogger("relaymq.delivery")

#: A listener's ``overflow`` policies (config.OVERFLOW_POLICIES): what a QoS 1/2 message for a
#: full session meets (``overflow``).
BLOCK, DROP_NEW, DROP_OLDEST = "block", "drop-new", "drop-oldest"

#: Deliveries kept only in the store come back this many at a time (``refill``), and a restart
#: reads a session's queue in full only this far (``Broker.restore_stored``): issue 16, row 9,
#: where decoding a backlog of 100,000 at start delayed the broker by more than a second. Ten
#: receive windows of the default ``max_inflight``, read in a few milliseconds.
BACKLOG_PAGE = 1000


def deliver(broker: Broker, session: Session, message: StoredMessage, qos: int, retain: bool,
            subscription_ids: list[int] | None = None, watch: AckWatch | None = None) -> None:
    conn = session.connection
    if qos == 0:
        deliver_qos0(broker, conn, message, retain, subscription_ids)
        return
    limits = broker.limits
    size = len(message.payload)
    queue = session.queue
    if session.spilled or session.unlisted is not None or len(queue) >= limits.max_queued_messages or (
            limits.max_queued_bytes and session.queued_bytes + size > limits.max_queued_bytes):
        overflow(broker, session, message, qos, retain, subscription_ids, watch)
        return
    d = Delivery(broker.new_seq(), message, qos, retain, list(subscription_ids) if subscription_ids else [])
    session.queued_bytes += size
    if (not queue and conn is not None and conn.state is CONNECTED
            and len(session.inflight) < conn.send_quota and not conn.outbound_congested()):
        # Nothing waits before it and the window has room: straight into flight, so a
        # persistent session stores it once, already in its in-flight state.
        if message.expiry_at is not None and message.expiry_at <= broker.clock.wall():
            release(broker, session, d)  # MQTT 5 message expiry: never delivered late
        else:
            start(broker, session, conn, d, watch)
            if d.packet_id in session.inflight:  # not finished at once as too large for the client
                _cut_through(broker, conn, size)
        return
    if session.persistent:
        persist_delivery(broker, session, d)
    session.enqueue(d)
    if conn is not None and conn.connected:
        pump(broker, session)


def deliver_qos0(broker: Broker, conn: Connection | None, message: StoredMessage, retain: bool,
                 subscription_ids: list[int] | None) -> None:
    """QoS 0 is sent at once (cut through) or not at all: mqtt.md item 26, it is not kept for
    a disconnected client, nor queued for a congested one (dropped and counted). Routing calls
    it directly for a QoS 0 delivery (one call less per delivery of a fan-out)."""
    if conn is None or not conn.connected or conn.outbound_congested():
        broker.stats.dropped_by_reason[DROP_QOS0_NOT_CONNECTED] += 1
        broker.stats.bytes_dropped += len(message.payload)
        return
    if conn.send_publish(message, 0, retain, None, False, subscription_ids):
        size = len(message.payload)  # cut through (item 44), counted here: once per delivery
        broker.stats.bytes_cut_through += size
        conn.bytes_cut_through += size


def overflow(broker: Broker, session: Session, message: StoredMessage, qos: int, retain: bool,
             subscription_ids: list[int] | None, watch: AckWatch | None = None) -> None:
    """The in-memory queue is full (issue 2, limits). A persistent session keeps the message in
    the store only, up to ``max_stored_messages``. Past that, or past the in-memory limits for a
    clean session, the session's ``overflow`` policy (its client's listener) decides (issue 14):

    * ``block``: the session holds back the clients that publish to it (backpressure.py) until
      it drains; this message is still taken (it was routed before the session was full, or it
      comes from inside the broker and cannot be held back), up to twice the limit;
    * ``drop-oldest``: the oldest queued messages make room for this one;
    * ``drop-new``: this one is dropped; a connected client that let its persistent backlog
      reach the hard limit is disconnected (MQTT 5 reason 0x97, quota exceeded).

    Drops are counted (``publish_dropped``, ``overflow_dropped``, the session's ``dropped``)."""
    limits = broker.limits
    backlog = len(session.queue) + session.in_store_only() + len(session.inflight)
    persistent = session.persistent
    if persistent and backlog < limits.max_stored_messages:
        _spill(broker, session, message, qos, retain, subscription_ids)
        return
    policy = session.overflow
    if policy == BLOCK and _take_while_blocking(broker, session, message, qos, retain, subscription_ids, backlog):
        return
    size = len(message.payload)
    if policy == DROP_OLDEST and _make_room(broker, session, size):
        deliver(broker, session, message, qos, retain, subscription_ids, watch)
        return
    conn = session.connection
    if policy == DROP_NEW and persistent and conn is not None and conn.state is CONNECTED:
        _count_drop(broker, session, "dropped", size, disconnect=True)
        conn.disconnect_with(QUOTA_EXCEEDED, f"{backlog} messages waiting: max_stored_messages reached")
    else:
        _count_drop(broker, session, "dropped", size)


def _take_while_blocking(broker: Broker, session: Session, message: StoredMessage, qos: int, retain: bool,
                         subscription_ids: list[int] | None, backlog: int) -> bool:
    """``block``: the session holds its publishers back from now on; this message is still
    taken, up to twice the limits (False past them: it is dropped). The first message that
    finds the session full is always taken: it may come from a client, whose publication was
    routed before the session blocked (however large it is)."""
    limits = broker.limits
    first = session.blocking is None
    if first:
        backpressure.start_blocking(broker, session)
    if session.persistent:
        if first or backlog < 2 * limits.max_stored_messages:
            _spill(broker, session, message, qos, retain, subscription_ids)
            return True
        return False
    size = len(message.payload)
    if first or len(session.queue) < 2 * limits.max_queued_messages and (
            not limits.max_queued_bytes or session.queued_bytes + size <= 2 * limits.max_queued_bytes):
        d = Delivery(broker.new_seq(), message, qos, retain, list(subscription_ids or ()))
        session.queued_bytes += size
        session.enqueue(d)
        pump(broker, session)
        return True
    return False


def _make_room(broker: Broker, session: Session, size: int) -> bool:
    """``drop-oldest``: drop the oldest waiting messages until one of ``size`` bytes fits;
    False when it does not even then."""
    while _full(broker, session, size) and (session.queue or session.spilled or session.unlisted is not None):
        _drop_oldest(broker, session)
    return not _full(broker, session, size)


def _spill(broker: Broker, session: Session, message: StoredMessage, qos: int, retain: bool,
           subscription_ids: list[int] | None) -> None:
    """Keep a persistent session's delivery in the store only (read back by ``refill``)."""
    d = Delivery(broker.new_seq(), message, qos, retain, list(subscription_ids or ()))
    persist_delivery(broker, session, d)
    session.spill(d.seq, message.msg_id)


def _full(broker: Broker, session: Session, size: int) -> bool:
    """Would a message of ``size`` bytes overflow the session (the test ``deliver`` and
    ``overflow`` make)?"""
    limits = broker.limits
    if session.persistent:
        return len(session.queue) + session.in_store_only() + len(session.inflight) >= limits.max_stored_messages
    return len(session.queue) >= limits.max_queued_messages or bool(
        limits.max_queued_bytes and session.queued_bytes + size > limits.max_queued_bytes)


def _drop_oldest(broker: Broker, session: Session) -> None:
    """Drop the oldest message waiting for an in-flight slot (``drop-oldest``)."""
    if session.queue:
        oldest = session.queue.popleft()
        size = len(oldest.message.payload)
        release(broker, session, oldest)
    else:
        list_unlisted(broker, session, BACKLOG_PAGE)  # a page, not a query per message dropped
        seq, msg_id = grown(session.spilled).popleft()  # not empty: the session is full
        size = 0  # kept in the store only: its size is not known here (docs/pubsub.md)
        broker.store.delete_delivery(session.client_id, seq)
        broker.refs.release_id(msg_id)
    _count_drop(broker, session, "dropped the oldest", size)


def _cut_through(broker: Broker, conn: Connection, size: int) -> None:
    """A publication went to the client at once, never queued: bytes cut through (item 44)."""
    broker.stats.bytes_cut_through += size
    conn.bytes_cut_through += size


def _count_drop(broker: Broker, session: Session, what: str, size: int, *, disconnect: bool = False) -> None:
    """A message of ``size`` payload bytes dropped by a full queue; ``disconnect``: the broker
    disconnects the client because of it (pubsub.md item 44: Disconnect Messages Dropped)."""
    stats = broker.stats
    stats.dropped_by_reason[DROP_QUEUE_FULL] += 1
    stats.bytes_dropped += size
    session.dropped += 1
    session.dropped_bytes += size
    if disconnect:
        stats.disconnect_dropped += 1
        stats.disconnect_bytes_dropped += size
        session.disconnect_dropped += 1
        session.disconnect_dropped_bytes += size
    if session.dropped == 1 or session.dropped % 1000 == 0:
        log.warning("session %s: queue full (%d in memory, %d in the store only, %d bytes; overflow = %s): "
                    "%s, %d messages dropped in all", session.client_id, len(session.queue), session.in_store_only(),
                    session.queued_bytes, session.overflow, what, session.dropped)


def refill(broker: Broker, session: Session) -> None:
    """Bring deliveries kept only in the store back into memory once the queue has room,
    in seq order, so the client receives them after everything queued before them."""
    limits = broker.limits
    room = min(limits.max_queued_messages - len(session.queue), BACKLOG_PAGE)
    if room <= 0 or not (session.spilled or session.unlisted is not None):
        return
    if session.unlisted is not None:
        list_unlisted(broker, session, room)  # the ids the rows read are matched against
    if not session.spilled:
        return  # (the tail held fewer than it counted)
    tail = session.unlisted  # None once all of it is listed
    last = None if tail is None else tail.after
    max_bytes = limits.max_queued_bytes
    first_seq = session.spilled[0][0]
    try:
        found = broker.store.read_deliveries(session.client_id, first_seq - 1, room)
    except StoreUnavailable:
        # the rows may still wait for their commit (a full disk): try again once it writes
        broker.refill_stalled.add(session)
        return
    for rec, msg in found:
        if last is not None and rec.seq > last:
            break  # past what is listed: the tail's next ids come first (a row listed was gone)
        while session.spilled and session.spilled[0][0] < rec.seq:  # gone from the store
            broker.refs.release_id(session.spilled.popleft()[1])
        if not session.spilled or session.spilled[0][0] != rec.seq:
            continue
        if max_bytes and session.queue and session.queued_bytes + len(msg.payload) > max_bytes:
            break  # the byte limit holds too (one message always fits an empty queue)
        session.spilled.popleft()
        session.enqueue(Delivery(rec.seq, msg, rec.qos, rec.retain, list(rec.subscription_ids),
                                 persisted=True))
        session.queued_bytes += len(msg.payload)


def pump(broker: Broker, session: Session) -> None:
    """Move queued messages into the in-flight window while it has room."""
    conn = session.connection
    if conn is None or conn.state is not CONNECTED:
        return
    queue = session.queue
    if not queue and not session.spilled and session.unlisted is None:
        return
    session.inflight = made(session.inflight)  # ``start`` adds to the dict read below
    inflight = session.inflight
    wall = None
    sent: list[Delivery] = []  # stored QoS 2 deliveries put in flight: SENT in one store call
    while len(inflight) < conn.send_quota and not conn.outbound_congested():
        if not queue:
            if not session.spilled and session.unlisted is None:
                break
            refill(broker, session)
            queue = session.queue  # refill may have made the deque (Session.enqueue)
            if not queue:
                break
        d = queue.popleft()
        expiry_at = d.message.expiry_at
        if expiry_at is not None:
            if wall is None:
                wall = broker.clock.wall()
            if expiry_at <= wall:
                release(broker, session, d)  # MQTT 5 message expiry: never delivered late
                continue
        start(broker, session, conn, d, None, sent)
    if sent:
        update_deliveries(broker, session, sent)
        # their packet ids are in the store before the client sees them (``start``): one
        # callback for the pump's QoS 2 deliveries, behind the call that stores them
        broker.store.on_durable(partial(send_all_when_durable, broker, session, conn, sent))


def start(broker: Broker, session: Session, conn: Connection, d: Delivery,
          watch: AckWatch | None = None, sent: list[Delivery] | None = None) -> None:
    """Put a delivery in flight: a packet id, SENT, then the first transmission. A persistent
    session's delivery coming straight from routing is written once, already SENT (told to
    ``watch``). One already stored (queued) is written again only for QoS 2, whose packet id
    must be durable before the client sees it: added to ``sent`` when it is given (``pump``
    stores the SENT states of all it started in one call and sends them once that is durable).
    A stored QoS 1 delivery goes out with its row still QUEUED, no write (issue 16, rows 5 and
    8): while its session is connected a QUEUED QoS 1 row means "may have been sent", and a
    restart after a crash sends it again with DUP=1 (persist_read.py); the session's disconnect
    writes the exact states (``persistence.record_sent``)."""
    d.packet_id = pid = session.next_packet_id()
    d.state = SENT
    d.sent_at = broker.clock.monotonic()
    session.inflight = inflight = made(session.inflight)
    inflight[pid] = d
    if d.persisted:
        if d.qos == 1:
            send_first(broker, session, conn, d)
            return
        if sent is not None:
            sent.append(d)
            return  # sent by ``pump`` once its SENT state is durable
        update_delivery(broker, session, d)
    elif session.persistent:
        persist_delivery(broker, session, d, watch)
    if d.qos == 2 and d.persisted:
        # Exactly once across a crash: the packet id must be in the store before the client
        # sees it, or a restarted broker would send the message again under a new id and a
        # receiver that already released the first would deliver it twice.
        broker.store.on_durable(partial(send_when_durable, broker, session, conn, d))
        return
    send_first(broker, session, conn, d)


def send_first(broker: Broker, session: Session, conn: Connection, d: Delivery) -> None:
    """The first transmission of an in-flight delivery; one the client cannot take (larger
    than its maximum packet size) is finished as if delivered (MQTT 5 3.1.2.25)."""
    if not conn.send_publish(d.message, d.qos, d.retain, d.packet_id, d.maybe_sent, d.subscription_ids):
        session.inflight.pop(d.packet_id, None)  # type: ignore[arg-type]
        release(broker, session, d)


def send_when_durable(broker: Broker, session: Session, conn: Connection, d: Delivery) -> None:
    """Send a QoS 2 delivery whose packet id is now durable, unless things moved on meanwhile
    (the client went away: the reconnect resends it with DUP from the in-flight window)."""
    if (session.connection is conn and conn.state is CONNECTED and d.state == SENT
            and session.inflight.get(d.packet_id) is d):  # type: ignore[arg-type]
        send_first(broker, session, conn, d)


def send_all_when_durable(broker: Broker, session: Session, conn: Connection, deliveries: list[Delivery]) -> None:
    """``send_when_durable`` for each of ``deliveries``, in order (what one ``pump`` started)."""
    for d in deliveries:
        send_when_durable(broker, session, conn, d)


def resend_inflight(broker: Broker, session: Session) -> None:
    """On reconnect: PUBLISH again with DUP=1, or PUBREL for QoS 2 already received (item 8-9)."""
    conn = session.connection
    if conn is None:
        return
    now = broker.clock.monotonic()
    for pid, d in list(session.inflight.items()):
        d.sent_at = now
        if d.state == RELEASED:
            send_pubrel(broker, conn, pid, d.persisted)
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
                send_pubrel(broker, conn, pid, d.persisted)
            else:
                conn.send_publish(d.message, d.qos, d.retain, pid, True, d.subscription_ids)


def release(broker: Broker, session: Session, d: Delivery) -> None:
    """The delivery is finished (acknowledged, expired or refused): forget it."""
    session.queued_bytes -= len(d.message.payload)
    forget_delivery(broker, session, d)


def release_all(broker: Broker, session: Session, deliveries: list[Delivery]) -> None:
    """``release`` for each of ``deliveries``, in one store call."""
    session.queued_bytes -= sum([len(d.message.payload) for d in deliveries])
    forget_deliveries(broker, session, deliveries)


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
                 qos: int, later: bool = False) -> Delivery | None:
    """Remove an in-flight delivery acknowledged by PUBACK (QoS 1) or PUBCOMP (QoS 2).

    ``later``: called while its connection handles a read, which ends with
    ``settle_acknowledged``: the delivery is released and the window refilled there, once for
    all the acknowledgements of the read (one store call and one refill per read, not per
    message: bench/compare row 8, a backlog drained; rows 3 and 5)."""
    d = session.inflight.get(packet_id)
    if d is None or d.qos != qos or d.state != expected_state:
        return None
    del session.inflight[packet_id]
    if later:
        # released, and its publisher's PUBACK told (ack_watch.py), at the end of the read
        ReadEnd.of(broker.acknowledged, session).acked.append(d)
        return d
    release(broker, session, d)
    watch = d.watch
    if watch is not None:
        d.watch = None
        publisher = watch.delivered()
        if publisher is not None:
            publisher.send_ready_acks(resume=False)
    refilled(broker, session)
    return d


def settle_acknowledged(broker: Broker) -> None:
    """The end of a read, for each session it touched (records.ReadEnd), one store call each:
    the RELEASED states of what it received (``received(later=True)``), the inbound QoS 2
    records it released (``persistence.forget_inbound``), then what it acknowledged
    (``acknowledged(later=True)``) released and the window refilled; the QoS 1 PUBACKs those
    acknowledgements released (ack_watch.py) are sent last, in one write per publisher's
    connection, not one per subscriber's PUBACK."""
    acked = broker.acknowledged
    if not acked:
        return
    broker.acknowledged = {}
    publishers: dict[Connection, None] = {}
    for session, end in acked.items():
        if end.released:
            mark_released(broker, session, end.released)
        if end.inbound:
            settle_inbound(broker, end)
        if end.acked:
            for d in end.acked:
                watch = d.watch
                if watch is not None:
                    d.watch = None
                    publisher = watch.delivered()
                    if publisher is not None:
                        publishers[publisher] = None
            release_all(broker, session, end.acked)
            refilled(broker, session)
    for publisher in publishers:
        publisher.send_ready_acks(resume=False)  # inside the subscriber's read


def refilled(broker: Broker, session: Session) -> None:
    """Acknowledgements made room in ``session``'s window: refill it, and release the
    publishers a blocking session holds back once it drained enough."""
    pump(broker, session)
    if session.blocking is not None:
        backpressure.relieve(broker, session)  # publishers wait for room in this session


def received(broker: Broker, session: Session, packet_id: int, later: bool = False) -> Delivery | None:
    """PUBREC for an outbound QoS 2 message: it now waits for PUBCOMP. ``later`` (inside a
    read, as ``acknowledged``): the RELEASED states of the read are stored in one call at its
    end, ahead of the PUBRELs' durable acknowledgement (the read's unit holds both)."""
    d = session.inflight.get(packet_id)
    if d is None or d.qos != 2:
        return None
    if d.state == SENT:
        d.state = RELEASED
        if later and d.persisted:
            ReadEnd.of(broker.acknowledged, session).released.append(d)
        else:
            update_delivery(broker, session, d)  # (nothing for one not stored)
    return d


def send_pubrel(broker: Broker, conn: Connection, packet_id: int, stored: bool) -> None:
    """PUBREL for an outbound QoS 2 message (``stored``: its RELEASED state was written).

    Once a PUBREL has gone, the PUBLISH must never be sent again (MQTT 3.1.1 4.3.3; a receiver
    that has completed the exchange would take it as a new message). A broker restarted after
    a crash resends what its store says, so a stored delivery's PUBREL waits until RELEASED is
    durable. PUBRELs leave in the order of their PUBRECs (4.6): they queue with the
    connection's acknowledgements (``Connection.acknowledge``), so one that waits holds the
    later ones behind it, and the PUBRELs of one read wait for one store callback, not one
    each. Nothing is sent on a closed connection: a reconnect resends."""
    conn.acknowledge(p.PUBREL, packet_id, SUCCESS, False, stored)


__all__ = ["BACKLOG_PAGE", "BLOCK", "DROP_NEW", "DROP_OLDEST", "deliver", "overflow", "refill", "pump", "start", "resend_inflight",
           "retransmit_due", "release", "release_all", "discard", "acknowledged", "settle_acknowledged", "refilled",
           "received", "send_pubrel", "QUEUED"]
