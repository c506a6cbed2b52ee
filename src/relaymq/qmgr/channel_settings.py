"""Connection definitions: how this queue manager reaches another (everyplace.md items 23, 27;
seed 004 l.3655-3795), as ``[[qmgr.connection]]`` tables::

    [[qmgr.connection]]
    name = "SERVER"                    # exactly the remote queue manager's name (item 23)
    address = "server.example:8081"    # host:port (TCP), or http(s)://host:port (HTTP adapter)
    tls = false                        # TCP over TLS; tls_ca verifies the server
    tls_cert = ""                      # a client certificate (default: [qmgr] channel_tls_cert)
    tls_key = ""
    user = ""                          # authenticate to the peer as this user (its channel
    password = ""                      # password file's line for this queue manager, or a user
                                       # of its broker password file): in the HELLO over TCP
                                       # (use tls = true), HTTP basic authentication over HTTP
    batch = 100                        # messages per PUT/CONFIRM round
    retry_initial_ms = 100             # reconnect backoff, doubling ...
    retry_max_ms = 5000                # ... up to this
    pull_interval_ms = 0               # > 0: pull (home-server, item 24) every so often

    [[qmgr.connection]]
    name = "TARGET"
    via = "SERVER"                     # item 23: use SERVER's connection, keep the names

    [[qmgr.connection]]
    name = "QM1ALIAS"                  # no address and no via: this queue manager answers
                                       # to QM1ALIAS too (item 27)
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.config import ConfigError, boolean, build_section, int_range, key_field, text
from relaymq.qmgr.names import is_valid_name

#: The channel listener's default limit for an authenticated peer's frames
#: (``[qmgr] channel_max_frame``; relaymq.qmgr.channel_frames has the others).
LISTENER_MAX_FRAME = 16 * 1024 * 1024


def _name(value: object) -> str | None:
    return None if is_valid_name(value) else "a queue manager name of 0-9 a-z A-Z _ . % characters"


def _optional_name(value: object) -> str | None:
    return None if value == "" or is_valid_name(value) else "\"\" or a queue manager name"


def _address(value: object) -> str | None:
    if value == "":
        return None
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            return None
        host, sep, port = value.rpartition(":")
        if sep and host and port.isdigit() and 0 < int(port) < 65536:
            return None
    return '"host:port", "http://host:port[/path]" or ""'


@dataclass(frozen=True)
class ConnectionSettings:
    """One connection definition."""

    name: str = key_field("", _name)
    address: str = key_field("", _address)
    via: str = key_field("", _optional_name)
    tls: bool = key_field(False, boolean)
    tls_ca: str = key_field("", text, path="file")
    tls_cert: str = key_field("", text, path="file")
    tls_key: str = key_field("", text, path="file")
    #: The peer's channel user and password (docs/channels.md "Peer authentication"): sent in
    #: the HELLO over TCP, as HTTP basic authentication on the peer's channel route.
    user: str = key_field("", text)
    password: str = key_field("", text)
    batch: int = key_field(100, int_range(1, 100_000))
    retry_initial_ms: int = key_field(100, int_range(1, 3_600_000))
    retry_max_ms: int = key_field(5000, int_range(1, 3_600_000))
    pull_interval_ms: int = key_field(0, int_range(0, 86_400_000))
    timeout_ms: int = key_field(30_000, int_range(1, 3_600_000))
    #: The communications adapter (relaymq.qmgr.adapters): tcp, tls, http or "module:Class";
    #: "" = as the address says (http(s):// -> http, tls = true -> tls, else tcp).
    adapter: str = key_field("", text)

    def __repr__(self) -> str:  # never the password, in a log line or a traceback
        shown = {f: ("***" if f == "password" and v else v) for f, v in self.__dict__.items()}
        return "ConnectionSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    @property
    def is_alias(self) -> bool:
        """A definition with neither address nor via names this queue manager (item 27)."""
        return not self.address and not self.via

    @property
    def is_http(self) -> bool:
        return self.address.startswith(("http://", "https://"))


def build_connections(raw: object, key: str, base_dir: str | None) -> tuple[ConnectionSettings, ...]:
    """The ``connection`` array of tables; errors name the exact key (``qmgr.connection[1].via``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(key, "expected [[...connection]] tables")
    out: list[ConnectionSettings] = []
    for index, table in enumerate(raw):
        connection = _connection(table, f"{key}[{index}]", base_dir)
        if any(earlier.name == connection.name for earlier in out):
            raise ConfigError(f"{key}[{index}].name", f"{connection.name!r} is defined twice")
        out.append(connection)
    _check_vias(out, key)
    return tuple(out)


def _connection(table: object, item_key: str, base_dir: str | None) -> ConnectionSettings:
    """One ``[[connection]]`` table, checked on its own."""
    if isinstance(table, dict) and "name" not in table:
        raise ConfigError(f"{item_key}.name", "missing: every connection needs the remote queue manager's name")
    connection = build_section(ConnectionSettings, table, item_key, base_dir)
    if connection.address and connection.via:
        raise ConfigError(f"{item_key}.via", "give address or via, not both")
    if connection.password and not connection.user:
        raise ConfigError(f"{item_key}.user", "password is set but user is not (both are needed)")
    if bool(connection.tls_cert) != bool(connection.tls_key):
        missing = "tls_key" if connection.tls_cert else "tls_cert"
        raise ConfigError(f"{item_key}.{missing}", "tls_cert and tls_key go together (a client certificate)")
    return connection


def _check_vias(connections: list[ConnectionSettings], key: str) -> None:
    """Every ``via`` names a connection, and following them ends at an address, not in a loop
    or at an alias (item 23)."""
    names = {c.name for c in connections}
    for index, connection in enumerate(connections):
        if connection.via and connection.via not in names:
            raise ConfigError(f"{key}[{index}].via", f"no connection named {connection.via!r}")
    for index, connection in enumerate(connections):
        seen = {connection.name}
        current = connection
        while current.via:
            current = next(c for c in connections if c.name == current.via)
            if current.name in seen:
                raise ConfigError(f"{key}[{index}].via", f"via loop through {current.name!r}")
            seen.add(current.name)
        if connection.via and current.is_alias:
            raise ConfigError(f"{key}[{index}].via", f"{connection.via!r} leads to no address")


def hello_credentials_of(route: ConnectionSettings) -> tuple[str, str] | None:
    """The user and password a TCP connection along ``route`` sends in its HELLO (over HTTP
    they go as basic authentication instead)."""
    if not route.user or route.is_http:
        return None
    return route.user, route.password


def route_of(name: str, connections: tuple[ConnectionSettings, ...]) -> ConnectionSettings | None:
    """The connection that carries traffic for ``name``: its definition, followed through
    ``via`` to the one with an address (item 23); None when there is none."""
    by_name = {c.name: c for c in connections}
    current = by_name.get(name)
    while current is not None and current.via:
        current = by_name.get(current.via)
    if current is None or current.is_alias:
        return None
    return current
