"""The [realtime] section: the real-time transport listener (seed 003 l.2004-2071).

    [realtime]
    enabled = false                # the listener is opt-in
    host = "localhost"             # 127.0.0.1 and ::1 only until configured otherwise
    port = 1506                    # 0: any free port
    max_broker_queue_size = 1000000  # maxBrokerQueueSize: bytes queued for one client; 0 = unlimited
    max_message_size = 100000      # maxMessageSize: a larger frame from a client disconnects it
    broker_ping_interval = 5000    # brokerPingInterval, ms; 0 = no pings
    max_connections = 1024         # -1: no cap
    max_connections_per_address = 256

Every key is checked here; a mistake stops start-up naming it (``realtime.port``).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.net.binding import MAX_PORT
from relaymq.config import boolean, build_section, int_range, key_field, non_empty_text, unlimited_or_at_least


@dataclass(frozen=True)
class RealtimeSettings:
    """[realtime] keys; docs/configuration.md describes each."""

    enabled: bool = key_field(False, boolean)
    host: str = key_field("localhost", non_empty_text)
    port: int = key_field(1506, int_range(0, MAX_PORT))
    max_broker_queue_size: int = key_field(1_000_000, int_range(0, 1 << 40))
    max_message_size: int = key_field(100_000, int_range(64, 1 << 30))
    broker_ping_interval: int = key_field(5000, int_range(0, 3_600_000))
    max_connections: int = key_field(1024, unlimited_or_at_least(1))
    max_connections_per_address: int = key_field(256, unlimited_or_at_least(1))


def build(raw: object, key: str, base_dir: str | None) -> RealtimeSettings:
    """Build [realtime] from its TOML table (None: defaults); errors name the exact key."""
    settings: RealtimeSettings = build_section(RealtimeSettings, raw, key, base_dir)
    return settings
