"""Large payloads through a real broker process and paho clients: a PUBLISH whose payload is
at least ``WRITTEN_APART_AT`` is written as its encoded head and then the payload itself
(broker/connection.py), which the server's link hands to the transport without copying it
(server/link.py). Every subscriber must still get the exact bytes, at every protocol level,
over TCP, TLS and WebSocket, and an MQTT 5 client's Maximum Packet Size still counts the payload
(MQTT 5 3.1.2.25). Seed 000 l.764-898: a PUBLISH is one fixed header, variable header and
payload, whatever the writes that carry it."""

from __future__ import annotations

import os

import pytest

from harness import BrokerProcess, free_port
from relaymq.broker.connection import WRITTEN_APART_AT

from .certs import make_certificates
from .clients import PahoClient, paho_client, unique

pytestmark = pytest.mark.interop


@pytest.fixture
def broker_ws(broker_factory, tmp_path) -> BrokerProcess:
    """TCP, WebSocket and TLS listeners."""
    certs = make_certificates(tmp_path / "certs")
    ws_port, tls_port = free_port(), free_port()
    broker = broker_factory(config={
        "listener": [{"name": "default", "host": "127.0.0.1"},
                     {"name": "ws", "host": "127.0.0.1", "port": ws_port, "protocol": "websocket"},
                     {"name": "tls", "host": "127.0.0.1", "port": tls_port, "tls_cert": str(certs.server_cert),
                      "tls_key": str(certs.server_key)}],
    })
    broker.ws_port, broker.tls_port, broker.ca = ws_port, tls_port, str(certs.ca)  # type: ignore[attr-defined]
    return broker


def test_large_payloads_arrive_whole_at_every_level_and_transport(broker_ws: BrokerProcess) -> None:
    topic = unique("large")
    sizes = [WRITTEN_APART_AT - 1, WRITTEN_APART_AT, 300_000, 1_048_576 + 7, 100]
    payloads = [os.urandom(size) for size in sizes]
    subscribers = [PahoClient(broker_ws, "v311").connect(), PahoClient(broker_ws, "v5").connect(),
                   PahoClient(broker_ws, "v5", port=broker_ws.ws_port, transport="websockets").connect(),
                   PahoClient(broker_ws, "v311", port=broker_ws.tls_port, tls={"ca_certs": broker_ws.ca}).connect()]
    pub = paho_client(broker_ws, "v5")
    try:
        for sub, qos in zip(subscribers, (1, 2, 1, 1), strict=True):
            sub.subscribe(topic, qos)
        for n, payload in enumerate(payloads):
            pub.publish(topic, payload, (0, 1, 2)[n % 3])
        for sub in subscribers:
            got = sub.inbox.wait_for(len(payloads), timeout=30)
            seen = [(len(m.payload), m.qos, payloads.index(m.payload) if m.payload in payloads else None)
                    for m in got]
            # each exactly once and whole; not in the order sent: paho hands a QoS 2 message to
            # the application at its PUBREL, so a QoS 0 or 1 one sent after it may come first
            # (MQTT 5 4.6 orders messages of one QoS only; a full run saw it)
            assert sorted(m.payload for m in got) == sorted(payloads), f"{sub.client_id}: (size, QoS, which sent) {seen}"
    finally:
        pub.disconnect()
        for sub in subscribers:
            sub.disconnect()


def test_maximum_packet_size_counts_a_payload_written_apart(broker_ws: BrokerProcess) -> None:
    """MQTT 5 3.1.2.25: a PUBLISH larger than the client's Maximum Packet Size is not sent,
    also when its payload would have been written apart from its head; smaller ones still are."""
    topic = unique("mps-large")
    sub = PahoClient(broker_ws, "v5", properties={"MaximumPacketSize": WRITTEN_APART_AT + 100}).connect()
    pub = paho_client(broker_ws, "v5")
    try:
        sub.subscribe(topic, 1)
        fits, too_large = b"a" * WRITTEN_APART_AT, b"b" * (WRITTEN_APART_AT + 100)
        for payload in (fits, too_large, b"c" * 10):
            pub.publish(topic, payload, 1)
        sub.inbox.wait_for(2, timeout=30)
        assert [m.payload[:1] + str(len(m.payload)).encode() for m in sub.inbox.wait_quiet(0.5)] == [
            b"a%d" % WRITTEN_APART_AT, b"c10"]
    finally:
        pub.disconnect()
        sub.disconnect()
