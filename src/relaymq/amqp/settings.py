"""The [amqp] section: the AMQP 1.0 listener (docs/amqp.md).

    [amqp]
    enabled = false           # the listener is opt-in (docs/amqp.md: why)
    host = "localhost"        # 127.0.0.1 and ::1 only until configured otherwise
    port = 5672               # plain AMQP; 0: any free port
    tls_port = 5671           # AMQPS, only when tls_cert and tls_key are given
    tls_cert = ""
    tls_key = ""
    queue_prefix = "queue://" # an address with this prefix names a queue of the queue manager
    topic_prefix = "topic://" # ... with this one a topic (filter) of the topic tree
    allow_anonymous = false   # SASL ANONYMOUS offered (and a client without SASL accepted)
    max_frame_size = 1048576  # bytes; also bounds one message in transfer frames
    max_message_size = 16777216
    idle_timeout = 60         # seconds; 0: none
    credit = 100              # link credit granted to a sending client at a time
    max_connections = 1024
    max_connections_per_address = 256

Every key is checked here; a mistake stops start-up naming it (``amqp.port``).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.config import (ConfigError, boolean, build_section, int_range, key_field, non_empty_text, text,
                            unlimited_or_at_least)
from relaymq.net.binding import MAX_PORT


@dataclass(frozen=True)
class AmqpSettings:
    """[amqp] keys; docs/amqp.md describes each."""

    enabled: bool = key_field(False, boolean)
    host: str = key_field("localhost", non_empty_text)
    port: int = key_field(5672, int_range(0, MAX_PORT))
    tls_port: int = key_field(5671, int_range(0, MAX_PORT))
    tls_cert: str = key_field("", text, path="file")
    tls_key: str = key_field("", text, path="file")
    queue_prefix: str = key_field("queue://", non_empty_text)
    topic_prefix: str = key_field("topic://", non_empty_text)
    allow_anonymous: bool = key_field(False, boolean)
    max_frame_size: int = key_field(1_048_576, int_range(512, 1_073_741_824))
    max_message_size: int = key_field(16_777_216, int_range(1024, 1_073_741_824))
    idle_timeout: int = key_field(60, int_range(0, 86400))
    credit: int = key_field(100, int_range(1, 100_000))
    max_connections: int = key_field(1024, unlimited_or_at_least(1))
    max_connections_per_address: int = key_field(256, unlimited_or_at_least(1))


def build(raw: object, key: str, base_dir: str | None) -> AmqpSettings:
    """Build [amqp] from its TOML table (None: defaults); errors name the exact key."""
    settings = build_section(AmqpSettings, raw, key, base_dir)
    if bool(settings.tls_cert) != bool(settings.tls_key):
        missing = "tls_key" if settings.tls_cert else "tls_cert"
        raise ConfigError(f"{key}.{missing}", "tls_cert and tls_key must be given together")
    if settings.queue_prefix == settings.topic_prefix:
        raise ConfigError(f"{key}.topic_prefix", "must differ from queue_prefix")
    return settings
