"""What an administrator sees of the MQTT broker and may do to it (issue 18, the admin API of
docs/rest.md "MQTT objects"): clients, sessions, subscriptions and retained messages as plain
dicts (JSON-ready), and the acts: disconnect a client, discard a session, clear a retained
message. Sans-I/O: the HTTP routes (relaymq.http.admin_mqtt) call these on the event loop."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from relaymq.broker.retain import store_retained
from relaymq.pubsub.model import REMOVED_ADMIN
from relaymq.pubsub.topics import parse_shared
from relaymq.mqtt import reason_codes as rc
from relaymq.store.base import NEVER_EXPIRES

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.connection import Connection
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage, SubscriptionRecord


def matches(search: str | None, *fields: str | None) -> bool:
    """A case-insensitive substring ``search`` in any of ``fields`` (no search: everything)."""
    if not search:
        return True
    wanted = search.lower()
    return any(field is not None and wanted in field.lower() for field in fields)


def client_view(conn: Connection, now: float) -> dict[str, Any]:
    session = conn.session
    return {
        "clientId": conn.client_id,
        "username": conn.username,
        "peer": conn.peer,
        "listener": conn.listener,
        "protocolLevel": conn.level,
        "keepAlive": conn.keep_alive,
        "connectedSeconds": round(now - conn.created_at, 3),
        "messagesReceived": conn.messages_received,
        "messagesSent": conn.messages_sent,
        "bytesReceived": conn.bytes_received,
        "bytesSent": conn.bytes_sent,
        "subscriptions": len(session.subscriptions) if session is not None else 0,
        "queued": queued(session) if session is not None else 0,
        "inflight": len(session.inflight) if session is not None else 0,
    }


def clients(broker: Broker, search: str | None = None) -> Iterator[dict[str, Any]]:
    """Connected clients (CONNECT accepted) whose client id, user name or address holds ``search``."""
    now = broker.clock.monotonic()
    for conn in sorted((c for c in broker.connections if c.connected), key=lambda c: c.client_id or ""):
        if matches(search, conn.client_id, conn.username, conn.peer):
            yield client_view(conn, now)


def connection_of(broker: Broker, client_id: str) -> Connection | None:
    session = broker.sessions.get(client_id)
    conn = session.connection if session is not None else None
    return conn if conn is not None and conn.connected and not conn.closed else None


def disconnect(broker: Broker, client_id: str, by: str | None, publish_will: bool = True) -> bool:
    """Disconnect a connected client (MQTT 5: DISCONNECT 0x98 Administrative action); its session
    stays as its expiry says. False when no such client is connected."""
    conn = connection_of(broker, client_id)
    if conn is None:
        return False
    conn.disconnect_with(rc.ADMINISTRATIVE_ACTION, f"disconnected by the administrator {by or '(anonymous)'}",
                         publish_will)
    return True


def queued(session: Session) -> int:
    return len(session.queue) + session.in_store_only()


def session_view(session: Session, now: float) -> dict[str, Any]:
    online = session.connection is not None
    expiry = session.expiry_interval
    expires_in: float | None = None
    if not online and expiry != NEVER_EXPIRES and session.disconnected_at is not None:
        expires_in = max(0.0, round(expiry - (now - session.disconnected_at), 3))
    return {
        "clientId": session.client_id,
        "username": session.username,
        "online": online,
        "protocolLevel": session.protocol_level,
        "expiryInterval": None if expiry == NEVER_EXPIRES else expiry,  # None: never
        "expiresInSeconds": expires_in,  # None: online, or never
        "subscriptions": len(session.subscriptions),
        "queued": queued(session),
        "queuedBytes": session.queued_bytes,
        "inflight": len(session.inflight),
        "dropped": session.dropped,
    }


def sessions(broker: Broker, search: str | None = None, state: str | None = None) -> Iterator[dict[str, Any]]:
    """Sessions (``state``: ``online``, ``offline`` or either) matching ``search``."""
    now = broker.clock.monotonic()
    for client_id in sorted(broker.sessions):
        session = broker.sessions[client_id]
        online = session.connection is not None
        if state is not None and (state == "online") != online:
            continue
        if matches(search, client_id, session.username):
            yield session_view(session, now)


def discard_session(broker: Broker, client_id: str, by: str | None) -> bool:
    """Disconnect the client (no will: its session is gone), then discard its session with its
    subscriptions and queued messages (as a clean start would). False when there is none."""
    session = broker.sessions.get(client_id)
    if session is None:
        return False
    disconnect(broker, client_id, by, publish_will=False)
    if broker.sessions.get(client_id) is session:  # a clean session ended with its connection
        broker.end_session(session, REMOVED_ADMIN)
    return True


def subscription_view(record: SubscriptionRecord) -> dict[str, Any]:
    group, topic_filter = parse_shared(record.topic_filter)
    return {
        "clientId": record.client_id,
        "topicFilter": topic_filter,
        "shareGroup": group,
        "qos": record.qos,
        "noLocal": record.no_local,
        "retainAsPublished": record.retain_as_published,
        "retainHandling": record.retain_handling,
        "subscriptionIdentifier": record.subscription_id,
        "contentFilter": record.content_filter,
    }


def subscriptions(broker: Broker, search: str | None = None, client_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Every session's subscriptions whose filter or client id holds ``search``."""
    for cid in sorted(broker.sessions):
        if client_id is not None and cid != client_id:
            continue
        for topic_filter, record in sorted(broker.sessions[cid].subscriptions.items()):
            if matches(search, topic_filter, cid):
                yield subscription_view(record)


def payload_view(payload: bytes) -> dict[str, Any]:
    """UTF-8 text as ``payload``, other bytes as ``payloadBase64``."""
    try:
        return {"payload": payload.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payloadBase64": base64.b64encode(payload).decode("ascii")}


def retained_view(topic: str, message: StoredMessage, max_payload: int) -> dict[str, Any]:
    return {"topic": topic, "qos": message.qos, "size": len(message.payload),
            **payload_view(message.payload[:max_payload]), "truncated": len(message.payload) > max_payload,
            "expiresAt": message.expiry_at}


def retained(broker: Broker, topic_filter: str = "#", max_payload: int = 4096) -> Iterator[dict[str, Any]]:
    """Retained messages matching ``topic_filter`` (``#`` leaves out ``$SYS/...``, as MQTT does;
    ask for ``$SYS/#`` to see those); payloads cut at ``max_payload`` bytes."""
    for topic, message in sorted(broker.retained.match(topic_filter), key=lambda item: item[0]):
        yield retained_view(topic, message, max_payload)


def clear_retained(broker: Broker, topic: str) -> bool:
    """Clear the retained message of ``topic`` as an empty retained publication would (its store
    row too). False when there is none."""
    if broker.retained.get(topic) is None:
        return False
    store_retained(broker, broker.new_message(topic, b"", 0, True))
    return True
