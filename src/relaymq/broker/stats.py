"""Counters behind the $SYS/broker/... topics (mqtt.md; issue: statistics at an interval)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class BrokerStats:
    messages_received: int = 0  # PUBLISH packets received from clients
    messages_sent: int = 0  # PUBLISH packets sent to clients
    bytes_received: int = 0
    bytes_sent: int = 0
    publish_dropped: int = 0  # messages not delivered because a limit was reached
    overflow_dropped: int = 0  # of those, QoS 1/2 dropped by a full session (listener overflow)
    publications_held: int = 0  # client publications held back by a full session (backpressure)
    stalls: int = 0  # times a full session held publishers back for longer than STALLED_AFTER
    connections_total: int = 0  # connections accepted since start
    clients_maximum: int = 0  # most clients connected at once
