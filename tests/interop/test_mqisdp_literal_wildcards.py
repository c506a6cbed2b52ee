"""MQIsdp v3 clients get the seed's wildcard rules; MQTT 3.1.1/5 clients keep OASIS's.

Spec: README decision 1 (a v3 client gets the seed's behaviour where the seed and 3.1.1
differ) and decision 2; seed 003 l.3045-3100 ("When wild cards are not wild": ``USA#`` and
``USA+`` are valid topics in which ``#`` and ``+`` have no special meaning, and a topic with
them mixed into a level "can be both published and subscribed to"); issue 21, first item.

paho-mqtt and the mosquitto clients refuse ``USA#`` in a topic or a filter before it reaches
any broker, so the v3 clients here write their packets on raw sockets; the 3.1.1 subscriber to
a whole-level ``#`` is a paho client.
"""

from __future__ import annotations

import socket

import pytest

from harness import BrokerProcess

from .clients import WAIT, paho_client, unique
from .raw import closed_by_peer, packet, string

pytestmark = pytest.mark.interop


def raw_client(broker: BrokerProcess, client_id: str, level: int = 3) -> socket.socket:
    """A connected client on a raw socket: MQIsdp v3 (level 3) or MQTT 3.1.1 (level 4), clean
    session, keep-alive 60 s."""
    name = "MQIsdp" if level == 3 else "MQTT"
    sock = socket.create_connection((broker.host, broker.port), timeout=WAIT)
    sock.sendall(packet(0x10, string(name) + bytes([level, 0x02]) + (60).to_bytes(2, "big") + string(client_id)))
    connack = read_packet(sock)
    assert connack == (0x20, b"\x00\x00"), connack
    return sock


def read_packet(sock: socket.socket) -> tuple[int, bytes]:
    """The next packet: (first byte, body)."""
    first = _read(sock, 1)[0]
    length, shift = 0, 0
    while True:
        digit = _read(sock, 1)[0]
        length += (digit & 0x7F) << shift
        shift += 7
        if not digit & 0x80:
            return first, _read(sock, length)


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def raw_subscribe(sock: socket.socket, topic_filter: str, packet_id: int) -> int:
    """SUBSCRIBE at QoS 0; returns the SUBACK's granted QoS."""
    sock.sendall(packet(0x82, packet_id.to_bytes(2, "big") + string(topic_filter) + b"\x00"))
    first, body = read_packet(sock)
    assert first == 0x90 and body[:2] == packet_id.to_bytes(2, "big"), (first, body)
    return body[2]


def publications(sock: socket.socket, count: int) -> list[str]:
    """The topics of the next ``count`` QoS 0 PUBLISH packets."""
    topics = []
    for _ in range(count):
        first, body = read_packet(sock)
        assert first & 0xF0 == 0x30, first
        size = int.from_bytes(body[:2], "big")
        topics.append(body[2:2 + size].decode())
    return topics


def raw_publish_qos1(sock: socket.socket, topic: str, payload: bytes, packet_id: int) -> None:
    """PUBLISH at QoS 1 and wait for its PUBACK."""
    sock.sendall(packet(0x32, string(topic) + packet_id.to_bytes(2, "big") + payload))
    assert sock.recv(4) == b"\x40\x02" + packet_id.to_bytes(2, "big")


def test_item_decision1_v3_client_publishes_and_subscribes_literal_wildcard_levels(shared_broker: BrokerProcess) -> None:
    """A v3 client may subscribe to ``USA#`` and ``a/b+/c`` and publish to them; those levels
    are literal: ``USA#`` matches only ``USA#`` (not ``USA`` nor ``USA/x``), while a whole-level
    ``+`` or ``#`` in the same client's filters is still a wildcard."""
    base = unique("lw")
    sub = raw_client(shared_broker, unique("v3sub"))
    sock = raw_client(shared_broker, unique("v3pub"))
    try:
        assert raw_subscribe(sub, f"{base}/USA#", 1) == 0
        assert raw_subscribe(sub, f"{base}/b+/c", 2) == 0
        assert raw_subscribe(sub, f"{base}/w/+", 3) == 0
        assert raw_subscribe(sub, f"{base}/end", 4) == 0
        for n, topic in enumerate([f"{base}/USA", f"{base}/USA/x", f"{base}/USA#", f"{base}/bb/c",
                                   f"{base}/b+/c", f"{base}/w/x#", f"{base}/end"], start=1):
            raw_publish_qos1(sock, topic, topic.encode(), n)
        # in order, and nothing between: USA and USA/x matched no literal USA# filter
        assert publications(sub, 4) == [f"{base}/USA#", f"{base}/b+/c", f"{base}/w/x#", f"{base}/end"]
        # a whole-level wildcard is still refused in a published topic: the connection closes
        sock.sendall(packet(0x30, string(f"{base}/USA/#") + b"x"))
        assert closed_by_peer(sock, WAIT)
    finally:
        sock.close()
        sub.close()


def test_item_decision1_mqtt311_keeps_oasis_rules_for_mixed_wildcards(shared_broker: BrokerProcess) -> None:
    """A 3.1.1 client subscribing to ``USA#`` breaks MQTT 3.1.1 4.7.1-2 and is disconnected,
    as before; a 3.1.1 subscriber to ``#`` below a base still receives the v3 client's
    ``USA#`` publication (one matching engine, decision 2)."""
    base = unique("lw311")
    catch_all = paho_client(shared_broker, "v311")
    sock = raw_client(shared_broker, unique("v3pub"))
    try:
        assert catch_all.subscribe(f"{base}/#", 1) == [1]
        raw_publish_qos1(sock, f"{base}/USA#", b"literal", 1)
        [got] = catch_all.inbox.wait_for(1)
        assert (got.topic, got.payload) == (f"{base}/USA#", b"literal")
    finally:
        sock.close()
        catch_all.disconnect()
    strict = raw_client(shared_broker, unique("v311"), level=4)
    try:
        strict.sendall(packet(0x82, (1).to_bytes(2, "big") + string(f"{base}/USA#") + b"\x00"))
        assert closed_by_peer(strict, WAIT), "a 3.1.1 client's USA# filter must close its connection"
    finally:
        strict.close()
