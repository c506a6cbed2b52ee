"""The MQTT front door's bounds through a real broker process and raw sockets (issue 15
finding 8: "a 256 MB packet is buffered before CONNECT (Mosquitto closes at once)"; no
connection caps). docs/configuration.md: [limits] max_connect_packet_size, [[listener]]
max_connections and max_connections_per_address; docs/security.md, attack table."""

from __future__ import annotations

import socket
import time

import pytest

from harness import BrokerProcess

from .clients import PahoClient, paho_client
from .raw import closed_by_peer, packet, string
from .test_http_front_door import wait_for_log
from .test_memory_bounds import rss_mb

pytestmark = pytest.mark.interop

#: The fixed header of a PUBLISH (or CONNECT) announcing 268,435,455 bytes: 256 MB.
HUGE_CONNECT = bytes([0x10, 0xFF, 0xFF, 0xFF, 0x7F])


def push(sock: socket.socket, total: int, chunk: int = 65536) -> int:
    """Send up to ``total`` bytes; how many went before the broker closed the socket."""
    sent = 0
    block = b"\0" * chunk
    sock.settimeout(10)
    try:
        while sent < total:
            sent += sock.send(block)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return sent


def connected(broker: BrokerProcess, within: float = 10.0) -> PahoClient:
    """A paho client, tried until the broker has seen earlier sockets go (the harness's
    readiness probe, a socket the test closed): they count against the caps until then."""
    deadline = time.monotonic() + within
    while True:
        try:
            return paho_client(broker, "v311")
        except Exception:
            if time.monotonic() > deadline:
                raise


def test_a_256_mb_packet_before_connect_is_closed_at_once_and_not_buffered(broker: BrokerProcess) -> None:
    """issue 15 finding 8 (MQTT 3.1.1 2.2.3 Remaining Length up to 268,435,455): a fixed header
    announcing 256 MB before CONNECT closes the socket when the header arrives; the broker
    does not read, let alone keep, what follows (RSS unchanged). Mosquitto does the same."""
    pid = broker.proc.pid
    before = rss_mb(pid)
    sock = socket.create_connection(broker.address)
    sock.sendall(HUGE_CONNECT)
    assert closed_by_peer(sock, 5), "the broker kept a socket that announced 256 MB before CONNECT"
    sent = push(sock, 64 * 1024 * 1024)
    sock.close()
    assert sent < 64 * 1024 * 1024, "the broker went on reading after the announcement"
    grown = rss_mb(pid) - before
    assert grown < 8, f"RSS grew by {grown:.1f} MB"
    # The broker still serves: a normal client connects.
    paho_client(broker, "v311").disconnect()


def test_a_connect_as_large_as_the_protocol_allows_is_still_accepted(broker: BrokerProcess) -> None:
    """The bound is only as small as a CONNECT needs: MQTT 3.1.1 3.1.3 with a 65,535-byte
    will payload and password (the largest strings) gets its CONNACK."""
    body = (string("MQTT") + bytes([4, 0xC6]) + (60).to_bytes(2, "big") + string("big-connect")
            + string("will/t") + string(b"w" * 65535) + string("user") + string(b"p" * 65535))
    with socket.create_connection(broker.address, timeout=5) as sock:
        sock.sendall(packet(0x10, body))
        assert sock.recv(4) == b"\x20\x02\x00\x00"


def test_max_connect_packet_size_is_configurable(broker_factory) -> None:
    """[limits] max_connect_packet_size: a CONNECT over it is closed without a CONNACK; after
    CONNECT, max_packet_size applies (a larger PUBLISH is accepted)."""
    broker = broker_factory(store="memory", config={"limits": {"max_connect_packet_size": 64}})
    body = string("MQTT") + bytes([4, 2]) + (60).to_bytes(2, "big") + string("c" * 80)
    with socket.create_connection(broker.address) as sock:
        sock.sendall(packet(0x10, body))
        assert closed_by_peer(sock, 5)
    client = paho_client(broker, "v311")
    client.publish("t/large", b"x" * 1000, qos=1)
    client.disconnect()


def test_per_address_cap_refuses_the_next_socket_and_logs_once(broker_factory) -> None:
    """issue 15 finding 8: [[listener]] max_connections_per_address = 2: a third socket from
    the same address is closed at once with one log line; once one goes, a client connects."""
    broker = broker_factory(store="memory", config={
        "listener": [{"name": "default", "host": "127.0.0.1", "max_connections_per_address": 2}]})
    held = [socket.create_connection(broker.address) for _ in range(2)]
    try:
        over = socket.create_connection(broker.address)
        assert closed_by_peer(over, 5), "a third socket from one address was kept"
        over.close()
        log = wait_for_log(broker, "max_connections_per_address (2) reached", 1)
        assert log.count("max_connections_per_address (2) reached") == 1
    finally:
        held.pop().close()
    connected(broker).disconnect()
    held[0].close()


def test_listener_cap_and_rate_limited_refusal_log(broker_factory) -> None:
    """[[listener]] max_connections = 1: every socket over it is closed at once; 50 refusals
    write at most 10 log lines (rate-limited), the rest counted."""
    broker = broker_factory(store="memory", config={
        "listener": [{"name": "default", "host": "127.0.0.1", "max_connections": 1}]})
    first = connected(broker)
    try:
        for _ in range(50):
            sock = socket.create_connection(broker.address)
            assert closed_by_peer(sock, 5)
            sock.close()
        log = wait_for_log(broker, "max_connections (1) reached", 10)
        assert 1 <= log.count("max_connections (1) reached") <= 10
    finally:
        first.disconnect()
