"""The broker's configuration: one TOML file, validated completely before anything starts.

Why validate up front: a broker that starts with a typo in its configuration silently runs
with a default the operator did not choose (``max_inflight = "ten"``, ``[broker] colour``). So
every key is known, typed and range-checked here, and the first problem stops start-up with
ONE line that names the key, e.g.::

    config error: limits.max_inflight: expected an integer >= 1, got "ten"
    config error: unknown key broker.colour

The schema lives in the dataclasses below: each field's default is the embedded default and
its ``metadata["check"]`` is the rule for it, so adding a key is one line and the loader, the
error messages and the defaults cannot drift apart. ``docs/configuration.md`` and
``relaymq.example.toml`` document every key (a test loads the example).

Relative paths in a configuration file are resolved against the directory of that file (a
service started from ``/`` with ``--config /etc/relaymq/relaymq.toml`` finds its files next
to the configuration); paths given on the command line and the built-in ``./data`` default
are relative to the current directory, as a user typing them expects.
"""

from __future__ import annotations

import dataclasses
import importlib
import ipaddress
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from relaymq.mqtt.wire import MAX_PACKET_SIZE, MAX_UINT16
from relaymq.net.binding import LOOPBACK_ADDRESSES, LOOPBACK_HOST, MAX_PORT

#: A rule for one key: returns None when the value is acceptable, else what was expected.
Check = Callable[[Any], str | None]

_UNKNOWN_KEY = "unknown key"

#: Largest CONNECT accepted by default: five strings of 65,535 bytes (client id, will topic,
#: will payload, user name, password) and their lengths are 327,685 bytes; the rest of 512 KiB
#: leaves room for MQTT 5 properties.
DEFAULT_MAX_CONNECT_PACKET = 524_288
#: The values of a listener's ``overflow`` key (relaymq.broker.delivery), the default first.
OVERFLOW_POLICIES = ("block", "drop-new", "drop-oldest")
#: Largest MQTT 5 Session Expiry Interval (a four-byte integer; this value means "never").
SESSION_EXPIRY_LIMIT = 4_294_967_295


class ConfigError(ValueError):
    """The configuration cannot be used; ``str(error)`` is the one line to show the operator.

    ``key`` is the dotted key at fault (``limits.max_inflight``, ``listener[1].port``) or, for a
    file that cannot be read or parsed, the file's path; ``message`` says what is wrong.
    """

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.message.startswith(_UNKNOWN_KEY):
            return f"config error: {_UNKNOWN_KEY} {self.key}{self.message[len(_UNKNOWN_KEY):]}"
        return f"config error: {self.key}: {self.message}"


def _show(value: object) -> str:
    """Render a value the way the operator wrote it in TOML (strings quoted, true/false)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value: object) -> bool:
    # bool is a subclass of int in Python; TOML's `true` is not an integer.
    return isinstance(value, int) and not isinstance(value, bool)


def int_range(low: int, high: int | None = None) -> Check:
    """An integer in low..high (high None: no upper bound)."""
    expected = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"

    def check(value: Any) -> str | None:
        if _is_int(value) and value >= low and (high is None or value <= high):
            return None
        return expected

    return check


def unlimited_or_at_least(low: int) -> Check:
    """-1 (meaning unlimited) or an integer >= low."""

    def check(value: Any) -> str | None:
        if _is_int(value) and (value == -1 or value >= low):
            return None
        return f"-1 (unlimited) or an integer >= {low}"

    return check


def one_of(*choices: str) -> Check:
    """One of a fixed set of strings (case sensitive, as written in the schema)."""
    expected = "one of " + ", ".join(_show(choice) for choice in choices)

    def check(value: Any) -> str | None:
        return None if isinstance(value, str) and value in choices else expected

    return check


def boolean(value: Any) -> str | None:
    """true or false."""
    return None if isinstance(value, bool) else "true or false"


def text(value: Any) -> str | None:
    """Any string, empty included."""
    return None if isinstance(value, str) else "a string"


def non_empty_text(value: Any) -> str | None:
    """A string with at least one non-blank character."""
    return None if isinstance(value, str) and value.strip() else "a non-empty string"


def url_path(value: Any) -> str | None:
    """An HTTP request path such as /mqtt."""
    if isinstance(value, str) and value.startswith("/") and not any(c.isspace() for c in value):
        return None
    return 'a path starting with "/" and without spaces'


def name_check(value: Any) -> str | None:
    """A bridge's or a broker's name: letters, digits, - _ . (it goes into client ids)."""
    if isinstance(value, str) and value and all(c.isalnum() or c in "-_." for c in value):
        return None
    return "a name of letters, digits, - _ ."


def host_check(value: Any) -> str | None:
    """A host name or address (a remote broker's, a neighbour's)."""
    return None if isinstance(value, str) and value and " " not in value else "a host name or address"


def text_list(value: Any) -> str | None:
    """A list of non-empty strings."""
    if isinstance(value, list) and all(isinstance(item, str) and item for item in value):
        return None
    return "a list of non-empty strings"


# Field metadata: the rule, and whether the value is a path to resolve ("dir") or a file that
# must exist and be readable when not "" ("file").
def _key(default: Any, check: Check, path: str | None = None) -> Any:
    return field(default=default, metadata={"check": check, "path": path})


@dataclass(frozen=True)
class BrokerConfig:
    """[broker]: storage, timers and logging of the broker as a whole."""

    data_dir: str = _key("./data", non_empty_text, path="dir")
    store: str = _key("sqlite", one_of("sqlite", "memory"))
    sqlite_synchronous: str = _key("FULL", one_of("FULL", "NORMAL"))
    commit_delay_ms: int = _key(0, int_range(0, 60_000))
    sys_interval: int = _key(10, int_range(0))
    retry_interval: int = _key(20, int_range(1))
    log_level: str = _key("info", one_of("debug", "info", "warning", "error"))
    max_keepalive: int = _key(MAX_UINT16, int_range(1, MAX_UINT16))
    session_expiry_max: int = _key(SESSION_EXPIRY_LIMIT, int_range(0, SESSION_EXPIRY_LIMIT))


@dataclass(frozen=True)
class LimitsConfig:
    """[limits]: the bounds that keep memory flat under load (design guide, "Bounded everything")."""

    max_connections: int = _key(-1, unlimited_or_at_least(1))
    connect_timeout: int = _key(10, int_range(1, 3600))
    max_packet_size: int = _key(MAX_PACKET_SIZE, int_range(2, MAX_PACKET_SIZE))
    #: Largest packet before CONNECT: a client that has not said who it is gets no more memory
    #: than the largest CONNECT needs (issue 15 finding 8; see docs/configuration.md).
    max_connect_packet_size: int = _key(DEFAULT_MAX_CONNECT_PACKET, int_range(2, MAX_PACKET_SIZE))
    max_inflight: int = _key(20, int_range(1, MAX_UINT16))
    max_queued_messages: int = _key(1000, int_range(1))
    max_queued_bytes: int = _key(67_108_864, int_range(0))
    max_stored_messages: int = _key(1_000_000, int_range(1))
    max_topic_length: int = _key(MAX_UINT16, int_range(1, MAX_UINT16))
    topic_alias_maximum: int = _key(10, int_range(0, MAX_UINT16))
    max_outbound_buffer: int = _key(4_194_304, int_range(1024))
    retain_available: bool = _key(True, boolean)
    max_qos: int = _key(2, int_range(0, 2))


@dataclass(frozen=True)
class AccessConfig:
    """[access]: who may connect and what they may do."""

    allow_anonymous: bool = _key(True, boolean)
    password_file: str = _key("", text, path="file")
    acl_file: str = _key("", text, path="file")
    administrators: tuple[str, ...] = _key((), text_list)
    #: Queue, flow and admin authorities (relaymq.auth.authorities); "": <data_dir>/authorities.json.
    authorities_file: str = _key("", text, path="file")


@dataclass(frozen=True)
class ListenerConfig:
    """One [[listener]]: where clients connect, with which transport and TLS settings."""

    name: str = _key("default", non_empty_text)
    host: str = _key("localhost", non_empty_text)
    port: int = _key(1883, int_range(0, MAX_PORT))
    protocol: str = _key("mqtt", one_of("mqtt", "websocket"))
    path: str = _key("/mqtt", url_path)
    tls_cert: str = _key("", text, path="file")
    tls_key: str = _key("", text, path="file")
    tls_ca: str = _key("", text, path="file")
    require_certificate: bool = _key(False, boolean)
    #: What a QoS 1/2 message for a session of this listener's clients meets when the
    #: session's queue is full: "block" holds back the publishers that feed it (nothing they
    #: were acknowledged for is lost); "drop-new" / "drop-oldest" drop a message and count it.
    overflow: str = _key("block", one_of(*OVERFLOW_POLICIES))
    #: Open sockets this listener keeps, in all and from one source address (-1: no cap);
    #: one over is closed at once, with a rate-limited log line (relaymq.http.admission).
    max_connections: int = _key(20_000, unlimited_or_at_least(1))
    max_connections_per_address: int = _key(1_000, unlimited_or_at_least(1))

    @property
    def tls(self) -> bool:
        """True when this listener speaks TLS (a certificate and its key are configured)."""
        return bool(self.tls_cert)


@dataclass(frozen=True)
class Config:
    """The whole, validated configuration. ``source`` is the file it came from (None: defaults)."""

    broker: BrokerConfig = field(default_factory=BrokerConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    access: AccessConfig = field(default_factory=AccessConfig)
    listeners: tuple[ListenerConfig, ...] = (ListenerConfig(),)
    source: str | None = None
    #: Sections owned by other parts of the product (see PLUGIN_SECTIONS), built by them.
    extra: Mapping[str, Any] = field(default_factory=dict)

    #: Plugin sections the file does not have, built from their defaults on first use.
    _defaults: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def section(self, name: str) -> Any:
        """A plugin section by its TOML table name, built from defaults when the file has none."""
        if name in self.extra:
            return self.extra[name]
        if name not in self._defaults:
            module = _plugin_module(name)
            self._defaults[name] = module.build(None, name, None) if module is not None else None
        return self._defaults[name]

    def configured(self, name: str) -> Any:
        """Plugin section ``name`` when the file has its table (or a command-line override set
        one of its keys), else None. Why: a part that is off by default (``[[bridge]]``,
        ``[amqp]``, ``[multicast]``, ``[realtime]``, ``[archive]``) asks this first, so a broker
        that does not configure it does not import its schema (issue 16: a faster start)."""
        return self.extra.get(name)


# Top-level tables and the dataclass each becomes; "listener" is the array of tables.
_SECTIONS: dict[str, type] = {"broker": BrokerConfig, "limits": LimitsConfig, "access": AccessConfig}
_LISTENER = "listener"

#: Sections whose schema lives with the part of the product that uses it: TOML table name ->
#: module. Each module has ``build(raw, key, base_dir) -> object``: ``raw`` is the table (or
#: array of tables) from the file, None when absent (then it returns the defaults); ``key`` is
#: the table name to put in error messages; ``base_dir`` resolves relative paths. It raises
#: ConfigError naming the key at fault. A module that is not installed means an unknown key.
#: ``load_config`` imports the module of a section the file has (or an override sets); the
#: others are built from their defaults when first asked for (``Config.section``).
PLUGIN_SECTIONS: dict[str, str] = {
    "qmgr": "relaymq.qmgr.settings",
    "http": "relaymq.http.settings",
    "pubsub": "relaymq.pubsub.settings",
    "flows": "relaymq.flows.settings",
    "archive": "relaymq.pipeline.settings",
    "bridge": "relaymq.bridge.settings",
    "network": "relaymq.network.settings",
    "amqp": "relaymq.amqp.settings",
    "multicast": "relaymq.multicast.settings",
    "realtime": "relaymq.realtime.settings",
}


def _plugin_module(name: str) -> Any:
    """The module that builds plugin section ``name``, or None for a name that is not one."""
    qualified = PLUGIN_SECTIONS.get(name)
    return importlib.import_module(qualified) if qualified is not None else None


#: Command-line overrides accepted by load_config, and the key each one sets.
OVERRIDES: dict[str, str] = {
    "port": "listener[0].port",
    "data_dir": "broker.data_dir",
    "store": "broker.store",
    "log_level": "broker.log_level",
    "qmgr": "qmgr.name",
    "http_port": "http.port",
    "channel_port": "qmgr.channel_port",
}


def _unknown(key: str, known: list[str]) -> ConfigError:
    """An unknown-key error, with a suggestion when the key looks like a typo of a known one."""
    import difflib  # only a configuration with a mistake needs it

    close = difflib.get_close_matches(key.rsplit(".", 1)[-1], known, n=1)
    prefix = key.rsplit(".", 1)[0] + "." if "." in key else ""
    hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
    return ConfigError(key, _UNKNOWN_KEY + hint)


def _resolve(value: str, base_dir: str | None) -> str:
    """A relative path from the configuration file is relative to that file's directory."""
    if base_dir is None or not value or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(base_dir, value))


def _check_readable(key: str, path: str) -> None:
    if not os.path.exists(path):
        raise ConfigError(key, f"no such file: {_show(path)}")
    if not os.path.isfile(path):
        raise ConfigError(key, f"not a regular file: {_show(path)}")
    if not os.access(path, os.R_OK):
        raise ConfigError(key, f"file is not readable: {_show(path)}")


def _build(cls: type, table: object, prefix: str, base_dirs: Mapping[str, str | None]) -> Any:
    """Turn one TOML table into ``cls``, checking every key against the field's rule.

    ``base_dirs`` gives, per key, the directory a relative path is resolved against (the
    configuration file's directory, or None for command-line values).
    """
    if not isinstance(table, dict):
        raise ConfigError(prefix, f"expected a table, got {_show(table)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in table:
        if key not in fields:
            raise _unknown(f"{prefix}.{key}", list(fields))
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name not in table:
            continue
        value = table[name]
        key = f"{prefix}.{name}"
        expected = spec.metadata["check"](value)
        if expected is not None:
            raise ConfigError(key, f"expected {expected}, got {_show(value)}")
        kind = spec.metadata["path"]
        if kind is not None:
            value = _resolve(value, base_dirs.get(name))
            if kind == "file" and value:
                _check_readable(key, value)
        values[name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


def build_section(cls: type, table: object, key: str, base_dir: str | None) -> Any:
    """Build a plugin section's dataclass (fields declared with ``key_field``) from its TOML
    table, or its defaults when ``table`` is None: what most ``build`` functions need."""
    if table is None:
        return cls()
    return _build(cls, table, key, {f.name: base_dir for f in dataclasses.fields(cls)})


def key_field(default: Any, check: Check, path: str | None = None) -> Any:
    """A configuration key for a plugin section's dataclass: its default and its rule;
    ``path`` is "file" or "dir" when the value is a path to resolve (and, for "file", check)."""
    return _key(default, check, path)


def _same_address(host_a: str, host_b: str) -> bool:
    """Would two listeners on these hosts and one port collide? Equal hosts do, and a
    wildcard address collides with every address of its family."""
    if host_a == host_b:
        return True
    if LOOPBACK_HOST in (host_a, host_b):  # 127.0.0.1 and ::1
        other = host_b if host_a == LOOPBACK_HOST else host_a
        return any(_same_address(address, other) for address in LOOPBACK_ADDRESSES)
    try:
        a, b = ipaddress.ip_address(host_a), ipaddress.ip_address(host_b)
    except ValueError:
        return False
    return a.version == b.version and (a.is_unspecified or b.is_unspecified)


def _check_listener(listener: ListenerConfig, key: str) -> None:
    """Rules that involve more than one key of a listener."""
    if listener.tls_cert and not listener.tls_key:
        raise ConfigError(f"{key}.tls_key", "tls_cert is set but tls_key is not (both are needed for TLS)")
    if listener.tls_key and not listener.tls_cert:
        raise ConfigError(f"{key}.tls_cert", "tls_key is set but tls_cert is not (both are needed for TLS)")
    if listener.tls_ca and not listener.tls_cert:
        raise ConfigError(f"{key}.tls_ca", "tls_ca needs tls_cert and tls_key (client certificates need TLS)")
    if listener.require_certificate and not listener.tls_ca:
        raise ConfigError(
            f"{key}.require_certificate", "true needs tls_ca (the CA that signs client certificates)"
        )


def _build_listeners(raw: object, base_dir: str | None, port_override: object) -> tuple[ListenerConfig, ...]:
    """The [[listener]] array: zero or more listeners, none meaning the default one."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ConfigError(_LISTENER, f"expected [[listener]] tables, got {_show(raw)}")
    tables = [dict(table) if isinstance(table, dict) else table for table in raw] or [{}]
    if port_override is not None and isinstance(tables[0], dict):
        tables[0]["port"] = port_override
    listeners: list[ListenerConfig] = []
    for index, table in enumerate(tables):
        key = f"{_LISTENER}[{index}]"
        dirs = {name: base_dir for name in ("tls_cert", "tls_key", "tls_ca")}
        if isinstance(table, dict) and "name" not in table and index > 0:
            table["name"] = f"listener{index}"
        listener = _build(ListenerConfig, table, key, dirs)
        _check_listener(listener, key)
        for earlier_index, earlier in enumerate(listeners):
            if earlier.name == listener.name:
                raise ConfigError(
                    f"{key}.name", f"{_show(listener.name)} is already the name of {_LISTENER}[{earlier_index}]"
                )
            if listener.port != 0 and earlier.port == listener.port and _same_address(earlier.host, listener.host):
                raise ConfigError(
                    f"{key}.port",
                    f"{listener.host}:{listener.port} collides with {_LISTENER}[{earlier_index}]"
                    f" ({earlier.host}:{earlier.port})",
                )
        listeners.append(listener)
    return tuple(listeners)


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib  # only a configuration file needs it: the embedded defaults do not (issue 16)

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(path, f"cannot read the configuration file: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, f"invalid TOML: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(path, f"invalid TOML: not UTF-8 ({error.reason})") from None


def _check_access_files(access: AccessConfig, data_dir: str) -> None:
    """Parse the password, ACL and authorities files now, so a broken line stops start-up,
    not a login."""
    # Imported here: relaymq.auth is only needed when such a file is configured (the password
    # file's bcrypt, the ACL's patterns: each by its file; issue 16, bench/compare row 9).
    from relaymq.auth.authorities import Authorities, AuthorityError, authorities_path

    try:
        Authorities.load(authorities_path(access, data_dir))
    except AuthorityError as error:
        raise ConfigError("access.authorities_file", str(error)) from None

    if access.password_file:
        from relaymq.auth.passwords import PasswordFile, PasswordFileError

        try:
            PasswordFile.load(access.password_file)
        except PasswordFileError as error:
            raise ConfigError("access.password_file", str(error)) from None
    if access.acl_file:
        from relaymq.auth.acl import Acl, AclError

        try:
            Acl.load(access.acl_file)
        except AclError as error:
            raise ConfigError("access.acl_file", str(error)) from None


def _check_administrators(access: AccessConfig, listeners: tuple[ListenerConfig, ...]) -> None:
    """An administrator controls the listeners ($SYS/SCADA/MQIsdpListener/...). Without a
    password file a user name is only a claim, so the list is refused unless every listener
    requires a client certificate (whose common name is then the user)."""
    if access.administrators and not access.password_file and not all(
            listener.require_certificate for listener in listeners):
        raise ConfigError("access.administrators", "needs access.password_file (or require_certificate "
                          "on every listener): without it anyone sending an administrator's user name "
                          "controls the listeners")


def _section_overrides(section: str, overrides: Mapping[str, object]) -> dict[str, object]:
    """The command-line overrides that set keys of ``section``: key -> value."""
    found: dict[str, object] = {}
    for override, key in OVERRIDES.items():
        name, _, field_name = key.partition(".")
        if name == section and overrides.get(override) is not None:
            found[field_name] = overrides[override]
    return found


def _build_sections(raw: dict[str, Any], base_dir: str | None, overrides: Mapping[str, object]) -> dict[str, Any]:
    """The built-in sections, with the overrides applied (their paths relative to the cwd)."""
    sections: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        table = raw.get(name, {})
        dirs: dict[str, str | None] = {f.name: base_dir for f in dataclasses.fields(cls)}
        if isinstance(table, dict):
            table = dict(table)
            for field_name, value in _section_overrides(name, overrides).items():
                table[field_name] = value
                dirs[field_name] = None  # command-line paths are relative to the cwd
        sections[name] = _build(cls, table, name, dirs)
    return sections


def _build_plugins(plugins: dict[str, Any], raw: dict[str, Any], base_dir: str | None,
                   overrides: Mapping[str, object]) -> dict[str, Any]:
    """The plugins' sections, each built by its module, with the overrides applied."""
    extra: dict[str, Any] = {}
    for name, module in plugins.items():
        table = raw.get(name)
        for field_name, value in _section_overrides(name, overrides).items():
            table = dict(table) if isinstance(table, dict) else {} if table is None else table
            if isinstance(table, dict):
                table[field_name] = value
        extra[name] = module.build(table, name, base_dir)
    return extra


def load_config(path: str | None, overrides: Mapping[str, object] | None = None) -> Config:
    """Read, validate and return the configuration; raise ConfigError on the first problem.

    ``path`` None means the embedded defaults. ``overrides`` come from the command line:
    ``port`` (the first listener's port, creating the default listener when the file has
    none), ``data_dir``, ``store`` and ``log_level``. They are checked by the same rules as
    the file's keys, so ``--port 70000`` fails exactly like ``port = 70000``.
    """
    raw: dict[str, Any] = _read_toml(path) if path is not None else {}
    base_dir = os.path.dirname(os.path.abspath(path)) if path is not None else None
    overrides = dict(overrides or {})
    for name in overrides:
        if name not in OVERRIDES:
            raise ConfigError(name, f"unknown override (known: {', '.join(OVERRIDES)})")

    for key in raw:
        if key not in _SECTIONS and key != _LISTENER and key not in PLUGIN_SECTIONS:
            raise _unknown(key, [*_SECTIONS, _LISTENER, *PLUGIN_SECTIONS])
    plugins = {name: _plugin_module(name) for name in PLUGIN_SECTIONS
               if name in raw or _section_overrides(name, overrides)}

    sections = _build_sections(raw, base_dir, overrides)
    listeners = _build_listeners(raw.get(_LISTENER), base_dir, overrides.get("port"))
    _check_access_files(sections["access"], sections["broker"].data_dir)
    _check_administrators(sections["access"], listeners)
    extra = _build_plugins(plugins, raw, base_dir, overrides)
    return Config(listeners=listeners, source=os.path.abspath(path) if path else None, extra=extra,
                  **sections)


def default_config() -> Config:
    """The embedded defaults: MQTT on localhost:1883 (127.0.0.1 and ::1), SQLite under ./data,
    anonymous allowed."""
    return Config()
