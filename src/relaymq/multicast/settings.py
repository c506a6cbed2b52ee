"""The [multicast] section: the broker's multicast parameters (seed 003 l.568-1084).

    [multicast]
    enabled = false                      # multicastEnabled
    protocol_type = "PTL"                # multicastProtocolType: only PTL (the PGM ones are not served)
    address_range_min = "239.255.0.0"    # multicastAddressRangeMin, in 224.0.0.0..239.255.255.255
    address_range_max = "239.255.255.255"  # multicastAddressRangeMax, not below the minimum
    data_port = 34343                    # multicastDataPort: UDP, data out, NAKs and joins in
    packet_size = 7000                   # multicastPacketSizeBytes, 500..32000
    heartbeat_timeout = 20               # multicastHeartbeatTimeoutSec: receivers suspect a failure after twice this
    control_interval_ms = 1000           # how often the control packet (heartbeat) goes out: "about every second"
    ttl = 1                              # multicastMCastSocketTTL, 1..255 (0 is refused)
    interface = ""                       # multicastMulticastInterface: an address or host name; "" the system's choice
    overlapping_topic_behavior = "Accept"  # multicastOverlappingTopicBehavior: Accept, Reject, Revert
    limit_trans_rate = "Disabled"        # multicastLimitTransRate: Disabled, Static, Dynamic
    trans_rate_limit_kbps = 10000        # multicastTransRateLimitKbps, 10..1000000
    backoff_time_ms = 100                # multicastBackoffTimeMillis, 0..1000 (client)
    nack_check_period_ms = 300           # multicastNackCheckPeriodMillis, 10..1000 (client)
    packet_buffers = 500                 # multicastPacketBuffers, 1..5000 (client)
    socket_buffer_size_kb = 3000         # multicastSocketBufferSizeKbytes, 65..10000 (client)
    minimal_history_kb = 60000           # multicastMinimalHistoryKBytes, 1000..1000000: the repair window
    nack_accumulation_ms = 500           # multicastNackAccumulationTimeMillis, 50..1000
    root = "Disabled"                    # the topic root: Enabled or Disabled
    root_group = "auto"                  # the root's group when Enabled
    root_quality = "Reliable"            # the root's quality of service when Enabled

    [[multicast.topic]]                  # one per topic configured for multicast
    topic = "prices/stock"
    enabled = "Enabled"                  # Enabled, Disabled or Inherit (the default)
    group = "auto"                       # "auto" (from the address range) or an address in it
    quality = "Reliable"                 # Reliable (the default) or Unreliable

Every key is checked here; a mistake stops start-up naming it (``multicast.packet_size``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from relaymq.net.binding import MAX_PORT
from relaymq.config import ConfigError, boolean, build_section, int_range, key_field, one_of, text

#: The whole IPv4 multicast range (seed l.584, 594).
MULTICAST_LOW = ipaddress.IPv4Address("224.0.0.0")
MULTICAST_HIGH = ipaddress.IPv4Address("239.255.255.255")
AUTO = "auto"
BEHAVIORS = ("Accept", "Reject", "Revert")


def ipv4_multicast(value: object) -> str | None:
    """An IPv4 address in 224.0.0.0..239.255.255.255."""
    expected = "an IPv4 address in 224.0.0.0..239.255.255.255"
    if not isinstance(value, str):
        return expected
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        return expected
    return None if MULTICAST_LOW <= address <= MULTICAST_HIGH else expected


def group_address(value: object) -> str | None:
    """"auto" or an IPv4 multicast address."""
    return None if value == AUTO else ipv4_multicast(value)


def ttl_value(value: object) -> str | None:
    """1..255: 0 would keep packets from leaving the host on some systems and not others."""
    if value == 0:
        return "an integer in 1..255 (0 is refused: on some systems it stops reception)"
    return int_range(1, 255)(value)


@dataclass(frozen=True)
class TopicSettings:
    """One [[multicast.topic]] table."""

    topic: str = key_field("", text)
    enabled: str = key_field("Inherit", one_of("Enabled", "Disabled", "Inherit"))
    group: str = key_field(AUTO, group_address)
    quality: str = key_field("Reliable", one_of("Reliable", "Unreliable"))


@dataclass(frozen=True)
class MulticastSettings:
    """[multicast] keys; docs/configuration.md describes each."""

    enabled: bool = key_field(False, boolean)
    protocol_type: str = key_field("PTL", one_of("PTL", "PGM/IP", "UDP encapsulated PGM"))
    address_range_min: str = key_field("239.255.0.0", ipv4_multicast)
    address_range_max: str = key_field("239.255.255.255", ipv4_multicast)
    data_port: int = key_field(34343, int_range(1, MAX_PORT))
    packet_size: int = key_field(7000, int_range(500, 32000))
    heartbeat_timeout: int = key_field(20, int_range(1, 3600))
    control_interval_ms: int = key_field(1000, int_range(50, 10000))
    ttl: int = key_field(1, ttl_value)
    interface: str = key_field("", text)
    overlapping_topic_behavior: str = key_field("Accept", one_of(*BEHAVIORS))
    limit_trans_rate: str = key_field("Disabled", one_of("Disabled", "Static", "Dynamic"))
    trans_rate_limit_kbps: int = key_field(10000, int_range(10, 1_000_000))
    backoff_time_ms: int = key_field(100, int_range(0, 1000))
    nack_check_period_ms: int = key_field(300, int_range(10, 1000))
    packet_buffers: int = key_field(500, int_range(1, 5000))
    socket_buffer_size_kb: int = key_field(3000, int_range(65, 10000))
    minimal_history_kb: int = key_field(60000, int_range(1000, 1_000_000))
    nack_accumulation_ms: int = key_field(500, int_range(50, 1000))
    root: str = key_field("Disabled", one_of("Enabled", "Disabled"))
    root_group: str = key_field(AUTO, group_address)
    root_quality: str = key_field("Reliable", one_of("Reliable", "Unreliable"))
    topics: tuple[TopicSettings, ...] = ()


def build(raw: object, key: str, base_dir: str | None) -> MulticastSettings:
    """Build [multicast] from its TOML table (None: defaults); errors name the exact key."""
    if raw is None:
        return MulticastSettings()
    if not isinstance(raw, dict):
        raise ConfigError(key, "expected a table")
    table = dict(raw)
    topics_raw = table.pop("topic", [])
    settings: MulticastSettings = build_section(MulticastSettings, table, key, base_dir)
    if settings.protocol_type != "PTL":
        raise ConfigError(f"{key}.protocol_type", f"{settings.protocol_type!r} is not served: relaymq multicasts"
                                                  " over UDP with its own NAK-based repair (PTL); use \"PTL\"")
    low = ipaddress.IPv4Address(settings.address_range_min)
    high = ipaddress.IPv4Address(settings.address_range_max)
    if high < low:
        raise ConfigError(f"{key}.address_range_max", f"{high} is lower than address_range_min {low}")
    for name, value in (("root_group", settings.root_group),):
        _check_in_range(f"{key}.{name}", value, low, high)
    if not isinstance(topics_raw, list):
        raise ConfigError(f"{key}.topic", "expected [[multicast.topic]] tables")
    topics: list[TopicSettings] = []
    for index, item in enumerate(topics_raw):
        item_key = f"{key}.topic[{index}]"
        if isinstance(item, dict) and "topic" not in item:
            raise ConfigError(f"{item_key}.topic", "missing: every [[multicast.topic]] names its topic")
        entry: TopicSettings = build_section(TopicSettings, item, item_key, base_dir)
        if not entry.topic or "+" in entry.topic.split("/") or "#" in entry.topic.split("/"):
            raise ConfigError(f"{item_key}.topic", f"{entry.topic!r}: a topic name, not empty and without wildcards"
                                                   " (the root is [multicast] root)")
        if any(other.topic == entry.topic for other in topics):
            raise ConfigError(f"{item_key}.topic", f"{entry.topic!r} is listed twice")
        _check_in_range(f"{item_key}.group", entry.group, low, high)
        topics.append(entry)
    return MulticastSettings(**{**settings.__dict__, "topics": tuple(topics)})


def _check_in_range(key: str, group: str, low: ipaddress.IPv4Address, high: ipaddress.IPv4Address) -> None:
    if group != AUTO and not low <= ipaddress.IPv4Address(group) <= high:
        raise ConfigError(key, f"{group} is outside address_range_min..address_range_max ({low}..{high})")
