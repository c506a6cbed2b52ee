"""The statistics report of pubsub.md item 44 (seed 003 l.2871-2932, 3199-3370).

Why a pure function: the service calls it every ``stats_interval_ms`` and publishes the result
on ``$SYS/Broker/<broker>/ExecutionGroup/<eg>/Statistics``; tests call it directly. The seed's
per-client counters that the broker does not keep per connection (bytes cut through, disconnect
drops) are reported as 0; neighbours are 0 until broker networks exist (items 40-43).
"""

from __future__ import annotations

import json
from typing import Any


def statistics_topic(broker_name: str, execution_group: str) -> str:
    return f"$SYS/Broker/{broker_name}/ExecutionGroup/{execution_group}/Statistics"


def build_statistics(broker: Any, queue_subscriptions: int, now: float) -> dict[str, Any]:
    """Broker totals (client, neighbour and subscription counts, timestamp) and one record per
    connected client (3199-3370)."""
    sessions = [s for s in broker.sessions.values() if s.connection is not None]
    clients = []
    for session in sessions:
        clients.append({
            "clientId": session.client_id,
            "userId": session.username or "",
            "bytesQueued": session.queued_bytes,
            "messagesQueued": len(session.queue) + len(session.inflight),
            "messagesDropped": session.dropped,
            "bytesDropped": 0,
            "bytesCutThrough": 0,
            "disconnectMessagesDropped": 0,
            "disconnectBytesDropped": 0,
        })
    stats = broker.stats
    return {
        "broker": {
            "clientCount": len(sessions),
            "neighbourCount": 0,
            "subscriptionCount": len(broker.subscriptions),
            "queueSubscriptionCount": queue_subscriptions,
            "timestamp": now,
            "messagesReceived": stats.messages_received,
            "bytesReceived": stats.bytes_received,
            "messagesSent": stats.messages_sent,
            "bytesSent": stats.bytes_sent,
            "messagesDropped": stats.publish_dropped,
        },
        "clients": clients,
        "neighbours": [],
    }


def statistics_payload(broker: Any, queue_subscriptions: int, now: float) -> bytes:
    return json.dumps(build_statistics(broker, queue_subscriptions, now), sort_keys=True).encode()
