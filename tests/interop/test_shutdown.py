"""Graceful shutdown of a broker process with clients connected (issue 2, "Command line and
configuration": SIGTERM/SIGINT shut down gracefully, the store is flushed, wills of live clients
are not sent).

Audit finding: on Python >= 3.12 the broker waited for ``Server.wait_closed()`` before closing
its client connections, and since 3.12 that waits for every connection: SIGTERM hung. The test
keeps several kinds of client connected, one of which never reads (its unsent bytes would keep
a gracefully closed socket open for ever), and checks the exit is prompt and clean.
"""

from __future__ import annotations

import socket
import time

import pytest

from harness import BrokerProcess

from .clients import PahoClient, paho_client, unique

pytestmark = pytest.mark.interop

#: Generous for a loaded 2-core machine; a hang is what this catches (the grace is 2 s).
PROMPT = 10.0


def _raw_subscriber_that_never_reads(broker: BrokerProcess, topic: str) -> socket.socket:
    """An MQTT 3.1.1 subscriber on a raw socket with a tiny receive buffer that stops reading
    after its SUBACK: whatever the broker sends it piles up in the broker's buffers."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(broker.address)
    client_id = b"never-reads"
    connect = b"\x00\x04MQTT\x04\x02\x00\x00" + len(client_id).to_bytes(2, "big") + client_id
    sock.sendall(bytes([0x10, len(connect)]) + connect)
    assert sock.recv(4)[:1] == b"\x20"
    body = b"\x00\x01" + len(topic).to_bytes(2, "big") + topic.encode() + b"\x00"
    sock.sendall(bytes([0x82, len(body)]) + body)
    assert sock.recv(5)[:1] == b"\x90"
    return sock


def test_sigterm_with_clients_exits_promptly_without_wills_and_with_the_store_flushed(
        broker_factory) -> None:
    """SIGTERM with connected clients (MQTT 3.1.1 and 5 with wills, a subscriber, one that never
    reads): the broker exits within seconds with status 0; no will is published (a persistent
    QoS 1 subscriber of the will topic has none, live or after the restart); a QoS 1 message
    acknowledged just before the SIGTERM reaches its offline persistent subscriber after the
    restart.

    Spec: mqtt.md item 25 (the will is for an I/O error or keep-alive time-out, seed 000
    l.970-972: a broker's orderly shutdown is neither), item 6 and README decision 4 (stored
    before acknowledged, l.427/439/743), item 26 (kept until the client reconnects,
    l.1227-1229).
    """
    broker = broker_factory(config={"limits": {"max_outbound_buffer": 65536}})
    will_topic, kept_topic, flood_topic = unique("shut/will"), unique("shut/kept"), unique("shut/flood")

    watcher = PahoClient(broker, "v311", unique("watch"), clean=False).connect()
    assert watcher.subscribe(will_topic, 1) == [1]
    offline = PahoClient(broker, "v5", unique("off"), clean=False).connect()
    assert offline.subscribe(kept_topic, 1) == [1]
    offline.disconnect()
    wills = [paho_client(broker, level, will=(will_topic, f"will of {level}".encode(), 1, False))
             for level in ("v311", "v5")]
    stuck = _raw_subscriber_that_never_reads(broker, flood_topic)
    publisher = paho_client(broker, "v311")
    for _ in range(40):  # 2 MB for a client that reads nothing: far past max_outbound_buffer
        publisher.publish(flood_topic, b"x" * 50_000, 0)
    assert publisher.publish(kept_topic, b"acknowledged before SIGTERM", 1) == 0

    started = time.monotonic()
    status = broker.stop(timeout=30)
    took = time.monotonic() - started
    stuck.close()
    assert status == 0, f"exit status {status} after {took:.1f}s\n{broker.describe_log()}"
    assert took < PROMPT, f"SIGTERM took {took:.1f}s\n{broker.describe_log()}"
    assert "store closed" in broker.log_tail(5)
    for client in (*wills, publisher, watcher):
        client.client.loop_stop()
    assert watcher.inbox.messages == []

    broker.start()
    back = PahoClient(broker, "v5", offline.client_id, clean=False).connect()
    watcher_back = PahoClient(broker, "v311", watcher.client_id, clean=False).connect()
    try:
        [got] = back.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos) == (kept_topic, b"acknowledged before SIGTERM", 1)
        assert watcher_back.session_present is True
        assert watcher_back.inbox.wait_quiet(1.0) == []  # no will was queued for it either
    finally:
        back.disconnect()
        watcher_back.disconnect()
