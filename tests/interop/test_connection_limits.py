"""Connection limits and the WebSocket listener through a real broker process and real
sockets (issue 2 "Limits": max connections, each with a documented behaviour when reached;
"Listeners and access": MQTT over WebSocket on path /mqtt). The documented behaviour is in
docs/configuration.md, [limits] and [[listener]]."""

from __future__ import annotations

import socket
import time

import pytest

from harness import BrokerProcess, free_port

from .clients import PahoClient, paho_client, unique
from .raw import closed_by_peer

pytestmark = pytest.mark.interop


@pytest.fixture
def limited(broker_factory) -> BrokerProcess:
    ws_port = free_port()
    broker = broker_factory(store="memory", config={
        "limits": {"max_connections": 3, "connect_timeout": 2},
        "listener": [{"name": "default", "host": "127.0.0.1"},
                     {"name": "ws", "host": "127.0.0.1", "port": ws_port, "protocol": "websocket"}],
    })
    broker.ws_port = ws_port  # type: ignore[attr-defined]
    return broker


def test_max_connections_counts_sockets_that_have_not_sent_connect(limited: BrokerProcess) -> None:
    """Three sockets that never send CONNECT fill max_connections = 3: a paho client is closed
    at once without a CONNACK; once they are gone (closed by connect_timeout), it connects."""
    silent = [socket.create_connection(limited.address) for _ in range(3)]
    time.sleep(0.2)  # the broker has accepted them
    over = socket.create_connection(limited.address)
    assert closed_by_peer(over, 5), "the socket over the limit was not closed"
    over.close()
    assert all(closed_by_peer(s, 10) for s in silent), "connect_timeout did not close the silent sockets"
    for s in silent:
        s.close()
    client = paho_client(limited, "v311")
    client.disconnect()


def test_connect_timeout_closes_a_socket_that_trickles_an_incomplete_connect(limited: BrokerProcess) -> None:
    """limits.connect_timeout counts from the accept: bytes that never make a CONNECT do not
    keep the socket open."""
    sock = socket.create_connection(limited.address)
    started = time.monotonic()
    sock.sendall(b"\x10\x20\x00")  # a CONNECT's first bytes, never completed
    time.sleep(1.0)
    sock.sendall(b"\x04")
    assert closed_by_peer(sock, 10)
    assert time.monotonic() - started >= 1.5  # not before its time (2 s, ticks of 0.5 s)
    sock.close()


def test_websocket_handshake_that_never_completes_times_out(limited: BrokerProcess) -> None:
    """A WebSocket listener's socket whose HTTP upgrade never completes is closed by
    connect_timeout like a CONNECT that never comes."""
    sock = socket.create_connection(("127.0.0.1", limited.ws_port))  # type: ignore[attr-defined]
    sock.sendall(b"GET /mqtt HTTP/1.1\r\nHost: x\r\n")  # headers never finished
    assert closed_by_peer(sock, 10)
    sock.close()


@pytest.mark.parametrize("level", ["v311", "v5"])
def test_mqtt_over_websocket_with_paho(limited: BrokerProcess, level: str) -> None:
    """paho over WebSocket on /mqtt publishes to and receives from a TCP client.

    Spec: issue 2 (MQTT over WebSocket, path /mqtt); MQTT 5 6.0 (binary frames, subprotocol
    "mqtt"); mqtt.md items 7-9 (QoS flows)."""
    topic = unique("ws/t")
    ws = PahoClient(limited, level, unique("ws"), port=limited.ws_port,  # type: ignore[attr-defined]
                    transport="websockets").connect()
    tcp = paho_client(limited, level)
    try:
        assert ws.subscribe(topic, 1) == [1]
        tcp.publish(topic, b"to the browser", 1)
        [got] = ws.inbox.wait_for(1)
        assert (got.payload, got.qos) == (b"to the browser", 1)
        tcp.subscribe(topic + "/back", 2)
        ws.publish(topic + "/back", b"from the browser", 2)
        [back] = tcp.inbox.wait_for(1)
        assert (back.payload, back.qos) == (b"from the browser", 2)
    finally:
        ws.disconnect()
        tcp.disconnect()


def test_websocket_on_another_path_is_refused(limited: BrokerProcess) -> None:
    """Only the configured path (/mqtt) upgrades; another path gets HTTP 404."""
    sock = socket.create_connection(("127.0.0.1", limited.ws_port), timeout=10)  # type: ignore[attr-defined]
    sock.sendall(b"GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    assert sock.recv(100).startswith(b"HTTP/1.1 404")
    sock.close()
