"""The [qmgr] configuration section (issue 5 "Defaults"; everyplace.md items 7, 28, 29).

    [qmgr]
    name = "QM1"              # --qmgr NAME
    channel_port = 8081       # --channel-port N: the channel listener (started by the channel part)
    channel_host = "localhost"  # 127.0.0.1 and ::1 only until configured otherwise
    channel_allow_anonymous = false   # peers must authenticate (certificate, or user + password)
    channel_password_file = ""        # peer queue managers' shared credentials (relaymq passwd)
    channel_max_frame = 16777216      # bytes per frame after the HELLO (before it: 16 KiB)
    channel_frame_timeout_ms = 30000  # a started frame (and the HELLO) must arrive within this
    channel_idle_timeout = 300        # seconds without a frame before a connection is closed; 0: never
    channel_max_connections = 256     # connections of the listener; -1: no cap
    channel_max_connections_per_address = 32  # ... from one source address; -1: no cap
    channel_trusted_context = []      # peer principals whose messages keep MQMD.UserIdentifier
    channel_tls_cert = ""     # with channel_tls_key: the listener speaks TLS (and it is our client cert)
    channel_tls_key = ""
    channel_tls_ca = ""       # the listener requires client certificates signed by it
    confirm_window = 86400    # seconds a confirmed UID is remembered for duplicate removal
    dead_letter_undeliverable = true  # channel PUTs for unknown queues go to the dead-letter queue
    admin_remote = false      # REST queue define/delete only from the loopback interface
    rule = ""                 # "module:Class" of a QueueManagerRule
    key_file = ""             # cryptor keys: name = "base64 AES key" (relaymq.qmgr.queue_keys)

    [qmgr.channel_identities]  # a channel peer's certificate CN (or HTTP user) -> the queue
    "gateway.example" = ["DEVICE1", "DEVICE2"]  # managers it may speak for besides its own name

    [[qmgr.queue]]
    name = "ORDERS"
    type = "local"            # local, remote, store_and_forward, home_server, dead_letter, admin
    max_depth = 10000         # ... and every property of relaymq.qmgr.definitions

Every key is checked here, so a mistake stops start-up with one line naming it, e.g.
``config error: qmgr.queue[2].max_depth: expected -1 (unlimited) or an integer >= 0, got "x"``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from relaymq.config import (
    Check,
    ConfigError,
    boolean,
    build_section,
    int_range,
    key_field,
    non_empty_text,
    one_of,
    text,
    text_list,
    unlimited_or_at_least,
)
from relaymq.net.binding import MAX_PORT
from relaymq.qmgr.channel_settings import LISTENER_MAX_FRAME, build_connections
from relaymq.qmgr.definitions import KINDS, QueueDefinition, make_definition
from relaymq.qmgr.errors import QueueError
from relaymq.qmgr.manager import DEFAULT_CONFIRM_WINDOW
from relaymq.qmgr.names import is_valid_name
from relaymq.qmgr.queue_security import QueueSecurity


def qmgr_name(value: Any) -> str | None:
    """A queue or queue manager name: 0-9 a-z A-Z _ . % (everyplace.md item 6)."""
    return None if is_valid_name(value) else "a name of 0-9 a-z A-Z _ . % characters"


def name_list(value: Any) -> str | None:
    if text_list(value) is None and all(is_valid_name(v) for v in value):
        return None
    return "a list of names of 0-9 a-z A-Z _ . % characters"


#: Checks of each [[qmgr.queue]] key; ``type`` is the queue's kind.
QUEUE_KEYS: dict[str, Check] = {
    "name": qmgr_name,
    "type": one_of(*KINDS),
    "description": text,
    "active": boolean,
    "max_depth": unlimited_or_at_least(0),
    "max_message_size": unlimited_or_at_least(0),
    "expiry": int_range(0),
    "default_priority": int_range(0, 9),
    "aliases": name_list,
    "mode": one_of("sync", "async"),
    "queue_manager": qmgr_name,
    "target_queue_managers": name_list,
    "push": boolean,
    "poll_interval": int_range(0),
    "rule": text,
    "authenticator": text,
    "cryptor": text,
    "compressor": text,
}


@dataclass(frozen=True)
class QmgrSettings:
    """[qmgr]: the queue manager of this broker process."""

    name: str = key_field("QM1", qmgr_name)
    channel_port: int = key_field(8081, int_range(0, MAX_PORT))
    #: Loopback by default (issue 15 finding 1): "0.0.0.0" or an address opens it.
    channel_host: str = key_field("localhost", non_empty_text)
    #: May a peer that does not authenticate use the channels? (It may then speak for any
    #: queue manager, and its principal is "".) Default false: it is refused.
    channel_allow_anonymous: bool = key_field(False, boolean)
    #: The peer queue managers' shared credentials: a password file (``user:bcrypt`` lines,
    #: ``relaymq passwd``), a peer's user being normally its queue manager name. Users of
    #: ``[access] password_file`` may authenticate too.
    channel_password_file: str = key_field("", text, path="file")
    #: Largest frame (bytes) an authenticated peer may send; a HELLO is at most 16 KiB.
    channel_max_frame: int = key_field(LISTENER_MAX_FRAME, int_range(1024, 1024 * 1024 * 1024))
    #: Milliseconds a started frame - and the HELLO after connecting - has to arrive whole.
    channel_frame_timeout_ms: int = key_field(30_000, int_range(100, 3_600_000))
    #: Seconds without a frame (and no request being served) before a connection is closed; 0: never.
    channel_idle_timeout: int = key_field(300, int_range(0, 86_400))
    #: Connections the listener holds at once, and from one source address; -1: no cap.
    channel_max_connections: int = key_field(256, unlimited_or_at_least(1))
    channel_max_connections_per_address: int = key_field(32, unlimited_or_at_least(1))
    #: Peer principals (certificate CN, channel or broker user) whose messages keep their
    #: MQMD.UserIdentifier - queue managers that authenticate their own users (IBM MQ's
    #: PUTAUT(CTX)). Every other peer's messages carry the peer's principal instead.
    channel_trusted_context: tuple[str, ...] = key_field((), text_list)
    #: PEM certificate and key: the channel listener speaks TLS, and connections with
    #: ``tls = true`` present them as this queue manager's client certificate.
    channel_tls_cert: str = key_field("", text, path="file")
    channel_tls_key: str = key_field("", text, path="file")
    #: PEM CA certificates: the listener then requires a client certificate signed by them
    #: (only queue managers holding one may connect), and connections with ``tls = true``
    #: and no ``tls_ca`` of their own verify the peer against them.
    channel_tls_ca: str = key_field("", text, path="file")
    confirm_window: int = key_field(int(DEFAULT_CONFIRM_WINDOW), int_range(1))
    #: A channel PUT for a queue of this queue manager that does not exist (or never takes
    #: it: too big) goes to SYSTEM.DEAD.LETTER.QUEUE with an MQDLH; false: it stays on the
    #: sender and blocks that route (the seed's MQe behaviour, item 25).
    dead_letter_undeliverable: bool = key_field(True, boolean)
    #: May the REST admin writes (define/delete queue) come from other than the loopback
    #: interface? (They also need [access] administrators when that list is set.)
    admin_remote: bool = key_field(False, boolean)
    rule: str = key_field("", text)
    #: The cryptor keys (relaymq.qmgr.queue_keys: TOML, name = "base64 AES key"); a queue's
    #: ``cryptor`` names one. Missing or malformed: start-up stops naming this key.
    key_file: str = key_field("", text, path="file")
    #: Where the queues are kept (relaymq.qmgr.adapters): sqlite, memory or "module:Class";
    #: "" = as [broker] store says.
    store_adapter: str = key_field("", text)
    queue: tuple[QueueDefinition, ...] = key_field((), lambda v: None)
    #: [[qmgr.connection]] tables (relaymq.qmgr.channel_settings).
    connection: tuple[Any, ...] = key_field((), lambda v: None)
    #: [qmgr.channel_identities]: (identity, queue manager names) pairs - which queue managers
    #: a channel peer authenticated as ``identity`` (certificate CN, HTTP user) may speak for
    #: besides the one of its own name (relaymq.qmgr.channel.ChannelIdentities).
    channel_identities: tuple[tuple[str, tuple[str, ...]], ...] = key_field((), lambda v: None)


def _identities(raw: object, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        raise ConfigError(key, 'expected a table: "identity" = ["QMGR", ...]')
    out = []
    for identity, names in raw.items():
        if not identity:
            raise ConfigError(key, "an identity (certificate CN or HTTP user) must not be empty")
        if not isinstance(names, list) or not all(is_valid_name(n) for n in names):
            raise ConfigError(f"{key}.{identity}", f"expected a list of queue manager names, got {names!r}")
        out.append((identity, tuple(names)))
    return tuple(out)


def _keys(path: str, key: str) -> dict[str, bytes]:
    """The cryptor keys of ``[qmgr] key_file`` (none when it is not set)."""
    if not path:
        return {}
    from relaymq.qmgr.queue_keys import KeyFileError, load_keys

    try:
        return load_keys(path)
    except KeyFileError as exc:
        raise ConfigError(key, str(exc)) from None


def _check_adapters(settings: QmgrSettings, connections: tuple[Any, ...], key: str) -> None:
    """Every adapter named is a built-in one or "module:Class" (an unknown name stops
    start-up naming its key; whether the module imports is asked by relaymq.qmgr.rule_check,
    once the configuration file's directory is on the import path)."""
    from relaymq.qmgr.adapters import COMMUNICATIONS, STORAGE, name_problem

    named: list[tuple[str, dict[str, Any], str]] = [(f"{key}.store_adapter", STORAGE, settings.store_adapter)]
    named += [(f"{key}.connection[{i}].adapter", COMMUNICATIONS, c.adapter) for i, c in enumerate(connections)]
    for where, builtins, name in named:
        problem = name_problem(name, builtins) if name else None
        if problem is not None:
            raise ConfigError(where, problem)


def load_security(settings: QmgrSettings) -> QueueSecurity:
    """The queue security of these settings: the keys of ``key_file`` (checked by :func:`build`)."""
    return QueueSecurity(_keys(settings.key_file, "qmgr.key_file"))


def _queue(table: object, key: str, qmgr: str) -> QueueDefinition:
    if not isinstance(table, dict):
        raise ConfigError(key, "expected a table")
    for name, value in table.items():
        check = QUEUE_KEYS.get(name)
        if check is None:
            raise ConfigError(f"{key}.{name}", f"unknown key (known: {', '.join(QUEUE_KEYS)})")
        expected = check(value)
        if expected is not None:
            raise ConfigError(f"{key}.{name}", f"expected {expected}, got {value!r}")
    if "name" not in table:
        raise ConfigError(f"{key}.name", "missing: every queue needs a name")
    props = {k: (tuple(v) if isinstance(v, list) else v) for k, v in table.items() if k not in ("name", "type")}
    try:
        return make_definition(table["name"], table.get("type", "local"), qmgr, **props)
    except QueueError as exc:
        raise ConfigError(key, exc.message) from exc


def build(raw: object, key: str, base_dir: str | None) -> QmgrSettings:
    """Build [qmgr] (defaults when ``raw`` is None); raise ConfigError naming the key."""
    if raw is None:
        return QmgrSettings()
    if not isinstance(raw, dict):
        raise ConfigError(key, "expected a table")
    table = dict(raw)
    queues = table.pop("queue", [])
    connections_raw = table.pop("connection", None)
    identities = _identities(table.pop("channel_identities", {}), f"{key}.channel_identities")
    settings = build_section(QmgrSettings, table, key, base_dir)
    _check_channel_security(settings, key)
    connections = tuple(
        replace(c, tls_ca=c.tls_ca or settings.channel_tls_ca, tls_cert=c.tls_cert or settings.channel_tls_cert,
                tls_key=c.tls_key or settings.channel_tls_key) if c.tls and not c.tls_cert else c
        for c in build_connections(connections_raw, f"{key}.connection", base_dir))
    _check_adapters(settings, connections, key)
    return QmgrSettings(**{**settings.__dict__, "queue": _queues(queues, settings, key), "connection": connections,
                           "channel_identities": identities})


def _check_channel_security(settings: QmgrSettings, key: str) -> None:
    """The channel listener's TLS files go together, and its password file reads."""
    if bool(settings.channel_tls_cert) != bool(settings.channel_tls_key):
        missing = "channel_tls_key" if settings.channel_tls_cert else "channel_tls_cert"
        raise ConfigError(f"{key}.{missing}", "channel_tls_cert and channel_tls_key go together (both are needed"
                                              " for TLS)")
    if settings.channel_password_file:
        from relaymq.auth.passwords import PasswordFile, PasswordFileError

        try:
            PasswordFile.load(settings.channel_password_file)
        except PasswordFileError as exc:
            raise ConfigError(f"{key}.channel_password_file", str(exc)) from None
    if settings.channel_tls_ca and not settings.channel_tls_cert:
        raise ConfigError(f"{key}.channel_tls_ca", "needs channel_tls_cert and channel_tls_key (client certificates"
                                                   " need a TLS listener)")


def _queues(queues: object, settings: QmgrSettings, key: str) -> tuple[QueueDefinition, ...]:
    """The [[qmgr.queue]] definitions: each valid, named once (remote and home-server
    definitions may repeat a name), a cryptor naming a key of the key file."""
    if not isinstance(queues, list):
        raise ConfigError(f"{key}.queue", "expected [[qmgr.queue]] tables")
    keys = _keys(settings.key_file, f"{key}.key_file")
    seen: dict[str, int] = {}
    definitions = []
    for i, queue in enumerate(queues):
        definition = _queue(queue, f"{key}.queue[{i}]", settings.name)
        if definition.name in seen and definition.kind not in ("remote", "home_server"):
            raise ConfigError(f"{key}.queue[{i}].name",
                              f"{definition.name!r} is already defined by {key}.queue[{seen[definition.name]}]")
        if definition.cryptor and definition.cryptor not in keys:
            raise ConfigError(f"{key}.queue[{i}].cryptor", f"no key {definition.cryptor!r} in {key}.key_file"
                                                           f" ({settings.key_file or 'not set'})")
        seen.setdefault(definition.name, i)
        definitions.append(definition)
    return tuple(definitions)
