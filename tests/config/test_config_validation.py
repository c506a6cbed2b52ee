"""relaymq.config: the TOML file, its defaults, its validation and the command-line overrides.

Requirement (config brief): "validated at start: an unknown key, a wrong type, an out-of-range
value or an unusable port stops start-up with ONE line naming the key"; the embedded defaults
(MQTT on localhost:1883, data under ./data, sqlite store, anonymous allowed); files named for
TLS/password/ACL must exist; duplicate listeners, tls_cert without tls_key and
require_certificate without tls_ca are errors; overrides `port`, `data_dir`, `store`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from relaymq.config import (
    AccessConfig,
    BrokerConfig,
    Config,
    ConfigError,
    PLUGIN_SECTIONS,
    LimitsConfig,
    ListenerConfig,
    load_config,
)
from relaymq.bridge.settings import BridgeSettings
from relaymq.flows.settings import FlowsSettings
from relaymq.http.settings import HttpSettings
from relaymq.multicast.settings import MulticastSettings
from relaymq.multicast.settings import TopicSettings as MulticastTopicSettings
from relaymq.pipeline.settings import ArchiveOptions, ArchiveRule
from relaymq.pubsub.settings import PubSubOptions
from relaymq.realtime.settings import RealtimeSettings
from relaymq.qmgr.channel_settings import ConnectionSettings
from relaymq.qmgr.settings import QUEUE_KEYS, QmgrSettings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "relaymq.example.toml"
DOCS = ROOT / "docs" / "configuration.md"
SECTIONS = {"broker": BrokerConfig, "limits": LimitsConfig, "access": AccessConfig, "listener": ListenerConfig}
#: The other parts' sections: every scalar key is in the example file with its default.
PLUGIN_KEYS = {
    "http": [f.name for f in dataclasses.fields(HttpSettings)],
    "qmgr": [f.name for f in dataclasses.fields(QmgrSettings)
             if f.name not in ("queue", "connection", "channel_identities")],
    "pubsub": [f.name for f in dataclasses.fields(PubSubOptions)],
    "flows": [f.name for f in dataclasses.fields(FlowsSettings)],
    "archive": [f.name for f in dataclasses.fields(ArchiveOptions)],
    "multicast": [f.name for f in dataclasses.fields(MulticastSettings) if f.name != "topics"],
    "realtime": [f.name for f in dataclasses.fields(RealtimeSettings)],
}
#: Their tables (arrays and sub-tables): documented in docs/configuration.md, key by key.
PLUGIN_TABLES = {
    "qmgr.queue": list(QUEUE_KEYS),
    "qmgr.connection": [f.name for f in dataclasses.fields(ConnectionSettings)],
    "archive.rule": [f.name for f in dataclasses.fields(ArchiveRule)],
    "bridge": [f.name for f in dataclasses.fields(BridgeSettings)],
    "multicast.topic": [f.name for f in dataclasses.fields(MulticastTopicSettings)],
}


def _error(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("config error: ")
    return caught.value


def test_embedded_defaults() -> None:
    """Brief: defaults are MQTT on port 1883, data under ./data, sqlite store, anonymous allowed;
    issue 15 finding 2: on the loopback interface only ("localhost": 127.0.0.1 and ::1)."""
    config = load_config(None)
    assert [(item.host, item.port, item.protocol) for item in config.listeners] == [("localhost", 1883, "mqtt")]
    assert config.section("http").host == "localhost"
    assert (config.broker.data_dir, config.broker.store) == ("./data", "sqlite")
    assert config.access.allow_anonymous is True
    assert (config.access.password_file, config.access.acl_file) == ("", "")


def test_example_file_loads_and_states_the_defaults() -> None:
    """Brief: the example file documents every key with its default, and it loads. (Its
    relative data_dir resolves against the file's directory, see docs "Paths".)"""
    config = load_config(str(EXAMPLE))
    defaults = Config()
    expected = dataclasses.replace(
        defaults, broker=dataclasses.replace(defaults.broker, data_dir=str(ROOT / "data")))
    assert dataclasses.replace(config, source=None, extra={}) == expected
    # the sections the file has, and those it leaves commented out (built from defaults)
    assert {name: config.section(name) for name in PLUGIN_SECTIONS} == {
        name: defaults.section(name) for name in PLUGIN_SECTIONS}


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_every_key_is_documented(section: str) -> None:
    """Brief: document every key with default and meaning in docs/configuration.md and
    relaymq.example.toml (keep key names exactly)."""
    example = EXAMPLE.read_text()
    docs = DOCS.read_text()
    header = f"[[{section}]]" if section == "listener" else f"[{section}]"
    assert header in example and f"`{header}`" in docs
    for field in dataclasses.fields(SECTIONS[section]):
        assert f"\n{field.name} = " in example, field.name
        assert f"| `{field.name}` |" in docs, field.name


@pytest.mark.parametrize("section", sorted(PLUGIN_KEYS))
def test_every_key_of_the_other_parts_is_documented(section: str) -> None:
    """The [http], [qmgr], [pubsub], [flows] and [archive] keys: in the example file with
    their defaults (checked by the test above) and in docs/configuration.md with their meaning."""
    example = EXAMPLE.read_text()
    docs = DOCS.read_text()
    assert f"\n[{section}]" in example and f"`[{section}]`" in docs
    for name in PLUGIN_KEYS[section]:
        assert f"\n{name} = " in example, name
        assert f"| `{name}` |" in docs, name


def test_sub_tables_are_documented() -> None:
    """Tables of free names (identity = [...]): documented and shown (commented) in the example."""
    for table in ("qmgr.channel_identities",):
        assert f"`[{table}]`" in DOCS.read_text() and f"# [{table}]" in EXAMPLE.read_text()


@pytest.mark.parametrize("table", sorted(PLUGIN_TABLES))
def test_every_key_of_the_array_tables_is_documented(table: str) -> None:
    docs = DOCS.read_text()
    section = docs[docs.index(f"`[[{table}]]`"):]
    for name in PLUGIN_TABLES[table]:
        assert f"| `{name}` |" in section, name


def test_unknown_key_names_the_key(tmp_path: Path) -> None:
    """Brief example: `config error: unknown key broker.colour`."""
    assert str(_error(tmp_path, '[broker]\ncolour = "red"\n')) == "config error: unknown key broker.colour"


def test_wrong_type_names_the_key_and_value(tmp_path: Path) -> None:
    """Brief example: `config error: limits.max_inflight: expected an integer ..., got "ten"`."""
    error = _error(tmp_path, '[limits]\nmax_inflight = "ten"\n')
    assert str(error) == 'config error: limits.max_inflight: expected an integer in 1..65535, got "ten"'
    assert error.key == "limits.max_inflight"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("colour = 1\n", "colour"),
        ("[broker]\nlog_lvl = 'info'\n", "broker.log_lvl"),
        ("[[listener]]\nport = 1\nbind = 'x'\n", "listener[0].bind"),
        ("broker = 3\n", "broker"),
        ("listener = 3\n", "listener"),
        ("[broker]\nstore = 'disk'\n", "broker.store"),
        ("[broker]\nsqlite_synchronous = 'OFF'\n", "broker.sqlite_synchronous"),
        ("[broker]\nlog_level = 'INFO'\n", "broker.log_level"),
        ("[broker]\ncommit_delay_ms = -1\n", "broker.commit_delay_ms"),
        ("[broker]\nsys_interval = 1.5\n", "broker.sys_interval"),
        ("[broker]\nretry_interval = 0\n", "broker.retry_interval"),
        ("[broker]\nmax_keepalive = 65536\n", "broker.max_keepalive"),
        ("[broker]\nsession_expiry_max = 4294967296\n", "broker.session_expiry_max"),
        ("[broker]\ndata_dir = ''\n", "broker.data_dir"),
        ("[limits]\nmax_connections = 0\n", "limits.max_connections"),
        ("[limits]\nmax_packet_size = 268435461\n", "limits.max_packet_size"),
        ("[limits]\nmax_connect_packet_size = 1\n", "limits.max_connect_packet_size"),
        ("[[listener]]\nmax_connections = 0\n", "listener[0].max_connections"),
        ("[[listener]]\nmax_connections_per_address = \"many\"\n", "listener[0].max_connections_per_address"),
        ("[http]\nmax_connections = -2\n", "http.max_connections"),
        ("[http]\nmax_connections_per_address = 0\n", "http.max_connections_per_address"),
        ("[limits]\nmax_inflight = true\n", "limits.max_inflight"),
        ("[limits]\nmax_inflight = 0\n", "limits.max_inflight"),
        ("[limits]\nmax_queued_messages = 0\n", "limits.max_queued_messages"),
        ("[limits]\nmax_queued_bytes = -1\n", "limits.max_queued_bytes"),
        ("[limits]\nmax_topic_length = 0\n", "limits.max_topic_length"),
        ("[limits]\ntopic_alias_maximum = 70000\n", "limits.topic_alias_maximum"),
        ("[limits]\nmax_outbound_buffer = 10\n", "limits.max_outbound_buffer"),
        ("[limits]\nretain_available = 1\n", "limits.retain_available"),
        ("[limits]\nmax_qos = 3\n", "limits.max_qos"),
        ("[access]\nallow_anonymous = 'yes'\n", "access.allow_anonymous"),
        ("[access]\nadministrators = 'root'\n", "access.administrators"),
        ("[access]\nadministrators = ['']\n", "access.administrators"),
        ("[access]\npassword_file = 3\n", "access.password_file"),
        ("[[listener]]\nport = 65536\n", "listener[0].port"),
        ("[[listener]]\nport = -1\n", "listener[0].port"),
        ("[[listener]]\nport = '1883'\n", "listener[0].port"),
        ("[[listener]]\nport = 1884\n[[listener]]\nport = 1.5\n", "listener[1].port"),
        ("[[listener]]\nprotocol = 'http'\n", "listener[0].protocol"),
        ("[[listener]]\npath = 'mqtt'\n", "listener[0].path"),
        ("[[listener]]\nhost = ''\n", "listener[0].host"),
        ("[[listener]]\nrequire_certificate = 'yes'\n", "listener[0].require_certificate"),
        ("[[listener]]\noverflow = 'drop'\n", "listener[0].overflow"),
        ("[[listener]]\nport = 1884\n[[listener]]\nport = 1885\noverflow = 'Block'\n", "listener[1].overflow"),
    ],
)
def test_each_bad_value_names_its_key(tmp_path: Path, text: str, key: str) -> None:
    """Brief: unknown keys, wrong types, enums and out-of-range values each stop start-up with
    one line that names the key."""
    error = _error(tmp_path, text)
    assert error.key == key
    assert f" {key}" in str(error)


def test_close_misspelling_gets_a_hint(tmp_path: Path) -> None:
    """Brief: the one line names the key; a near miss also names the key that was meant."""
    error = _error(tmp_path, "[limits]\nmax_inflights = 5\n")
    assert str(error) == "config error: unknown key limits.max_inflights (did you mean limits.max_inflight?)"


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    """Brief: a file that cannot be used stops start-up with one line (naming the file)."""
    error = _error(tmp_path, "[broker\n")
    assert error.key == str(tmp_path / "relaymq.toml")
    assert "invalid TOML" in str(error)


def test_missing_config_file(tmp_path: Path) -> None:
    """Brief: load_config raises ConfigError (not OSError) when the file cannot be read."""
    with pytest.raises(ConfigError) as caught:
        load_config(str(tmp_path / "absent.toml"))
    assert "cannot read" in str(caught.value)


@pytest.mark.parametrize("key", ["password_file", "acl_file", "authorities_file"])
def test_access_files_must_exist(tmp_path: Path, key: str) -> None:
    """Brief: files named for password/acl exist and are readable (error names key and path)."""
    error = _error(tmp_path, f"[access]\n{key} = 'absent'\n")
    assert str(error) == f'config error: access.{key}: no such file: "{tmp_path / "absent"}"'


@pytest.mark.parametrize("key", ["tls_cert", "tls_key", "tls_ca"])
def test_tls_files_must_exist(tmp_path: Path, key: str) -> None:
    """Brief: files named for TLS exist (error names the key and the path)."""
    error = _error(tmp_path, f"[[listener]]\n{key} = '{tmp_path / 'absent.pem'}'\n")
    assert error.key == f"listener[0].{key}"
    assert str(tmp_path / "absent.pem") in str(error)


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    """Design decision (docs/configuration.md, Paths): relative paths in the file resolve
    against the file's directory, so the broker finds them whatever its working directory."""
    (tmp_path / "acl").write_text("topic read public/#\n")
    config_path = tmp_path / "relaymq.toml"
    config_path.write_text("[broker]\ndata_dir = 'var'\n[access]\nacl_file = 'acl'\n")
    config = load_config(str(config_path))
    assert config.access.acl_file == str(tmp_path / "acl")
    assert config.broker.data_dir == str(tmp_path / "var")


def test_broken_password_and_acl_files_stop_start_up(tmp_path: Path) -> None:
    """Brief: validated at start; a malformed password file or ACL names file and line."""
    (tmp_path / "passwords").write_text("alice:not-a-hash\n")
    error = _error(tmp_path, "[access]\npassword_file = 'passwords'\n")
    assert error.key == "access.password_file" and f"{tmp_path / 'passwords'}:1:" in str(error)
    (tmp_path / "acl").write_text("user bob\ntopic raed x y\n")
    error = _error(tmp_path, "[access]\nacl_file = 'acl'\n")
    assert error.key == "access.acl_file" and f"{tmp_path / 'acl'}:2:" in str(error)


def test_broken_authorities_file_stops_start_up(tmp_path: Path) -> None:
    """issue 15: an authorities file that does not parse stops start-up naming the key, the
    file and the row - given explicitly or found at <data_dir>/authorities.json."""
    (tmp_path / "auth.json").write_text('{"authorities": [{"type": "queue", "profile": "A", "principal": "bob",'
                                        ' "authorities": ["fly"]}]}')
    error = _error(tmp_path, "[access]\nauthorities_file = 'auth.json'\n")
    assert error.key == "access.authorities_file" and "authorities[0]" in str(error) and "'fly'" in str(error)
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "authorities.json").write_text("{broken")
    error = _error(tmp_path, "[broker]\ndata_dir = 'var'\n")
    assert error.key == "access.authorities_file" and "not JSON" in str(error)


def test_tls_needs_cert_and_key_and_client_certificates_need_a_ca(tmp_path: Path) -> None:
    """Brief: tls_cert without tls_key, and require_certificate without tls_ca, are errors."""
    pem = tmp_path / "file.pem"
    pem.write_text("not parsed here\n")
    assert _error(tmp_path, f"[[listener]]\ntls_cert = '{pem}'\n").key == "listener[0].tls_key"
    assert _error(tmp_path, f"[[listener]]\ntls_key = '{pem}'\n").key == "listener[0].tls_cert"
    assert _error(tmp_path, f"[[listener]]\ntls_ca = '{pem}'\n").key == "listener[0].tls_ca"
    text = f"[[listener]]\ntls_cert = '{pem}'\ntls_key = '{pem}'\nrequire_certificate = true\n"
    assert _error(tmp_path, text).key == "listener[0].require_certificate"
    config_path = tmp_path / "ok.toml"
    config_path.write_text(text + f"tls_ca = '{pem}'\n")
    listener = load_config(str(config_path)).listeners[0]
    assert listener.tls and listener.require_certificate


@pytest.mark.parametrize(
    ("first", "second", "collides"),
    [
        (("0.0.0.0", 1883), ("0.0.0.0", 1883), True),
        (("127.0.0.1", 1883), ("0.0.0.0", 1883), True),
        (("::", 1883), ("::1", 1883), True),
        (("127.0.0.1", 1883), ("127.0.0.2", 1883), False),
        (("0.0.0.0", 1883), ("::", 1883), False),
        (("0.0.0.0", 1883), ("0.0.0.0", 1884), False),
        (("0.0.0.0", 0), ("0.0.0.0", 0), False),
        (("localhost", 1883), ("127.0.0.1", 1883), True),
        (("localhost", 1883), ("::", 1883), True),
        (("localhost", 1883), ("192.0.2.1", 1883), False),
    ],
)
def test_duplicate_listener_addresses(
    tmp_path: Path, first: tuple[str, int], second: tuple[str, int], collides: bool
) -> None:
    """Brief: duplicate (host, port) listeners are an error; a wildcard address takes the port
    on every address of its family; port 0 (any free port) never collides."""
    text = "".join(f"[[listener]]\nhost = '{host}'\nport = {port}\n" for host, port in (first, second))
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    if collides:
        with pytest.raises(ConfigError) as caught:
            load_config(str(path))
        assert caught.value.key == "listener[1].port"
    else:
        assert len(load_config(str(path)).listeners) == 2


def test_listener_names_are_unique_and_default_per_position(tmp_path: Path) -> None:
    """Schema: name = "default"; unnamed later listeners get distinct names, repeated names fail."""
    path = tmp_path / "relaymq.toml"
    path.write_text("[[listener]]\nport = 1\n[[listener]]\nport = 2\nprotocol = 'websocket'\n")
    assert [item.name for item in load_config(str(path)).listeners] == ["default", "listener1"]
    assert _error(tmp_path, "[[listener]]\nport = 1\n[[listener]]\nname = 'default'\nport = 2\n").key == "listener[1].name"


def test_overrides(tmp_path: Path) -> None:
    """Brief: overrides `port` (replaces the first listener's port), `data_dir`, `store`."""
    path = tmp_path / "relaymq.toml"
    path.write_text("[[listener]]\nport = 1\n[[listener]]\nport = 2\n[broker]\ndata_dir = 'here'\n")
    config = load_config(str(path), {"port": 1999, "data_dir": "elsewhere", "store": "memory"})
    assert [item.port for item in config.listeners] == [1999, 2]
    assert (config.broker.data_dir, config.broker.store) == ("elsewhere", "memory")


def test_port_override_creates_the_default_listener() -> None:
    """Brief: `port` creates the default listener on that port when the file has none."""
    config = load_config(None, {"port": 0})
    assert [(item.name, item.host, item.port) for item in config.listeners] == [("default", "localhost", 0)]


def test_bad_overrides_name_the_key() -> None:
    """Brief: overrides are checked like file values; an unknown override is an error too."""
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"store": "disk"})
    assert caught.value.key == "broker.store"
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"colour": "red"})
    assert caught.value.key == "colour"


def test_config_is_immutable() -> None:
    """Brief: frozen dataclasses, so no part of the server can change the configuration."""
    config = load_config(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.limits.max_inflight = 1  # type: ignore[misc]


def test_administrators_need_a_password_file_or_client_certificates(tmp_path: Path) -> None:
    """mqtt.md item 5 (only an administrator may control listeners) with issue 2 "Listeners and
    access": without a password file a user name is only a claim, so ``administrators`` alone
    stops start-up with one line naming access.administrators; a password file, or client
    certificates required on every listener, make it usable."""
    error = _error(tmp_path, "[access]\nadministrators = ['admin']\n")
    assert error.key == "access.administrators" and "password_file" in str(error)
    assert "\n" not in str(error)
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    passwords.set("admin", "secret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    path = tmp_path / "ok.toml"
    path.write_text("[access]\nadministrators = ['admin']\npassword_file = 'passwords'\n")
    assert load_config(str(path)).access.administrators == ("admin",)
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-")  # only their existence is checked here
    tls = ("tls_cert = 'cert.pem'\ntls_key = 'key.pem'\ntls_ca = 'ca.pem'\n")
    path.write_text("[access]\nadministrators = ['admin']\n[[listener]]\n" + tls + "require_certificate = true\n")
    assert load_config(str(path)).access.administrators == ("admin",)
    path.write_text("[access]\nadministrators = ['admin']\n[[listener]]\n" + tls + "require_certificate = true\n"
                    "[[listener]]\nport = 1884\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.key == "access.administrators"


def test_bad_overflow_policy_names_the_key_and_the_choices(tmp_path: Path) -> None:
    """Issue 14: a listener's ``overflow`` is "block" (the default), "drop-new" or
    "drop-oldest"; anything else stops start-up with one line naming the key."""
    error = _error(tmp_path, "[[listener]]\noverflow = 'drop'\n")
    assert str(error) == ('config error: listener[0].overflow: expected one of "block", "drop-new", '
                          '"drop-oldest", got "drop"')
    ok = tmp_path / "ok.toml"
    ok.write_text("[[listener]]\noverflow = 'drop-oldest'\n[[listener]]\nport = 1884\n")
    assert [listener.overflow for listener in load_config(str(ok)).listeners] == ["drop-oldest", "block"]


#: The parts that are off unless their table is in the file: their services ask
#: ``Config.configured`` (None: not configured) and leave their schema unimported (issue 16).
OFF_UNLESS_CONFIGURED = ("bridge", "amqp", "multicast", "realtime", "archive")


@pytest.mark.parametrize("name", OFF_UNLESS_CONFIGURED)
def test_a_part_off_by_default_is_off_when_not_configured(name: str) -> None:
    """``configured(name) is None`` stands for the section's defaults: they must run nothing."""
    config = load_config(None)
    assert config.configured(name) is None
    defaults = config.section(name)
    assert not defaults if name == "bridge" else not defaults.enabled


def test_a_configured_section_is_built_at_load_and_an_absent_one_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "relaymq.toml"
    path.write_text("[realtime]\nenabled = false\n")
    config = load_config(str(path), {"http_port": 0})
    assert config.configured("realtime") == RealtimeSettings(enabled=False)
    assert config.configured("http") is config.section("http")  # set by an override
    assert config.configured("multicast") is None
    assert config.section("multicast") is config.section("multicast") == MulticastSettings()
    path.write_text("[realtime]\nenabled = 'yes'\n")  # a configured section's error stops the load
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.key == "realtime.enabled"
