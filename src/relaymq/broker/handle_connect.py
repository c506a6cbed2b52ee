"""CONNECT and DISCONNECT: client ids, authentication, take-over, clean start, session expiry,
keep alive and the will (mqtt.md items 19-26 and the decisions below them; MQTT 5 3.1/3.14).

Authorization comes after authentication and before anything changes (MQTT 3.1.4 item 2,
before item 3, the take-over; issue 15 findings 4 and 5, docs/security.md): a session belongs
to the user who made it, and the will must be a publication its client may make.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.backpressure import unblock
from relaymq.broker.delivery import BLOCK, pump, resend_inflight
from relaymq.broker.persistence import save_session
from relaymq.broker.session import Session
from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.mqtt.codec import encode
from relaymq.mqtt.errors import MQTTError, ProtocolError
from relaymq.mqtt.wire import MAX_PACKET_SIZE, MAX_UINT16
from relaymq.pubsub.model import REMOVED_CLEAN_START, REMOVED_EXPIRED
from relaymq.pubsub.topics import TopicError, validate_topic_name

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.connection import Connection

log = logging.getLogger("relaymq.connect")

V3_MAX_CLIENT_ID = 23  # mqtt.md item 23; seed 000 l.1140, 1205-1207


def refuse(conn: Connection, reason_code: int, why: str) -> None:
    """Send a refusing CONNACK in the form of the client's level, then close."""
    log.info("refusing connection from %s (client %r): %s", conn.peer, conn.client_id, why)
    code = reason_code if conn.level == 5 else rc.connack_code_for_level(reason_code, conn.level)
    conn.send(p.Connack(False, code))
    conn.close(publish_will=False)


def handle_connect(conn: Connection, pkt: p.Connect) -> None:
    broker = conn.broker
    level = pkt.protocol_level
    conn.level = level
    conn.reader.protocol_level = level
    conn.client_id = pkt.client_id
    props = pkt.properties
    conn.problem_information = props.get("request_problem_information", 1) != 0

    if level == 5 and "authentication_method" in props:
        refuse(conn, rc.BAD_AUTHENTICATION_METHOD, "enhanced authentication is not supported")
        return

    # -- client identifier rules per level
    client_id = pkt.client_id
    assigned = False
    if level == 3:
        if not 1 <= len(client_id) <= V3_MAX_CLIENT_ID:
            refuse(conn, rc.CLIENT_IDENTIFIER_NOT_VALID, "MQIsdp client id must be 1-23 characters")
            return
    elif client_id == "":
        if level == 4 and not pkt.clean_start:
            refuse(conn, rc.CLIENT_IDENTIFIER_NOT_VALID, "empty client id needs clean session")
            return
        client_id = broker.assign_client_id()
        assigned = True
    conn.client_id = client_id

    # -- will (validated before anything changes)
    will = pkt.will
    if will is not None:
        try:
            validate_topic_name(will.topic, broker.limits.max_topic_length, mixed_literal=conn.level == 3)
        except TopicError as err:
            raise ProtocolError(f"invalid will topic: {err.reason}", rc.TOPIC_NAME_INVALID) from None
        if will.qos > broker.limits.max_qos:
            refuse(conn, rc.QOS_NOT_SUPPORTED, "will QoS above the maximum")
            return
        if will.retain and not broker.limits.retain_available:
            refuse(conn, rc.RETAIN_NOT_SUPPORTED, "retained wills are not available")
            return
        # the message itself is made once the will is authorised (connect_session)

    # -- authentication
    username = pkt.username
    cert_user = conn.certificate_user
    if cert_user is not None and username in (None, cert_user):
        # A verified client certificate is the identity: its common name is the user name and
        # no password is needed (docs/configuration.md, TLS client certificates).
        connect_session(conn, pkt, client_id, assigned, cert_user)
    elif cert_user is not None:
        # Another name than the certificate's must prove itself with that user's password;
        # without that, any certificate could claim any user (an administrator's, say).
        why = f"certificate of {cert_user!r} may not connect as {username!r} without its password"
        if broker.passwords is None:
            refuse(conn, rc.NOT_AUTHORIZED, why)
        else:
            check_password(conn, pkt, client_id, assigned, rc.NOT_AUTHORIZED, why)
    elif broker.passwords is not None and username is not None:
        check_password(conn, pkt, client_id, assigned, rc.BAD_USER_NAME_OR_PASSWORD,
                       f"bad user name or password for {username!r}")
    elif username is None and not broker.config.access.allow_anonymous:
        refuse(conn, rc.NOT_AUTHORIZED, "anonymous access is disabled")
    else:
        connect_session(conn, pkt, client_id, assigned, username)


def check_password(conn: Connection, pkt: p.Connect, client_id: str, assigned: bool,
                   failure_code: int, why: str) -> None:
    """Check the CONNECT's password, which may take a while (bcrypt, on a thread of the
    server's: Broker.authenticate); meanwhile the connection reads and dispatches nothing
    more, and the packets that follow the CONNECT wait in its reader."""
    username = pkt.username
    conn.pause_reading("auth")

    def done(ok: bool) -> None:
        if conn.closed:
            return  # the client went away meanwhile
        if not ok:
            refuse(conn, failure_code, why)
            return
        try:
            connect_session(conn, pkt, client_id, assigned, username)
        except MQTTError as err:
            conn.protocol_violation(err)
            return
        conn.resume_reading("auth")  # and handle what arrived after the CONNECT

    conn.broker.authenticate(username, pkt.password, conn.peer, done)


def owner_refusal(broker: Broker, session: Session | None, username: str | None) -> str | None:
    """Why a client authenticated as ``username`` may not have ``session``; None if it may.

    A session belongs to the principal that made it: a user name, or "anonymous" (None).
    Another principal is refused, whether the session is connected or not and whatever its
    Clean Start says, rather than handed the session (its queued messages, subscriptions and
    in-flight state) or allowed to discard it or to close its connection. An expired session
    belongs to nobody. Without verified names (no password file) a name is a claim anyone
    can make, so take-over stays as it was (docs/security.md)."""
    if session is None or session.username == username or not broker.names_are_verified:
        return None
    if session.expired(broker.clock.monotonic()):
        return None  # gone, even if the tick has not removed it yet (connect_session ends it)
    owner = "an anonymous client" if session.username is None else f"user {session.username!r}"
    return f"client id {session.client_id!r} is the session of {owner}, not of " + (
        "an anonymous client" if username is None else f"user {username!r}")


def connect_session(conn: Connection, pkt: p.Connect, client_id: str, assigned: bool,
                    username: str | None) -> None:
    """The client is who it says: check what it may have, take over or start its session and
    send CONNACK."""
    broker = conn.broker
    level = conn.level
    props = pkt.properties

    # -- authorization, before anything changes (issue 15 findings 4 and 5)
    will = pkt.will
    why = owner_refusal(broker, broker.sessions.get(client_id), username)
    if why is None and will is not None:
        why = broker.will_refusal(username, client_id, will.topic)
        if why is not None:
            why = f"will on {will.topic!r} for user {username!r}: {why}"
    if why is not None:
        refuse(conn, rc.NOT_AUTHORIZED, why)
        return
    conn.username = username
    if will is not None:
        # made right after its ACL check, as handle_publish makes a PUBLISH's message (a
        # telemetry endpoint notes the publishing user in that call: flows/scada.py)
        wprops = dict(will.properties)
        conn.will_delay = wprops.pop("will_delay_interval", 0)
        expiry = wprops.pop("message_expiry_interval", None)
        conn.will = broker.new_message(will.topic, will.payload, will.qos, will.retain, wprops, expiry)

    # -- take over a connected client id (mqtt.md decision: the old connection is closed)
    existing = broker.sessions.get(client_id)
    if existing is not None and existing.connection is not None:
        old = existing.connection
        # its will goes out in 3.1.1/5 (it did not disconnect); not in v3, which did not fail
        old.disconnect_with(rc.SESSION_TAKEN_OVER, f"session taken over by {conn.peer}",
                            publish_will=old.level >= 4)
    existing = broker.sessions.get(client_id)
    if existing is not None and existing.expired(broker.clock.monotonic()):
        # expired before the periodic tick noticed (right after a restart, say): it is gone
        log.info("session %s expired", client_id)
        broker.end_session(existing, REMOVED_EXPIRED)
        existing = None

    expiry_interval = broker.session_expiry_for(level, pkt.clean_start,
                                                props.get("session_expiry_interval"))
    if existing is not None and pkt.clean_start:
        broker.end_session(existing, REMOVED_CLEAN_START)  # clean start discards the old session (item 20)
        existing = None
    session_present = existing is not None
    if existing is not None:
        session = existing
        session.protocol_level = level
        session.expiry_interval = expiry_interval
        session.username = username
        broker.cancel_will(client_id)  # reconnected within the will delay
    else:
        session = Session(client_id, level, expiry_interval, username)
        broker.sessions[client_id] = session
    session.connection = conn
    session.disconnected_at = None
    conn.session = session
    # A full queue does what the listener the client came through says (issue 14)
    session.overflow = broker.backpressure.policy(conn.listener)
    if session.blocking is not None and session.overflow != BLOCK:
        unblock(broker, session)
    save_session(broker, session)
    if not session_present and session.persistent:
        for opener in broker.session_openers:
            opener(session)

    # -- connection parameters
    conn.keep_alive = pkt.keep_alive
    ack_props: dict = {}
    if level == 5:
        limits = broker.limits
        conn.send_quota = min(props.get("receive_maximum", MAX_UINT16), limits.max_inflight)
        conn.client_max_packet = props.get("maximum_packet_size", 0)
        conn.client_alias_max = props.get("topic_alias_maximum", 0)
        if limits.topic_alias_maximum:
            ack_props["topic_alias_maximum"] = limits.topic_alias_maximum
        if limits.max_inflight < MAX_UINT16:
            ack_props["receive_maximum"] = limits.max_inflight
        if limits.max_qos < 2:
            ack_props["maximum_qos"] = limits.max_qos
        if not limits.retain_available:
            ack_props["retain_available"] = 0
        if limits.max_packet_size < MAX_PACKET_SIZE:
            ack_props["maximum_packet_size"] = limits.max_packet_size
        if assigned:
            ack_props["assigned_client_identifier"] = client_id
        max_ka = broker.config.broker.max_keepalive
        if pkt.keep_alive > max_ka or (pkt.keep_alive == 0 and max_ka < MAX_UINT16):
            conn.keep_alive = max_ka
            ack_props["server_keep_alive"] = max_ka
        if expiry_interval != props.get("session_expiry_interval", 0):
            ack_props["session_expiry_interval"] = expiry_interval
    else:
        conn.send_quota = broker.limits.max_inflight
    conn.connected = True
    n = sum(1 for c in broker.connections if c.connected)
    broker.stats.clients_maximum = max(broker.stats.clients_maximum, n)
    log.debug("client %s connected from %s (level %d, clean %s, keepalive %d)",
              client_id, conn.peer, level, pkt.clean_start, pkt.keep_alive)
    connack = encode(p.Connack(session_present and level >= 4, 0, ack_props), level)
    if conn.client_max_packet and len(connack) > conn.client_max_packet:
        # MQTT 5 3.1.2.25: nothing larger than the client's maximum may be sent, CONNACK included
        log.info("client %s: maximum packet size %d is smaller than the CONNACK", client_id,
                 conn.client_max_packet)
        conn.close(publish_will=False)
        return
    conn.write(connack)
    if session_present:
        resend_inflight(broker, session)  # 3.1.1 rule: retransmit on reconnect
    pump(broker, session)


def handle_disconnect(conn: Connection, pkt: p.Disconnect) -> None:
    """DISCONNECT: no will (mqtt.md item 25) unless MQTT 5 reason 0x04; MQTT 5 may change the
    session expiry interval, but not from 0 to non-zero (MQTT 5 3.14.2.2.2)."""
    session = conn.session
    if conn.level == 5 and session is not None:
        new_expiry = pkt.properties.get("session_expiry_interval")
        if new_expiry is not None:
            if session.expiry_interval == 0 and new_expiry != 0:
                raise ProtocolError("session expiry interval changed from 0 at DISCONNECT")
            session.expiry_interval = min(new_expiry, conn.broker.config.broker.session_expiry_max)
    publish_will = conn.level == 5 and pkt.reason_code == rc.DISCONNECT_WITH_WILL_MESSAGE
    if not publish_will:
        conn.will = None
    conn.close(publish_will=publish_will)


def session_disconnected(conn: Connection, publish_will: bool) -> None:
    """The connection is gone: publish or schedule the will, keep or end the session."""
    broker = conn.broker
    session = conn.session
    will = conn.will
    conn.will = None
    if not conn.connected:
        # the CONNECT was never accepted (refused, or the client left during the password
        # check): there is no will to publish (3.1.1 [MQTT-3.1.2-8]: stored "if the Connect
        # request is accepted"); publishing it would publish as nobody, unauthenticated
        return
    if session is None or session.connection is not conn:
        # taken over (the new connection owns the session now)
        if will is not None and publish_will:
            broker.publish_will(will, conn.username, conn.client_id)
        return
    session.connection = None
    session.disconnected_at = broker.clock.monotonic()
    if will is not None and publish_will:
        if conn.level == 5 and conn.will_delay and session.persistent:
            broker.schedule_will(session, session.disconnected_at + conn.will_delay, will)
        else:
            broker.publish_will(will, conn.username, conn.client_id)
    if not session.persistent:
        broker.end_session(session)
    else:
        save_session(broker, session)
