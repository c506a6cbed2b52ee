"""Counters behind the $SYS/broker/... topics (mqtt.md; issue: statistics at an interval) and
the Prometheus metrics (relaymq.http.metrics, issue 18), which read them at scrape time.

Each event is counted once, where it happens, in the finest split a reader wants (by QoS, by
drop reason); the totals ``$SYS`` shows are sums of those, computed when read."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Why a publication was not delivered to a subscriber (``dropped_by_reason``'s keys).
DROP_QOS0_NOT_CONNECTED = "qos0_not_connected"  # QoS 0 for a disconnected or congested client (mqtt.md item 26)
DROP_TOO_LARGE = "too_large_for_client"  # over the client's Maximum Packet Size (MQTT 5 3.1.2.25)
DROP_QUEUE_FULL = "queue_full"  # a full session whose overflow policy drops (delivery.py)
DROP_REASONS = (DROP_QOS0_NOT_CONNECTED, DROP_TOO_LARGE, DROP_QUEUE_FULL)


def _by_qos() -> list[int]:
    return [0, 0, 0]


@dataclass(slots=True)
class BrokerStats:
    """The broker's counters, each event counted once (for $SYS and the metrics)."""

    received_by_qos: list[int] = field(default_factory=_by_qos)  # PUBLISH packets received, index = QoS
    sent_by_qos: list[int] = field(default_factory=_by_qos)  # PUBLISH packets sent, index = QoS
    payload_received_by_qos: list[int] = field(default_factory=_by_qos)  # their payload bytes
    payload_sent_by_qos: list[int] = field(default_factory=_by_qos)
    bytes_received: int = 0  # bytes of every MQTT packet
    bytes_sent: int = 0
    dropped_by_reason: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    #: Payload bytes of the messages counted in ``dropped_by_reason`` (pubsub.md item 44).
    bytes_dropped: int = 0
    #: Of the drops, those followed by the broker disconnecting the client (a full persistent
    #: session with ``overflow = "drop-new"``, delivery.py): messages and payload bytes.
    disconnect_dropped: int = 0
    disconnect_bytes_dropped: int = 0
    #: Payload bytes of publications written to a client at once, without being queued (item 44).
    bytes_cut_through: int = 0
    publications_held: int = 0  # client publications held back by a full session (backpressure)
    stalls: int = 0  # times a full session held publishers back for longer than STALLED_AFTER
    connections_total: int = 0  # connections accepted since start
    clients_connected: int = 0  # clients whose CONNECT was accepted and that have not gone
    clients_maximum: int = 0  # most clients connected at once

    @property
    def messages_received(self) -> int:
        return sum(self.received_by_qos)

    @property
    def messages_sent(self) -> int:
        return sum(self.sent_by_qos)

    @property
    def publish_dropped(self) -> int:
        """Messages not delivered because a limit was reached, for any reason."""
        return sum(self.dropped_by_reason.values())

    @property
    def overflow_dropped(self) -> int:
        """Of those, QoS 1/2 dropped by a full session (listener overflow)."""
        return self.dropped_by_reason[DROP_QUEUE_FULL]
