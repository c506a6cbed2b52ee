"""Password checks do not stop the broker (issue 2 P1: bcrypt ran on the event loop, so every
failed login stopped every other client for a quarter of a second).

Spec: issue 2 "Listeners and access" (a password file with salted hashes, bcrypt); mqtt.md
item 22 (CONNACK return codes: 4 bad user name or password in 3.1.1).
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from harness import BrokerProcess
from relaymq.auth.passwords import PasswordFile

from .clients import paho_client, unique

pytestmark = pytest.mark.interop

#: bcrypt cost 14: about a second per check here, so a blocked loop cannot go unnoticed.
SLOW_COST = 14


def _connect_packet(client_id: bytes, user: bytes, password: bytes) -> bytes:
    body = (b"\x00\x04MQTT\x04\xc2\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
            + len(user).to_bytes(2, "big") + user + len(password).to_bytes(2, "big") + password)
    return bytes([0x10, len(body)]) + body


@pytest.fixture
def slow_password_broker(broker_factory, tmp_path: Path) -> BrokerProcess:
    passwords = PasswordFile()
    passwords.set("alice", "right", cost=SLOW_COST)
    passwords.save(str(tmp_path / "passwords"))
    return broker_factory(store="memory", config={"access": {"password_file": str(tmp_path / "passwords")}})


def test_other_clients_are_served_while_a_wrong_password_is_checked(slow_password_broker) -> None:
    """While a wrong-password CONNECT is being checked (a second of bcrypt), another client's
    QoS 1 publish round trip completes; the CONNECT is then refused with return code 4."""
    broker = slow_password_broker
    topic = unique("auth/rt")
    other = paho_client(broker, "v311")
    other.subscribe(topic, 1)
    attacker = socket.create_connection(broker.address, timeout=30)
    refused_at: list[float] = []

    def read_connack() -> None:
        reply = attacker.recv(4)
        refused_at.append(time.monotonic())
        refused_at.append(reply[3] if len(reply) == 4 else -1)

    reader = threading.Thread(target=read_connack, daemon=True)
    try:
        attacker.sendall(_connect_packet(b"guesser", b"alice", b"wrong"))
        reader.start()
        time.sleep(0.1)  # the broker has the CONNECT and is checking it
        other.publish(topic, b"still served", 1)
        other.inbox.wait_for(1)
        round_trip_done = time.monotonic()
        reader.join(30)
        assert refused_at, "no CONNACK for the wrong password"
        connack_at, code = refused_at
        assert code == 4
        assert round_trip_done < connack_at, "the round trip waited for the password check"
    finally:
        attacker.close()
        other.disconnect()


def test_right_password_connects(slow_password_broker) -> None:
    """The right password, checked off the loop, connects (and the wrong one did not above)."""
    client = paho_client(slow_password_broker, "v5", unique("alice"), username="alice", password="right")
    client.disconnect()
