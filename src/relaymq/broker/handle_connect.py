"""CONNECT and DISCONNECT: client ids, authentication, take-over, clean start, session expiry,
keep alive and the will (mqtt.md items 19-26 and the decisions below them; MQTT 5 3.1/3.14).

Authorization comes after authentication and before anything changes (MQTT 3.1.4 item 2,
before item 3, the take-over; issue 15 findings 4 and 5, docs/security.md): a session belongs
to the user who made it, and the will must be a publication its client may make.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from relaymq.broker.backpressure import unblock
from relaymq.broker.delivery import BLOCK, pump, resend_inflight
from relaymq.broker.persistence import record_sent, save_session
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
    """CONNECT, read in AWAITING_CONNECT (states.py): check what needs no session (the
    client id, the will), then who the client is; ``connect_session`` does the rest."""
    level = pkt.protocol_level
    conn.level = level
    conn.reader.protocol_level = level
    conn.client_id = pkt.client_id
    props = pkt.properties
    conn.problem_information = props.get("request_problem_information", 1) != 0

    if level == 5 and "authentication_method" in props:
        refuse(conn, rc.BAD_AUTHENTICATION_METHOD, "enhanced authentication is not supported")
        return
    chosen = choose_client_id(conn, pkt)
    if chosen is None:
        return
    client_id, assigned = chosen
    conn.client_id = client_id
    if pkt.will is not None and not will_acceptable(conn, pkt.will):
        return
    # the will's message itself is made once the will is authorised (connect_session)
    authenticate(conn, pkt, client_id, assigned)


def choose_client_id(conn: Connection, pkt: p.Connect) -> tuple[str, bool] | None:
    """The client identifier rules per level: (the id, whether the broker assigned it), or
    None when the CONNECT was refused for its id."""
    client_id = pkt.client_id
    level = conn.level
    if level == 3:
        if not 1 <= len(client_id) <= V3_MAX_CLIENT_ID:
            refuse(conn, rc.CLIENT_IDENTIFIER_NOT_VALID, "MQIsdp client id must be 1-23 characters")
            return None
        return client_id, False
    if client_id != "":
        return client_id, False
    if level == 4 and not pkt.clean_start:
        refuse(conn, rc.CLIENT_IDENTIFIER_NOT_VALID, "empty client id needs clean session")
        return None
    return conn.broker.assign_client_id(), True


def will_acceptable(conn: Connection, will: p.Will) -> bool:
    """The will is checked before anything changes: a topic that is no topic is a protocol
    error; a QoS or a retain flag the broker does not offer refuses the CONNECT (False)."""
    limits = conn.broker.limits
    try:
        validate_topic_name(will.topic, limits.max_topic_length, mixed_literal=conn.level == 3)
    except TopicError as err:
        raise ProtocolError(f"invalid will topic: {err.reason}", rc.TOPIC_NAME_INVALID) from None
    if will.qos > limits.max_qos:
        refuse(conn, rc.QOS_NOT_SUPPORTED, "will QoS above the maximum")
        return False
    if will.retain and not limits.retain_available:
        refuse(conn, rc.RETAIN_NOT_SUPPORTED, "retained wills are not available")
        return False
    return True


def authenticate(conn: Connection, pkt: p.Connect, client_id: str, assigned: bool) -> None:
    """Who the client is: a verified certificate's name, a user name with its password
    (checked later: ``check_password``), or anonymous if allowed; then ``connect_session``."""
    broker = conn.broker
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
        if broker.passwords is None or username is None:
            refuse(conn, rc.NOT_AUTHORIZED, why)
        else:
            check_password(conn, pkt, username, client_id, assigned, rc.NOT_AUTHORIZED, why)
    elif broker.passwords is not None and username is not None:
        check_password(conn, pkt, username, client_id, assigned, rc.BAD_USER_NAME_OR_PASSWORD,
                       f"bad user name or password for {username!r}")
    elif username is None and not broker.config.access.allow_anonymous:
        refuse(conn, rc.NOT_AUTHORIZED, "anonymous access is disabled")
    else:
        connect_session(conn, pkt, client_id, assigned, username)


def check_password(conn: Connection, pkt: p.Connect, username: str, client_id: str, assigned: bool,
                   failure_code: int, why: str) -> None:
    """Check the CONNECT's password, which may take a while (bcrypt, on a thread of the
    server's: Broker.authenticate); meanwhile the connection is AUTHENTICATING (states.py):
    it reads and dispatches nothing more, and the packets that follow the CONNECT wait in its
    reader."""
    conn.check_password()

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
    send CONNACK (the ACCEPT transition, states.py)."""
    broker = conn.broker
    # -- authorization, before anything changes (issue 15 findings 4 and 5)
    why = connect_refusal(broker, pkt, client_id, username)
    if why is not None:
        refuse(conn, rc.NOT_AUTHORIZED, why)
        return
    conn.username = username
    if pkt.will is not None:
        make_will(conn, pkt.will)
    take_over(conn, client_id)
    session, session_present = open_session(conn, pkt, client_id, username)
    conn.keep_alive = pkt.keep_alive
    if conn.level == 5:
        ack_props = negotiate_v5(conn, pkt, session, assigned)
    else:
        ack_props = {}
        conn.send_quota = broker.limits.max_inflight
    conn.accept(session)
    log.debug("client %s connected from %s (level %d, clean %s, keepalive %d)",
              client_id, conn.peer, conn.level, pkt.clean_start, pkt.keep_alive)
    if not send_connack(conn, session_present, ack_props):
        return
    if session_present:
        resend_inflight(broker, session)  # 3.1.1 rule: retransmit on reconnect
    pump(broker, session)


def connect_refusal(broker: Broker, pkt: p.Connect, client_id: str, username: str | None) -> str | None:
    """Why ``username`` may not connect as ``client_id`` with this CONNECT's will; None if it
    may (the session's owner, then the will topic's ACL)."""
    why = owner_refusal(broker, broker.sessions.get(client_id), username)
    will = pkt.will
    if why is None and will is not None:
        why = broker.wills.refusal(username, client_id, will.topic)
        if why is not None:
            why = f"will on {will.topic!r} for user {username!r}: {why}"
    return why


def make_will(conn: Connection, will: p.Will) -> None:
    """The will's message, made right after its ACL check, as handle_publish makes a
    PUBLISH's message (a telemetry endpoint notes the publishing user in that call:
    flows/scada.py)."""
    wprops = dict(will.properties)
    conn.will_delay = wprops.pop("will_delay_interval", 0)
    expiry = wprops.pop("message_expiry_interval", None)
    conn.will = conn.broker.new_message(will.topic, will.payload, will.qos, will.retain, wprops, expiry)


def take_over(conn: Connection, client_id: str) -> None:
    """A connected client id is taken over: the old connection is closed (mqtt.md decision)."""
    existing = conn.broker.sessions.get(client_id)
    if existing is not None and existing.connection is not None:
        old = existing.connection
        # its will goes out in 3.1.1/5 (it did not disconnect); not in v3, which did not fail
        old.disconnect_with(rc.SESSION_TAKEN_OVER, f"session taken over by {conn.peer}",
                            publish_will=old.level >= 4)


def open_session(conn: Connection, pkt: p.Connect, client_id: str,
                 username: str | None) -> tuple[Session, bool]:
    """Resume the client's session or start one (clean start, expiry: mqtt.md item 20):
    (the session, whether it was present)."""
    broker = conn.broker
    level = conn.level
    existing = broker.sessions.get(client_id)
    if existing is not None and existing.expired(broker.clock.monotonic()):
        # expired before the periodic tick noticed (right after a restart, say): it is gone
        log.info("session %s expired", client_id)
        broker.end_session(existing, REMOVED_EXPIRED)
        existing = None
    expiry_interval = broker.session_expiry_for(level, pkt.clean_start,
                                                pkt.properties.get("session_expiry_interval"))
    if existing is not None and pkt.clean_start:
        broker.end_session(existing, REMOVED_CLEAN_START)  # clean start discards the old session (item 20)
        existing = None
    if existing is not None:
        session = existing
        session.protocol_level = level
        session.expiry_interval = expiry_interval
        session.username = username
        broker.wills.cancel(client_id)  # reconnected within the will delay
    else:
        session = Session(client_id, level, expiry_interval, username)
        broker.sessions[client_id] = session
    session.connection = conn
    session.disconnected_at = None
    # A full queue does what the listener the client came through says (issue 14)
    session.overflow = broker.backpressure.policy(conn.listener)
    if session.blocking is not None and session.overflow != BLOCK:
        unblock(broker, session)
    save_session(broker, session)
    session_present = existing is not None
    if not session_present and session.persistent:
        for opener in broker.session_openers:
            opener(session)
    return session, session_present


def negotiate_v5(conn: Connection, pkt: p.Connect, session: Session, assigned: bool) -> dict:
    """MQTT 5: take the client's limits (receive maximum, maximum packet size, topic alias
    maximum) and the CONNACK properties that tell it the broker's (3.2.2.3)."""
    broker = conn.broker
    limits = broker.limits
    props = pkt.properties
    conn.send_quota = min(props.get("receive_maximum", MAX_UINT16), limits.max_inflight)
    conn.client_max_packet = props.get("maximum_packet_size", 0)
    conn.client_alias_max = props.get("topic_alias_maximum", 0)
    ack_props = broker_limits_v5(limits)
    if assigned:
        ack_props["assigned_client_identifier"] = session.client_id
    max_ka = broker.config.broker.max_keepalive
    if pkt.keep_alive > max_ka or (pkt.keep_alive == 0 and max_ka < MAX_UINT16):
        conn.keep_alive = max_ka
        ack_props["server_keep_alive"] = max_ka
    if session.expiry_interval != props.get("session_expiry_interval", 0):
        ack_props["session_expiry_interval"] = session.expiry_interval
    return ack_props


def broker_limits_v5(limits: Any) -> dict:
    """The CONNACK properties for the broker's limits where they differ from the defaults."""
    ack_props: dict = {}
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
    return ack_props


def send_connack(conn: Connection, session_present: bool, ack_props: dict) -> bool:
    """The accepting CONNACK; False (and closed) when it is larger than the client takes."""
    connack = encode(p.Connack(session_present and conn.level >= 4, 0, ack_props), conn.level)
    if conn.client_max_packet and len(connack) > conn.client_max_packet:
        # MQTT 5 3.1.2.25: nothing larger than the client's maximum may be sent, CONNACK included
        log.info("client %s: maximum packet size %d is smaller than the CONNACK", conn.client_id,
                 conn.client_max_packet)
        conn.close(publish_will=False)
        return False
    conn.write(connack)
    return True


def handle_disconnect(conn: Connection, session: Session, pkt: p.Disconnect) -> None:
    """DISCONNECT: no will (mqtt.md item 25) unless MQTT 5 reason 0x04; MQTT 5 may change the
    session expiry interval, but not from 0 to non-zero (MQTT 5 3.14.2.2.2)."""
    if conn.level == 5:
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
    if session is None:
        # REFUSED (states.py): the CONNECT was never accepted (refused, or the client left
        # during the password check): there is no will to publish (3.1.1 [MQTT-3.1.2-8]:
        # stored "if the Connect request is accepted"); publishing it would publish as nobody,
        # unauthenticated
        return
    if session.connection is not conn:
        # taken over (the new connection owns the session now)
        if will is not None and publish_will:
            broker.wills.publish(will, conn.username, session.client_id)
        return
    session.connection = None
    session.disconnected_at = broker.clock.monotonic()
    if will is not None and publish_will:
        if conn.level == 5 and conn.will_delay and session.persistent:
            broker.wills.schedule(session, session.disconnected_at + conn.will_delay, will)
        else:
            broker.wills.publish(will, conn.username, session.client_id)
    if not session.persistent:
        broker.end_session(session)
    else:
        record_sent(broker, session)
        save_session(broker, session)
