"""MQTT bridges to a real Mosquitto (issue 17, "MQTT bridges to any MQTT 3.1.1/5 broker ...
tested against Mosquitto as the remote peer"; docs/networks.md). Every broker is a real
process on a loopback port; the clients are paho-mqtt."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from harness import BrokerProcess
from interop.clients import WAIT, paho_client, unique

pytestmark = pytest.mark.interop


def bridge_config(remote: BrokerProcess, name: str, protocol: str, topics: list[dict[str, Any]],
                  **options: Any) -> dict[str, Any]:
    return {"bridge": [{"name": name, "host": remote.host, "port": remote.port, "protocol": protocol,
                        "reconnect_initial_ms": 100, "reconnect_max_ms": 1000, "topic": topics, **options}]}


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:g}s: {what}")
        time.sleep(0.02)


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
