"""Limits through a real broker process, paho and raw sockets (issue 2 "Limits": max packet
size, max topic length, each configurable with a documented behaviour when reached; "Sessions":
maximum packet size, keep alive; "Durable store": PUBACK/PUBREC leave only after the message is
durable). The documented behaviour is in docs/configuration.md, [broker] and [limits]."""

from __future__ import annotations

import socket
import time

import pytest

from harness import BrokerProcess

from .clients import PahoClient, paho_client, unique
from .raw import packet, string

pytestmark = pytest.mark.interop


def _raw_connect(broker: BrokerProcess, level: int, client_id: str, keep_alive: int = 60,
                 clean: bool = True, properties: bytes = b"") -> tuple[socket.socket, bytes]:
    """Connect on a raw socket (MQTT 5: with the encoded CONNECT ``properties``); returns the
    socket and the CONNACK's bytes."""
    sock = socket.create_connection(broker.address, timeout=15)
    props = bytes([len(properties)]) + properties if level == 5 else b""
    flags = b"\x02" if clean else b"\x00"
    sock.sendall(packet(0x10, string("MQTT") + bytes([level]) + flags + keep_alive.to_bytes(2, "big")
                         + props + string(client_id)))
    return sock, _read_packet(sock)


def _read_packet(sock: socket.socket) -> bytes:
    """One whole packet, or b"" when the broker closed the connection."""
    head = sock.recv(2)
    if len(head) < 2:
        return head
    length, shift, pos, data = 0, 0, 1, bytearray(head)
    while True:
        byte = data[pos]
        length += (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        pos += 1
        if pos >= len(data):
            data += sock.recv(1)
    while len(data) < pos + 1 + length:
        chunk = sock.recv(pos + 1 + length - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _closed(sock: socket.socket, within: float = 10.0) -> bytes:
    """Read until the broker closes the connection; returns what it sent meanwhile."""
    sock.settimeout(within)
    received = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return received
        received += chunk


@pytest.fixture
def limited(broker_factory) -> BrokerProcess:
    return broker_factory(config={"limits": {"max_packet_size": 1024, "max_topic_length": 16},
                                  "broker": {"max_keepalive": 2, "sys_interval": 0}})


def test_max_packet_size_is_announced_and_a_larger_packet_closes_the_connection(limited: BrokerProcess) -> None:
    """docs/configuration.md max_packet_size: announced to MQTT 5 clients (CONNACK Maximum
    Packet Size, MQTT 5 3.2.2.3.6); a larger packet closes the connection, MQTT 5 with
    DISCONNECT 0x95 Packet too large (3.1.2.24 the other way round, 4.13)."""
    client = PahoClient(limited, "v5").connect()
    try:
        assert client.connack_properties.MaximumPacketSize == 1024
    finally:
        client.disconnect()
    big = packet(0x30, string("t") + b"\x00" + b"x" * 2000)  # QoS 0, v5 property length 0
    v5, _ = _raw_connect(limited, 5, unique("big5"))
    v5.sendall(big)
    assert _closed(v5)[:3] == b"\xe0\x01\x95"  # DISCONNECT, reason 0x95
    v4, _ = _raw_connect(limited, 4, unique("big4"))
    v4.sendall(packet(0x30, string("t") + b"x" * 2000))
    assert _closed(v4) == b""  # 3.1.1: closed without a word


def test_client_maximum_packet_size_is_respected(limited: BrokerProcess) -> None:
    """MQTT 5 3.1.2.25 (client's Maximum Packet Size): a PUBLISH larger than what the client
    accepts is not sent to it (as if delivered); later, smaller ones still arrive."""
    topic = unique("mps")
    sub = PahoClient(limited, "v5", properties={"MaximumPacketSize": 200}).connect()
    pub = paho_client(limited, "v5")
    try:
        sub.subscribe(topic, 1)
        for size in (50, 500, 60):
            pub.publish(topic, b"x" * size, 1)
        sub.inbox.wait_for(2)
        assert [len(m.payload) for m in sub.inbox.wait_quiet(0.5)] == [50, 60]
    finally:
        pub.disconnect()
        sub.disconnect()


def test_max_topic_length(limited: BrokerProcess) -> None:
    """docs/configuration.md max_topic_length: a longer topic name closes an MQTT 5 connection
    with DISCONNECT 0x90 (Topic Name invalid); a longer filter gets SUBACK 0x8F (Topic Filter
    invalid) in MQTT 5, and closes a 3.1.1 connection (no failure code for it there). The MQTT 5
    SUBACK says why in a Reason String (issue 18), unless the client asked for no problem
    information (MQTT 5 3.1.2.11.7: Request Problem Information 0)."""
    quiet, _ = _raw_connect(limited, 5, unique("q5"), properties=b"\x17\x00")
    quiet.sendall(packet(0x82, b"\x00\x01\x00" + string("a/" + "x" * 20) + b"\x01"))
    assert _read_packet(quiet) == b"\x90\x04\x00\x01\x00\x8f"
    quiet.close()
    v5, _ = _raw_connect(limited, 5, unique("t5"))
    v5.sendall(packet(0x82, b"\x00\x01\x00" + string("a/" + "x" * 20) + b"\x01"))
    suback = _read_packet(v5)
    assert suback[0] == 0x90 and suback[2:4] == b"\x00\x01" and suback[-1] == 0x8F
    assert suback[5] == 0x1F and b"too_long" in suback  # Reason String
    v5.sendall(packet(0x30, string("b/" + "y" * 20) + b"\x00hello"))
    assert _closed(v5)[:3] == b"\xe0\x01\x90"
    v4, _ = _raw_connect(limited, 4, unique("t4"))
    v4.sendall(packet(0x82, b"\x00\x01" + string("a/" + "x" * 20) + b"\x01"))
    assert _closed(v4) == b""
    ok, _ = _raw_connect(limited, 4, unique("ok"))
    ok.sendall(packet(0x82, b"\x00\x02" + string("a/" + "x" * 14) + b"\x01"))  # exactly 16
    assert _read_packet(ok) == b"\x90\x03\x00\x02\x01"
    ok.close()


def test_server_keep_alive(limited: BrokerProcess) -> None:
    """MQTT 5 3.2.2.3.14 (Server Keep Alive) with [broker] max_keepalive: a client asking for
    more is told the broker's value in CONNACK and held to it: silent for 1.5 x that, it is
    disconnected with 0x8D (keep alive timeout; mqtt.md item 21, seed 000 l.1023)."""
    client = PahoClient(limited, "v5", keepalive=60).connect()
    try:
        assert client.connack_properties.ServerKeepAlive == 2
    finally:
        client.disconnect()
    sock, connack = _raw_connect(limited, 5, unique("ka"), keep_alive=60)
    assert b"\x13\x00\x02" in connack  # property 0x13 Server Keep Alive = 2
    started = time.monotonic()
    assert _closed(sock, 15)[:3] == b"\xe0\x01\x8d"
    assert time.monotonic() - started >= 2.5  # 1.5 x 2 s (the broker checks every 0.5 s)


def test_puback_waits_for_the_commit(broker_factory) -> None:
    """Spec README decision 4 and mqtt.md item 6 (QoS 1/2 stored before they are acknowledged,
    seed 000 l.427/439/743): with commit_delay_ms = 1500 the commit, and so the PUBACK and the
    PUBREC, come no sooner than the delay. The QoS 1 message goes to a persistent session (a
    message only clean sessions receive stores nothing, and is acknowledged at once)."""
    broker = broker_factory(config={"broker": {"commit_delay_ms": 1500}})
    sub, _ = _raw_connect(broker, 4, unique("slowsub"), clean=False)
    sub.sendall(packet(0x82, b"\x00\x01" + string("durable/t") + b"\x01"))
    assert _read_packet(sub) == b"\x90\x03\x00\x01\x01"  # SUBACK, after the commit too
    sock, _ = _raw_connect(broker, 4, unique("slowack"), clean=False)
    started = time.monotonic()
    sock.sendall(packet(0x32, string("nobody/t") + b"\x00\x06x"))  # stores nothing
    assert _read_packet(sock) == b"\x40\x02\x00\x06"
    assert time.monotonic() - started < 1.0, "a PUBACK that promises nothing waited for the commit"
    for qos, expected in ((1, b"\x40\x02\x00\x07"), (2, b"\x50\x02\x00\x08")):
        started = time.monotonic()
        sock.sendall(packet(0x30 | qos << 1, string("durable/t") + (6 + qos).to_bytes(2, "big") + b"x"))
        assert _read_packet(sock) == expected
        assert time.monotonic() - started >= 1.4, f"QoS {qos} acknowledged before the commit"
    sock.sendall(packet(0x62, b"\x00\x08"))  # PUBREL
    assert _read_packet(sock) == b"\x70\x02\x00\x08"
    sock.close()
    sub.close()


def test_puback_goes_once_every_stored_copy_is_acknowledged(broker_factory) -> None:
    """Spec README decision 4, as relaymq keeps it (src/relaymq/broker/ack_watch.py): a QoS 1
    PUBACK promises the message is not lost. When routing stored it only for persistent
    sessions, and each of their subscribers has acknowledged its copy, nothing is left to lose:
    the PUBACK goes then, before the commit (commit_delay_ms = 1500 here). A retained message
    is also stored for later subscribers, so its PUBACK still waits for the commit."""
    broker = broker_factory(config={"broker": {"commit_delay_ms": 1500}})
    sub, _ = _raw_connect(broker, 4, unique("acksub"), clean=False)
    sub.sendall(packet(0x82, b"\x00\x01" + string("early/t") + b"\x01"))
    assert _read_packet(sub) == b"\x90\x03\x00\x01\x01"
    pub, _ = _raw_connect(broker, 4, unique("earlypub"), clean=False)
    for retain, packet_id, soonest, latest in ((0, 7, 0.0, 1.0), (1, 8, 1.4, 30.0)):
        started = time.monotonic()
        pub.sendall(packet(0x32 | retain, string("early/t") + packet_id.to_bytes(2, "big") + b"x"))
        publish = _read_packet(sub)  # the subscriber's copy, acknowledged at once
        assert publish[0] & 0xF6 == 0x32, publish
        sub.sendall(packet(0x40, publish[-3:-1]))  # PUBACK with the copy's packet id
        assert _read_packet(pub) == b"\x40\x02" + packet_id.to_bytes(2, "big")
        waited = time.monotonic() - started
        assert soonest <= waited < latest, f"retain={retain}: PUBACK after {waited:.2f}s"
    pub.close()
    sub.close()
