"""MQTT bridges to a real Mosquitto (issue 17, "MQTT bridges to any MQTT 3.1.1/5 broker ...
tested against Mosquitto as the remote peer"; docs/networks.md). Every broker is a real
process on a loopback port; the clients are paho-mqtt."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import BrokerProcess
from interop.certs import Certificates, make_certificates
from interop.clients import WAIT, PahoClient, paho_client, unique
from network.topology import wait_until

MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"

pytestmark = pytest.mark.interop


def bridge_config(remote: BrokerProcess, name: str, protocol: str, topics: list[dict[str, Any]],
                  **options: Any) -> dict[str, Any]:
    return {"bridge": [{"name": name, "host": remote.host, "port": remote.port, "protocol": protocol,
                        "reconnect_initial_ms": 100, "reconnect_max_ms": 1000, "topic": topics, **options}]}


def bridged(broker_factory: Callable[..., BrokerProcess], protocol: str, topics: list[dict[str, Any]],
            **options: Any) -> tuple[BrokerProcess, BrokerProcess]:
    remote = broker_factory(kind="mosquitto")
    local = broker_factory(kind="relaymq", config=bridge_config(remote, "site", protocol, topics, **options))
    return local, remote


def wait_bridge_up(local: BrokerProcess, remote: BrokerProcess, local_topic: str, remote_topic: str) -> None:
    """Publish probes on the local side until one arrives on the remote side: the bridge is
    connected and subscribed (no fixed sleep)."""
    watcher = paho_client(remote, "v311")
    watcher.subscribe(remote_topic, 0)
    probe = paho_client(local, "v311")
    deadline = time.monotonic() + WAIT
    try:
        while not watcher.inbox.messages:
            if time.monotonic() > deadline:
                raise TimeoutError(f"bridge did not carry {local_topic} -> {remote_topic}\n{local.describe_log()}")
            probe.publish(local_topic, b"probe", 0)
            watcher.inbox.wait_quiet(0.1)
    finally:
        probe.disconnect()
        watcher.disconnect()


@pytest.mark.parametrize("protocol", ["3.1.1", "5"])
def test_bridge_carries_both_directions_without_loops(broker_factory: Callable[..., BrokerProcess],
                                                      protocol: str) -> None:
    """Issue 17: topic patterns in/out/both with local and remote prefixes; loop prevention
    (No Local at MQTT 5, the bridge flag at 3.1.1): each subscriber gets exactly one copy."""
    local, remote = bridged(broker_factory, protocol, [
        {"pattern": "up/#", "direction": "out", "qos": 1, "remote_prefix": "site/"},
        {"pattern": "down/#", "direction": "in", "qos": 1, "local_prefix": "from-hq/"},
        {"pattern": "chat/#", "direction": "both", "qos": 1},
    ])
    wait_bridge_up(local, remote, "up/probe", "site/up/probe")
    remote_sub = paho_client(remote, "v5")
    remote_sub.subscribe("#", 1)
    local_sub = paho_client(local, "v5")
    local_sub.subscribe("#", 1)

    paho_client(local, "v311").publish("up/temp", b"21.5", 1)
    paho_client(remote, "v311").publish("down/cmd", b"reboot", 1)
    local_chat = paho_client(local, "v5")
    local_chat.publish("chat/a", b"from-local", 1)
    paho_client(remote, "v5").publish("chat/b", b"from-remote", 1)

    remote_sub.inbox.wait_for(4)  # its own down/cmd and chat/b, site/up/temp and chat/a bridged
    local_sub.inbox.wait_for(4)  # its own up/temp and chat/a, from-hq/down/cmd and chat/b bridged
    # anything looping round would arrive within this time again
    got_remote = remote_sub.inbox.wait_quiet(1.5)
    got_local = local_sub.inbox.wait_quiet(0.1)
    remote_seen = sorted((m.topic, m.payload) for m in got_remote if m.payload != b"probe")
    local_seen = sorted((m.topic, m.payload) for m in got_local if m.payload != b"probe")
    assert remote_seen == [("chat/a", b"from-local"), ("chat/b", b"from-remote"), ("down/cmd", b"reboot"),
                           ("site/up/temp", b"21.5")]
    assert local_seen == [("chat/a", b"from-local"), ("chat/b", b"from-remote"), ("from-hq/down/cmd", b"reboot"),
                          ("up/temp", b"21.5")]


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "sigkill"])
def test_bridge_qos1_out_survives_relaymq_restart_and_remote_restart(
        broker_factory: Callable[..., BrokerProcess], hard: bool) -> None:
    """Issue 17: QoS 1/2 out of the bridge is not lost across a relaymq restart (the bridge's
    local session is persistent and acknowledged only after the remote's PUBACK), and the
    bridge reconnects, with back-off, after the remote broker restarts; $SYS shows its state."""
    local, remote = bridged(broker_factory, "3.1.1", [
        {"pattern": "meter/#", "direction": "out", "qos": 1, "remote_prefix": "site/"},
        {"pattern": "cmd/#", "direction": "in", "qos": 1},
    ])
    subscriber_id = unique("far")
    far = paho_client(remote, "v311", subscriber_id, clean=False)
    far.subscribe("site/meter/#", 1)
    far.disconnect()
    wait_bridge_up(local, remote, "meter/probe", "site/meter/probe")
    state = paho_client(local, "v5")
    state.subscribe("$SYS/broker/bridges/site/state", 0)
    wait_until(lambda: [m.payload for m in state.inbox.messages][-1:] == [b"1"], "$SYS shows the bridge up")

    remote.stop()  # the remote goes away; publications wait on this side
    wait_until(lambda: [m.payload for m in state.inbox.messages][-1:] == [b"0"], "$SYS shows the bridge down")
    count = 40
    publisher = paho_client(local, "v311")
    for i in range(count):
        publisher.publish(f"meter/{i % 4}", f"m{i}".encode(), 1)  # PUBACKed by relaymq: its promise
    publisher.disconnect()
    local.restart(hard=hard)
    remote.start()

    far = paho_client(remote, "v311", subscriber_id, clean=False)
    got = far.inbox.wait_while_progressing(
        lambda ms: {m.payload for m in ms} >= {f"m{i}".encode() for i in range(count)}, idle=WAIT, limit=60)
    payloads = {m.payload for m in got if m.payload != b"probe"}
    assert payloads == {f"m{i}".encode() for i in range(count)}, local.describe_log()
    assert all(m.topic.startswith("site/meter/") for m in got)

    # and the inbound direction works again after the remote restarted
    near = paho_client(local, "v311")
    near.subscribe("cmd/#", 1)
    sender = paho_client(remote, "v311")
    deadline = time.monotonic() + WAIT
    while not near.inbox.messages:  # the bridge's remote subscription may still be on its way
        assert time.monotonic() < deadline, local.describe_log()
        sender.publish("cmd/go", b"go", 1)
        near.inbox.wait_quiet(0.2)
    assert {m.topic for m in near.inbox.messages} == {"cmd/go"}


def test_bridge_qos2_both_ways_exactly_once(broker_factory: Callable[..., BrokerProcess]) -> None:
    """Issue 17: QoS is carried; a QoS 2 publication crosses the bridge once, each way."""
    local, remote = bridged(broker_factory, "5", [{"pattern": "x/#", "direction": "both", "qos": 2}])
    wait_bridge_up(local, remote, "x/probe", "x/probe")
    remote_sub = paho_client(remote, "v5")
    remote_sub.subscribe("x/data/#", 2)
    local_sub = paho_client(local, "v5")
    local_sub.subscribe("x/data/#", 2)
    local_pub, remote_pub = paho_client(local, "v5"), paho_client(remote, "v5")
    for i in range(10):
        local_pub.publish("x/data/l", f"l{i}".encode(), 2)
        remote_pub.publish("x/data/r", f"r{i}".encode(), 2)
    want = sorted([f"l{i}".encode() for i in range(10)] + [f"r{i}".encode() for i in range(10)])
    remote_sub.inbox.wait_for(20)
    local_sub.inbox.wait_for(20)
    time_for_extra = remote_sub.inbox.wait_quiet(1.0)
    assert sorted(m.payload for m in time_for_extra) == want
    assert sorted(m.payload for m in local_sub.inbox.wait_quiet(0.1)) == want
    assert {m.qos for m in time_for_extra} == {2}


class TlsMosquitto(BrokerProcess):
    """Mosquitto with a TLS listener that wants a user name and password."""

    def __init__(self, workdir: Path, certs: Certificates, password_file: Path) -> None:
        super().__init__("mosquitto", workdir=workdir,
                         config={"access": {"allow_anonymous": False}})
        self.listener_lines = [f"cafile {certs.ca}", f"certfile {certs.server_cert}",
                               f"keyfile {certs.server_key}", f"password_file {password_file}"]

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(conf.read_text() + "\n".join(self.listener_lines) + "\n")
        return cmd


def test_bridge_over_tls_with_credentials(broker_factory: Callable[..., BrokerProcess], tmp_path: Path) -> None:
    """Issue 17: TLS and credentials towards the remote broker; a wrong password is refused
    and retried with back-off, and the right one carries publications."""
    certs = make_certificates(tmp_path / "certs")
    password_file = tmp_path / "mosquitto.passwd"
    subprocess.run([MOSQUITTO_PASSWD, "-b", "-c", str(password_file), "bridge-user", "s3cret"], check=True,
                   capture_output=True, timeout=30)
    remote = TlsMosquitto(tmp_path / "remote", certs, password_file)
    try:
        remote.start()
        topics = [{"pattern": "secure/#", "direction": "out", "qos": 1}]
        tls = {"tls": True, "tls_ca": str(certs.ca), "username": "bridge-user"}
        wrong = broker_factory(kind="relaymq", config=bridge_config(remote, "tls", "5", topics, password="nope", **tls))
        wait_until(lambda: "refused the connection (reason 135)" in wrong.log_tail(200), "the refusal logged")
        local = broker_factory(kind="relaymq", config=bridge_config(remote, "tls", "5", topics, password="s3cret",
                                                                    **tls))
        watcher = PahoClient(remote, "v5", username="bridge-user", password="s3cret", tls=certs.server_only())
        watcher.connect()
        watcher.subscribe("secure/#", 1)
        publisher = paho_client(local, "v5")
        deadline = time.monotonic() + WAIT
        while not watcher.inbox.messages:
            assert time.monotonic() < deadline, local.describe_log()
            publisher.publish("secure/x", b"over tls", 1)
            watcher.inbox.wait_quiet(0.2)
        assert watcher.inbox.messages[0].topic == "secure/x"
        assert "connected to 127.0.0.1" in local.log_tail(200)
    finally:
        remote.cleanup()


def test_bridge_to_a_broker_without_try_private_falls_back(broker_factory: Callable[..., BrokerProcess]) -> None:
    """Issue 17: "to any MQTT 3.1.1/5 broker": a remote that refuses the bridge flag (relaymq
    itself answers protocol level 0x84 with return code 1) is connected to again without it."""
    remote = broker_factory(kind="relaymq")
    local = broker_factory(kind="relaymq", config=bridge_config(remote, "plain", "3.1.1", [
        {"pattern": "fwd/#", "direction": "out", "qos": 1}]))
    wait_bridge_up(local, remote, "fwd/probe", "fwd/probe")
    assert "trying again without the bridge flag" in local.log_tail(200)
