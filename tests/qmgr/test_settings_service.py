"""[qmgr] configuration and the broker service (issue 5 "Defaults"; everyplace.md items 7, 28)."""

from __future__ import annotations

import asyncio

import pytest

from relaymq.config import ConfigError, load_config
from relaymq.qmgr import QueueManager
from relaymq.qmgr import service as qmgr_service
from relaymq.services.contract import ServiceContext

from .helpers import body, text_message


def _config(tmp_path, toml: str, **overrides):
    path = tmp_path / "relaymq.toml"
    path.write_text(toml)
    return load_config(str(path), overrides or None)


def test_defaults_qm1_and_channel_port_8081() -> None:
    """issue 5 Defaults: queue manager QM1 unless told otherwise; channel listener on 8081."""
    settings = load_config(None).section("qmgr")
    assert (settings.name, settings.channel_port, settings.queue) == ("QM1", 8081, ())


def test_command_line_overrides(tmp_path) -> None:
    """issue 5 Defaults: --qmgr NAME and --channel-port N."""
    settings = _config(tmp_path, "", qmgr="QMZ", channel_port=9001).section("qmgr")
    assert (settings.name, settings.channel_port) == ("QMZ", 9001)


@pytest.mark.parametrize("toml,key", [
    ('[qmgr]\nname = "bad name"\n', "qmgr.name"),
    ('[qmgr]\nchannel_port = 70000\n', "qmgr.channel_port"),
    ('[qmgr]\ncolour = 1\n', "qmgr.colour"),
    ('[[qmgr.queue]]\nname = "A"\n[[qmgr.queue]]\nname = "B"\n[[qmgr.queue]]\nname = "C"\nmax_depth = "x"\n',
     "qmgr.queue[2].max_depth"),
    ('[[qmgr.queue]]\nname = "A"\ndefault_priority = 10\n', "qmgr.queue[0].default_priority"),
    ('[[qmgr.queue]]\nname = "A"\ntype = "queue"\n', "qmgr.queue[0].type"),
    ('[[qmgr.queue]]\nname = "A"\nshade = 1\n', "qmgr.queue[0].shade"),
    ('[[qmgr.queue]]\nmax_depth = 1\n', "qmgr.queue[0].name"),
    ('[[qmgr.queue]]\nname = "A"\n[[qmgr.queue]]\nname = "A"\n', "qmgr.queue[1].name"),
    ('[[qmgr.queue]]\nname = "R"\ntype = "remote"\n', "qmgr.queue[0]"),
])
def test_errors_name_the_key(tmp_path, toml: str, key: str) -> None:
    """issue 5 step 7: errors name the key, e.g. qmgr.queue[2].max_depth."""
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, toml)
    assert err.value.key == key


def test_channel_security_keys_defaults_and_errors(tmp_path) -> None:
    """Issue 15 findings 1, 8: the channel listener binds the loopback addresses ("localhost":
    127.0.0.1 and ::1) and refuses unauthenticated peers by default, with bounds on frames, time and connections; every new
    key's mistake stops start-up naming the key (a channel password file is read at load)."""
    settings = load_config(None).section("qmgr")
    assert (settings.channel_host, settings.channel_allow_anonymous, settings.channel_password_file) == \
        ("localhost", False, "")
    assert (settings.channel_max_frame, settings.channel_frame_timeout_ms, settings.channel_idle_timeout,
            settings.channel_max_connections, settings.channel_max_connections_per_address,
            settings.channel_trusted_context) == (16 * 1024 * 1024, 30_000, 300, 256, 32, ())
    broken = tmp_path / "peers"
    broken.write_text("QM2 no hash here\n")
    for toml, key in (
        ("[qmgr]\nchannel_allow_anonymous = 1\n", "qmgr.channel_allow_anonymous"),
        (f'[qmgr]\nchannel_password_file = "{tmp_path / "missing"}"\n', "qmgr.channel_password_file"),
        (f'[qmgr]\nchannel_password_file = "{broken}"\n', "qmgr.channel_password_file"),
        ("[qmgr]\nchannel_max_frame = 100\n", "qmgr.channel_max_frame"),
        ("[qmgr]\nchannel_frame_timeout_ms = 0\n", "qmgr.channel_frame_timeout_ms"),
        ("[qmgr]\nchannel_idle_timeout = -1\n", "qmgr.channel_idle_timeout"),
        ("[qmgr]\nchannel_max_connections = 0\n", "qmgr.channel_max_connections"),
        ("[qmgr]\nchannel_max_connections_per_address = 0\n", "qmgr.channel_max_connections_per_address"),
        ('[qmgr]\nchannel_trusted_context = "QM2"\n', "qmgr.channel_trusted_context"),
    ):
        with pytest.raises(ConfigError) as err:
            _config(tmp_path, toml)
        assert err.value.key == key, toml


def test_service_opens_defines_registers_and_closes(tmp_path) -> None:
    """issue 5 step 7: the service opens the queue manager under the broker's data_dir with
    its store kind, defines the configured queues, registers services['qmgr'], closes on stop;
    a restart keeps the messages and applies changed properties."""
    toml = f"""
[broker]
data_dir = "{tmp_path / 'data'}"
[qmgr]
name = "QMS"
channel_host = "127.0.0.1"
channel_port = 0
[[qmgr.queue]]
name = "ORDERS"
max_depth = 5
[[qmgr.queue]]
name = "OUT"
type = "remote"
queue_manager = "QMT"
mode = "async"
"""
    config = _config(tmp_path, toml)

    async def run_once(check):
        context = ServiceContext(config, broker=None)
        service = await qmgr_service.start(context)
        try:
            return check(context.services["qmgr"])
        finally:
            await service.stop()

    def first(qm: QueueManager) -> str:
        qm.put("ORDERS", text_message("kept"))
        return qm.name

    assert asyncio.run(run_once(first)) == "QMS"
    assert (tmp_path / "data" / "qmgr-QMS.db").exists()
    config = _config(tmp_path, toml.replace("max_depth = 5", "max_depth = 7"))

    def second(qm: QueueManager):
        return qm.queue("ORDERS").max_depth, body(qm.get("ORDERS")), qm.queue("OUT", qmgr="QMT").mode

    assert asyncio.run(run_once(second)) == (7, "kept", "async")


def test_connections_are_built_by_the_channel_part(tmp_path) -> None:
    """[[qmgr.connection]] belongs to the channel part's schema; its errors name the key."""
    pytest.importorskip("relaymq.qmgr.channel_settings")
    settings = _config(tmp_path, '[[qmgr.connection]]\nname = "SERVER"\naddress = "localhost:8081"\n').section("qmgr")
    assert [c.name for c in settings.connection] == ["SERVER"]
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, '[[qmgr.connection]]\nname = "T"\nvia = "NOPE"\n')
    assert err.value.key == "qmgr.connection[0].via"


@pytest.mark.parametrize("toml,key", [
    ('[qmgr]\nchannel_tls_cert = "{cert}"\n', "qmgr.channel_tls_key"),
    ('[qmgr]\nchannel_tls_key = "{cert}"\n', "qmgr.channel_tls_cert"),
    ('[qmgr]\nchannel_tls_ca = "{cert}"\n', "qmgr.channel_tls_ca"),
    ('[qmgr]\nchannel_tls_cert = "/no/such/file.pem"\nchannel_tls_key = "{cert}"\n', "qmgr.channel_tls_cert"),
    ('[[qmgr.connection]]\nname = "S"\naddress = "h:1"\ntls_cert = "{cert}"\n', "qmgr.connection[0].tls_key"),
])
def test_channel_tls_keys_are_checked(tmp_path, toml: str, key: str) -> None:
    """P7d: [qmgr] channel_tls_cert/channel_tls_key go together, channel_tls_ca needs them,
    files must exist; a connection's client certificate likewise; the error names the key."""
    cert = tmp_path / "cert.pem"
    cert.write_text("not checked here")
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, toml.replace("{cert}", str(cert)))
    assert err.value.key == key


def test_connections_with_tls_default_to_the_queue_managers_certificate(tmp_path) -> None:
    """P7d: a connection with tls = true and no certificate of its own presents [qmgr]
    channel_tls_cert/key and verifies the peer against channel_tls_ca."""
    for name in ("c.pem", "k.pem", "ca.pem", "own-ca.pem"):
        (tmp_path / name).write_text("x")
    settings = _config(tmp_path, f"""
[qmgr]
channel_tls_cert = "{tmp_path / 'c.pem'}"
channel_tls_key = "{tmp_path / 'k.pem'}"
channel_tls_ca = "{tmp_path / 'ca.pem'}"

[[qmgr.connection]]
name = "A"
address = "a:1"
tls = true

[[qmgr.connection]]
name = "B"
address = "b:1"
tls = true
tls_ca = "{tmp_path / 'own-ca.pem'}"

[[qmgr.connection]]
name = "C"
address = "c:1"
""").section("qmgr")
    a, b, c = settings.connection
    assert (a.tls_cert, a.tls_key, a.tls_ca) == (str(tmp_path / "c.pem"), str(tmp_path / "k.pem"), str(tmp_path / "ca.pem"))
    assert (b.tls_cert, b.tls_ca) == (str(tmp_path / "c.pem"), str(tmp_path / "own-ca.pem"))
    assert (c.tls_cert, c.tls_ca) == ("", "")


def test_channel_identities_and_connection_credentials(tmp_path) -> None:
    """docs/channels.md "Who may connect" (item 26): [qmgr.channel_identities] maps an
    identity to queue manager names; a connection's user and password go together (sent in
    the HELLO over TCP since issue 15 finding 1, as basic authentication over HTTP); each
    mistake names its key."""
    settings = _config(tmp_path, """
[qmgr.channel_identities]
"gateway.example" = ["DEVICE1", "DEVICE2"]

[[qmgr.connection]]
name = "TARGET"
address = "https://target.example:8080"
user = "QM1"
password = "secret"
""").section("qmgr")
    assert settings.channel_identities == (("gateway.example", ("DEVICE1", "DEVICE2")),)
    (target,) = settings.connection
    assert (target.user, target.password) == ("QM1", "secret") and "secret" not in repr(target)
    for toml, key in (
        ('[qmgr.channel_identities]\ngw = "DEVICE1"\n', "qmgr.channel_identities.gw"),
        ('[qmgr.channel_identities]\ngw = ["not a name!"]\n', "qmgr.channel_identities.gw"),
        ('[qmgr]\nchannel_identities = ["x"]\n', "qmgr.channel_identities"),
        ('[[qmgr.connection]]\nname = "T"\naddress = "http://t:1"\npassword = "p"\n', "qmgr.connection[0].user"),
    ):
        with pytest.raises(ConfigError) as err:
            _config(tmp_path, toml)
        assert err.value.key == key, toml
