"""``[[bridge]]`` tables: this broker as an MQTT client of another broker (docs/networks.md)::

    [[bridge]]
    name = "site-a"                  # unique; the bridge's client id is relaymq-bridge-<name> unless client_id says
    host = "127.0.0.1"               # the remote broker
    port = 1883
    protocol = "3.1.1"               # or "5"
    clean_session = false            # false: persistent sessions at both ends (nothing lost while apart)
    session_expiry = 86400           # MQTT 5: the remote session's expiry interval (s) when persistent
    keep_alive = 60
    try_private = true               # MQTT 3.1.1: announce a bridge (protocol level | 0x80) so the remote
                                     # does not send our own publications back (Mosquitto's try_private)
    username = ""                    # credentials for the remote broker
    password = ""
    tls = false                      # TLS to the remote; tls_ca verifies it, tls_cert/tls_key is our certificate
    tls_ca = ""
    tls_cert = ""
    tls_key = ""
    tls_insecure = false             # do not check the remote certificate's host name
    local_username = ""              # who the bridge is towards this broker's ACL (default: the client id)
    reconnect_initial_ms = 500       # back-off after a failed or lost connection, doubling ...
    reconnect_max_ms = 30000         # ... up to this
    topic = [
      { pattern = "sensors/#", direction = "out", qos = 1, local_prefix = "", remote_prefix = "site-a/" },
      { pattern = "commands/#", direction = "in", qos = 1 },
    ]

A topic rule's ``pattern`` is an MQTT topic filter; the local topic is ``local_prefix +
topic`` and the remote one ``remote_prefix + topic``, as in Mosquitto's ``topic`` lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.config import (ConfigError, boolean, build_section, host_check, int_range, key_field, name_check,
                            one_of, text)
from relaymq.pubsub.topics import TopicError, validate_topic_filter
from relaymq.mqtt.wire import MAX_UINT16, MAX_UINT32
from relaymq.net.binding import MAX_PORT

DIRECTIONS = ("in", "out", "both")


def _pattern(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return "an MQTT topic filter"
    try:
        validate_topic_filter(value)
    except TopicError as exc:
        return f"an MQTT topic filter ({exc})"
    return None


def _prefix(value: object) -> str | None:
    if isinstance(value, str) and "+" not in value and "#" not in value and "\0" not in value:
        return None
    return "a topic prefix without wildcards"


@dataclass(frozen=True)
class TopicRule:
    """One ``topic`` entry: what crosses the bridge, which way, at what QoS."""

    pattern: str = key_field("", _pattern)
    direction: str = key_field("out", one_of(*DIRECTIONS))
    qos: int = key_field(0, int_range(0, 2))
    local_prefix: str = key_field("", _prefix)
    remote_prefix: str = key_field("", _prefix)

    @property
    def outbound(self) -> bool:
        return self.direction in ("out", "both")

    @property
    def inbound(self) -> bool:
        return self.direction in ("in", "both")

    @property
    def local_filter(self) -> str:
        return self.local_prefix + self.pattern

    @property
    def remote_filter(self) -> str:
        return self.remote_prefix + self.pattern


@dataclass(frozen=True)
class BridgeSettings:
    """One ``[[bridge]]`` table."""

    name: str = key_field("", name_check)
    host: str = key_field("", host_check)
    port: int = key_field(1883, int_range(1, MAX_PORT))
    protocol: str = key_field("3.1.1", one_of("3.1.1", "5"))
    client_id: str = key_field("", text)
    clean_session: bool = key_field(False, boolean)
    session_expiry: int = key_field(86400, int_range(0, MAX_UINT32))
    keep_alive: int = key_field(60, int_range(0, MAX_UINT16))
    try_private: bool = key_field(True, boolean)
    username: str = key_field("", text)
    password: str = key_field("", text)
    tls: bool = key_field(False, boolean)
    tls_ca: str = key_field("", text, path="file")
    tls_cert: str = key_field("", text, path="file")
    tls_key: str = key_field("", text, path="file")
    tls_insecure: bool = key_field(False, boolean)
    local_username: str = key_field("", text)
    reconnect_initial_ms: int = key_field(500, int_range(1, 3_600_000))
    reconnect_max_ms: int = key_field(30_000, int_range(1, 3_600_000))
    topic: tuple[TopicRule, ...] = key_field((), lambda v: None)

    @property
    def remote_client_id(self) -> str:
        return self.client_id or f"relaymq-bridge-{self.name}"

    @property
    def local_principal(self) -> str:
        return self.local_username or self.remote_client_id

    def __repr__(self) -> str:  # never the password, in a log line or a traceback
        shown = {f: ("***" if f == "password" and v else v) for f, v in self.__dict__.items()}
        return "BridgeSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def _topics(raw: object, key: str) -> tuple[TopicRule, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(key, "expected a list of topic tables ({ pattern = ..., direction = ..., qos = ... })")
    rules = []
    for index, table in enumerate(raw):
        item_key = f"{key}[{index}]"
        if isinstance(table, dict) and "pattern" not in table:
            raise ConfigError(f"{item_key}.pattern", "missing: every topic rule needs a pattern")
        rules.append(build_section(TopicRule, table, item_key, None))
    return tuple(rules)


def build(raw: object, key: str, base_dir: str | None) -> tuple[BridgeSettings, ...]:
    """The ``[[bridge]]`` array of tables (none when ``raw`` is None); raise ConfigError naming
    the key at fault (``bridge[1].topic[0].qos``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(key, "expected [[bridge]] tables")
    out: list[BridgeSettings] = []
    for index, table in enumerate(raw):
        item_key = f"{key}[{index}]"
        if not isinstance(table, dict):
            raise ConfigError(item_key, "expected a table")
        for required in ("name", "host", "topic"):
            if required not in table:
                raise ConfigError(f"{item_key}.{required}", "missing: every bridge needs name, host and topic")
        table = dict(table)
        topics = _topics(table.pop("topic"), f"{item_key}.topic")
        bridge = build_section(BridgeSettings, table, item_key, base_dir)
        if bool(bridge.tls_cert) != bool(bridge.tls_key):
            missing = "tls_key" if bridge.tls_cert else "tls_cert"
            raise ConfigError(f"{item_key}.{missing}", "tls_cert and tls_key go together (a client certificate)")
        if bridge.password and not bridge.username:
            raise ConfigError(f"{item_key}.username", "password is set but username is not (both are needed)")
        if bridge.reconnect_max_ms < bridge.reconnect_initial_ms:
            raise ConfigError(f"{item_key}.reconnect_max_ms", "must be at least reconnect_initial_ms")
        for earlier in out:
            if earlier.name == bridge.name:
                raise ConfigError(f"{item_key}.name", f"{bridge.name!r} is defined twice")
            if earlier.remote_client_id == bridge.remote_client_id and (earlier.host, earlier.port) == (
                    bridge.host, bridge.port):
                raise ConfigError(f"{item_key}.client_id", f"{bridge.remote_client_id!r} is used by bridge"
                                                           f" {earlier.name!r} to the same broker")
        out.append(BridgeSettings(**{**bridge.__dict__, "topic": topics}))
    return tuple(out)
