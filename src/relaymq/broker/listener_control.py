"""Starting and stopping listeners by publication (mqtt.md item 5; seed 000 l.415):
``ON``/``OFF`` on ``$SYS/SCADA/MQIsdpListener/<port>`` or ``.../all``, administrators only."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relaymq.broker.connection import Connection

log = logging.getLogger("relaymq.listeners")

LISTENER_CONTROL_PREFIX = "$SYS/SCADA/MQIsdpListener/"


def handle_listener_control(conn: Connection, topic: str, payload: bytes) -> bool:
    """Apply a listener control publication; False if the publisher may not do it."""
    broker = conn.broker
    if conn.username is None or conn.username not in broker.config.access.administrators:
        log.warning("client %s (user %r) is not an administrator: listener control refused",
                    conn.client_id, conn.username)
        return False
    target = topic[len(LISTENER_CONTROL_PREFIX):]
    command = payload.strip().upper()
    if command not in (b"ON", b"OFF") or not target or "/" in target:
        log.warning("ignored listener control %r on %r (payload must be ON or OFF)", payload, topic)
        return True
    if broker.listener_control is None:
        log.warning("listener control is not available in this process")
        return True
    ok = broker.listener_control(target, command == b"ON")
    log.info("listener control by %s: %s %s -> %s", conn.username, target, command.decode(),
             "done" if ok else "no such listener")
    return True
