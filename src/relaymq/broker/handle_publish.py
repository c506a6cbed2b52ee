"""PUBLISH from a client and the acknowledgements of both directions (mqtt.md items 6-12,
25-29; MQTT 5 topic aliases, receive maximum, message expiry).

Inbound QoS 1: route (which stores the deliveries), then PUBACK once the store says durable.
Inbound QoS 2: store on PUBLISH and PUBREC once durable; route on PUBREL, then PUBCOMP
(seed 000 l.736-741: store on PUBLISH, deliver on PUBREL, exactly once).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from relaymq.broker import delivery
from relaymq.broker.ack_watch import AckWatch
from relaymq.broker.backpressure import hold
from relaymq.broker.listener_control import LISTENER_CONTROL_PREFIX, handle_listener_control
from relaymq.broker.persistence import forget_inbound, persist_inbound
from relaymq.broker.routing import process_publication
from relaymq.broker.session import made
from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.mqtt.errors import MalformedPacket, ProtocolError
from relaymq.pubsub import topics
from relaymq.pubsub.topics import TopicError, reserved_for_broker, validate_topic_name
from relaymq.store.base import RELEASED, SENT

if TYPE_CHECKING:
    from relaymq.broker.connection import Connection
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage

log = logging.getLogger("relaymq.publish")

# MQTT 5 properties a publication carries to its subscribers (3.3.2.3).

FORWARDED = ("payload_format_indicator", "content_type", "response_topic", "correlation_data",
             "user_property")


def resolve_topic(conn: Connection, pkt: p.Publish) -> str:
    topic = pkt.topic
    if conn.level != 5 and topic == conn.last_topic:
        return topic  # the topic of the previous PUBLISH, already found valid
    if conn.level == 5:
        alias = pkt.properties.get("topic_alias")
        if alias is not None:
            if alias == 0 or alias > conn.broker.limits.topic_alias_maximum:
                raise ProtocolError(f"topic alias {alias} out of range", rc.TOPIC_ALIAS_INVALID)
            if topic:
                conn.aliases_in = aliases = made(conn.aliases_in)
                aliases[alias] = topic
            else:
                topic = conn.aliases_in.get(alias, "")
                if not topic:
                    raise ProtocolError(f"topic alias {alias} is not set", rc.PROTOCOL_ERROR)
    try:
        validate_topic_name(topic, conn.broker.limits.max_topic_length, mixed_literal=conn.level == 3)
    except TopicError as err:
        if err.reason == topics.WILDCARD_IN_NAME:
            raise MalformedPacket(f"wildcard in topic name {topic!r}") from None
        raise ProtocolError(f"invalid topic name: {err.reason}", rc.TOPIC_NAME_INVALID) from None
    response_topic = pkt.properties.get("response_topic") if conn.level == 5 else None
    if response_topic is not None:
        try:
            validate_topic_name(response_topic, conn.broker.limits.max_topic_length)
        except TopicError as err:
            raise ProtocolError(f"invalid response topic: {err.reason}") from None
    conn.last_topic = topic
    return topic


def handle_publish(conn: Connection, session: Session, pkt: p.Publish) -> None:
    """PUBLISH: check it (topic, QoS, retain, the receive maximum, who may publish where),
    make its message, then route it by QoS: 0 now, 1 then PUBACK (``publish_qos1``), 2 kept
    until its PUBREL (``receive_qos2``)."""
    broker = conn.broker
    qos = pkt.qos
    stats = broker.stats
    stats.received_by_qos[qos] += 1
    stats.payload_received_by_qos[qos] += len(pkt.payload)
    conn.messages_received += 1
    topic = resolve_topic(conn, pkt)
    limits = broker.limits
    if qos > limits.max_qos:
        raise ProtocolError(f"QoS {qos} above the maximum {limits.max_qos}", rc.QOS_NOT_SUPPORTED)
    if pkt.retain and not limits.retain_available:
        raise ProtocolError("retain is not available", rc.RETAIN_NOT_SUPPORTED)
    if qos == 2 and qos2_repeated(conn, session, pkt):
        return
    if qos > 0 and conn.level == 5 and conn.inbound_unacked >= limits.max_inflight:
        raise ProtocolError("receive maximum exceeded", rc.RECEIVE_MAXIMUM_EXCEEDED)

    acl = broker.acl
    allowed = acl is None or acl.can_publish(conn.username, conn.client_id, topic)
    if topic[0] == "$" and reserved_for_broker(topic):
        allowed = publish_reserved(conn, topic, pkt.payload, allowed)
    elif not allowed:
        refused_publication(conn, topic, "the ACL refuses it")
    message = None
    if allowed:
        if pkt.properties:
            message = message_with_properties(conn, pkt, topic)
        else:
            message = broker.new_message(topic, pkt.payload, qos, pkt.retain, {}, None)

    if qos == 0:
        if message is not None:
            process_publication(broker, message, session)
        return
    pid = pkt.packet_id
    assert pid is not None  # the decoder reads one whenever qos > 0
    conn.inbound_unacked += 1
    if message is None:
        refuse_qos12(conn, session, qos, pid)
    elif qos == 1:
        publish_qos1(conn, session, message, pid)
    else:
        receive_qos2(conn, session, message, pid)


def message_with_properties(conn: Connection, pkt: p.Publish, topic: str) -> StoredMessage:
    """The message of an MQTT 5 PUBLISH with properties: those its subscribers get
    (FORWARDED), and its expiry."""
    props = pkt.properties
    return conn.broker.new_message(topic, pkt.payload, pkt.qos, pkt.retain,
                                   {k: props[k] for k in FORWARDED if k in props},
                                   props.get("message_expiry_interval"))


def qos2_repeated(conn: Connection, session: Session, pkt: p.Publish) -> bool:
    """Checks of a QoS 2 PUBLISH before anything else: True for a duplicate of one received
    and not yet released (acknowledged again, delivered no more); past ``max_queued_bytes``
    of messages awaiting PUBREL the client is disconnected."""
    pid = pkt.packet_id
    assert pid is not None  # the decoder reads one whenever qos > 0
    if pid in session.inbound:
        # a duplicate: acknowledge again, deliver nothing; like the first PUBREC, not before
        # the message is durable (spec README decision 4)
        conn.acknowledge(p.PUBREC, pid, rc.SUCCESS, False, True)
        return True
    max_bytes = conn.broker.limits.max_queued_bytes
    if max_bytes and session.inbound and session.inbound_bytes + len(pkt.payload) > max_bytes:
        # QoS 2 messages held between PUBREC and PUBREL are bounded like a session's queue
        # (docs/configuration.md, max_queued_bytes): past it the client is disconnected;
        # this one was not acknowledged, so it comes again after the reconnect.
        raise ProtocolError(f"QoS 2 messages awaiting PUBREL exceed max_queued_bytes ({max_bytes})",
                            rc.QUOTA_EXCEEDED)
    return False


def publish_reserved(conn: Connection, topic: str, payload: bytes, allowed: bool) -> bool:
    """A PUBLISH to ``$SYS`` or ``$ISYS``, the broker's own (statistics): clients may only
    publish the listener control topics, and only administrators may (mqtt.md item 5).
    Stream topics ($SYS/STREAM/...) are left to the ACLs (pubsub.md items 6, 38). Whether the
    publication goes on to subscribers."""
    if not topic.startswith(LISTENER_CONTROL_PREFIX):
        refused_publication(conn, topic, "$SYS and $ISYS are reserved for the broker")
        return False
    if not allowed:
        refused_publication(conn, topic, "the ACL refuses it")
        return False
    if not handle_listener_control(conn, topic, payload):
        refused_publication(conn, topic, "not an administrator")
        return False
    return True


def refused_publication(conn: Connection, topic: str, why: str) -> None:
    log.info("client %s (user %r) may not publish to %r: %s", conn.client_id, conn.username, topic, why)


def refuse_qos12(conn: Connection, session: Session, qos: int, pid: int) -> None:
    """Answer a QoS 1/2 publication the client may not make: MQTT 5 says so (0x87), the
    lower levels, which have no code for it, acknowledge it as if delivered."""
    refused = rc.NOT_AUTHORIZED if conn.level == 5 else rc.SUCCESS
    if qos == 1:
        conn.acknowledge(p.PUBACK, pid, refused, True, False)  # nothing stored: at once, in order
    elif refused:
        # MQTT 5 4.3.3: a PUBREC with a failure code ends the exchange; no PUBREL follows, so
        # the packet id is not held: the client's next message with it is a new message.
        conn.acknowledge(p.PUBREC, pid, refused, True, True)
    else:
        receive_qos2(conn, session, None, pid)  # PUBREC as if taken; PUBREL releases nothing


def receive_qos2(conn: Connection, session: Session, message: StoredMessage | None, pid: int) -> None:
    """Keep a QoS 2 publication until its PUBREL (stored for a persistent session), PUBREC
    once that is durable."""
    session.inbound = made(session.inbound)
    session.inbound[pid] = message
    if message is not None:
        session.inbound_bytes += len(message.payload)
    conn.count_inbound_qos2(pid)  # counts towards the receive maximum until its PUBCOMP
    if session.persistent:
        persist_inbound(conn.broker, session, pid, message)
    conn.acknowledge(p.PUBREC, pid, rc.SUCCESS, False, True)


def publish_qos1(conn: Connection, session: Session, message: StoredMessage, pid: int) -> bool:
    """Route a client's QoS 1 publication and acknowledge it; or, when a session it goes to is
    full, hold it back unacknowledged (backpressure.py) and return False: it comes here again
    once that session has room."""
    broker = conn.broker
    store = broker.store
    submitted = store.submitted
    watch = AckWatch()
    receivers = process_publication(broker, message, session, True, watch)
    if receivers < 0:
        hold(conn, partial(publish_qos1, conn, session, message, pid))
        return False
    code = rc.NO_MATCHING_SUBSCRIBERS if receivers == 0 and conn.level == 5 else rc.SUCCESS
    # The PUBACK promises what routing stored (deliveries to persistent sessions, the
    # retained message): it waits for their commit, or (when those deliveries were all it
    # stored) until their subscribers acknowledged them, whichever comes first
    # (ack_watch.py); when nothing was stored it goes now, in order behind any earlier
    # acknowledgement still waiting.
    writes = store.submitted - submitted
    entry = conn.acknowledge(p.PUBACK, pid, code, True, writes != 0)
    if entry is not None and watch.waiting and watch.writes == writes:
        watch.arm(conn, entry)
    return True


def handle_pubrel(conn: Connection, session: Session, pkt: p.Pubrel) -> None:
    release_qos2(conn, session, pkt.packet_id)


def release_qos2(conn: Connection, session: Session, pid: int) -> bool:
    """PUBREL: route the QoS 2 message received with ``pid`` and complete the exchange; or,
    when a session it goes to is full, hold the release back (PUBREC was sent: the message is
    kept, in the store for a persistent session, until it has room) and return False."""
    broker = conn.broker
    message = session.inbound.get(pid)
    if message is not None and process_publication(broker, message, session, True) < 0:
        hold(conn, partial(release_qos2, conn, session, pid))
        return False
    # Only a message received on this connection was counted here; one received before a
    # reconnect (resumed session) is released without touching this connection's count.
    counted = conn.uncount_inbound_qos2(pid)
    if pid in session.inbound:
        message = session.inbound.pop(pid)
        if message is not None:
            session.inbound_bytes -= len(message.payload)
        if session.persistent:
            forget_inbound(broker, session, pid, message)
    # (an id already released is completed again) PUBCOMP once the release is durable
    conn.acknowledge(p.PUBCOMP, pid, rc.SUCCESS, counted, True)
    return True


def expect_inflight(session: Session, packet_id: int, qos: int, states: tuple[int, ...],
                    what: str) -> None:
    """An acknowledgement that does not fit the in-flight message it names is a protocol
    error (PUBREC for QoS 1, PUBACK for QoS 2, PUBCOMP before PUBREC); an id not in flight at
    all is ignored, since it may be a late duplicate."""
    d = session.inflight.get(packet_id)
    if d is not None and (d.qos != qos or d.state not in states):
        raise ProtocolError(f"{what} for packet {packet_id}, a QoS {d.qos} message in state {d.state}")


def handle_puback(conn: Connection, session: Session, pkt: p.Puback) -> None:
    # handlers run inside a read (Connection.process_buffered, resume_held), which settles it;
    # only a PUBACK that acknowledged nothing is checked (the common one needs no second look)
    if delivery.acknowledged(conn.broker, session, pkt.packet_id, SENT, 1, later=True) is None:
        expect_inflight(session, pkt.packet_id, 1, (SENT,), "PUBACK")


def handle_pubrec(conn: Connection, session: Session, pkt: p.Pubrec) -> None:
    broker = conn.broker
    pid = pkt.packet_id
    expect_inflight(session, pid, 2, (SENT, RELEASED), "PUBREC")
    if conn.level == 5 and pkt.reason_code >= 0x80:
        # the subscriber refused it: the exchange ends here (MQTT 5 4.3.3)
        delivery.acknowledged(broker, session, pid, SENT, 2)
        return
    # unknown ids get a plain PUBREL too (as Mosquitto answers; the conformance cases expect it)
    d = delivery.received(broker, session, pid, later=True)
    delivery.send_pubrel(broker, conn, pid, d is not None and d.persisted)


def handle_pubcomp(conn: Connection, session: Session, pkt: p.Pubcomp) -> None:
    expect_inflight(session, pkt.packet_id, 2, (RELEASED,), "PUBCOMP")
    delivery.acknowledged(conn.broker, session, pkt.packet_id, RELEASED, 2, later=True)
