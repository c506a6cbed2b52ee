"""Listener control through a real broker process (mqtt.md item 5, seed 000 l.415): a
publication of ``OFF``/``ON`` on ``$SYS/SCADA/MQIsdpListener/<port>`` stops and starts that
listener; only an administrator (authenticated with the password file) may publish it, and
nobody may publish anything else under ``$SYS/``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness import BrokerProcess, free_port, port_accepts
from relaymq.auth.passwords import PasswordFile

from .clients import PahoClient, unique

pytestmark = pytest.mark.interop

CONTROL = "$SYS/SCADA/MQIsdpListener/"


def _until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture
def two_listeners(broker_factory, tmp_path: Path) -> tuple[BrokerProcess, int]:
    passwords = PasswordFile()
    passwords.set("admin", "admin-secret", cost=4)
    passwords.set("bob", "bob-secret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    second = free_port()
    broker = broker_factory(store="memory", config={
        "access": {"password_file": str(tmp_path / "passwords"), "administrators": ["admin"]},
        "listener": [{"name": "default", "host": "127.0.0.1"},
                     {"name": "second", "host": "127.0.0.1", "port": second}],
    })
    return broker, second


def test_administrator_stops_and_starts_a_listener(two_listeners) -> None:
    """OFF closes the second listener (new connections are refused, its clients are
    disconnected); ON opens it again on the same port, repeatedly; the first listener, where
    the administrator is connected, is untouched."""
    broker, second = two_listeners
    admin = PahoClient(broker, "v5", unique("admin"), username="admin", password="admin-secret").connect()
    on_second = PahoClient(broker, "v311", unique("s2"), port=second).connect()
    try:
        for _ in range(2):  # OFF -> ON works more than once
            assert admin.publish(f"{CONTROL}{second}", b"OFF", 1) < 0x80
            assert _until(lambda: not port_accepts("127.0.0.1", second)), "the second listener still accepts"
            assert on_second.disconnected.wait(10), "its client was not disconnected"
            on_second.client.loop_stop()
            assert admin.publish(f"{CONTROL}{second}", b"ON", 1) < 0x80
            assert _until(lambda: port_accepts("127.0.0.1", second)), "the second listener did not start"
            on_second = PahoClient(broker, "v311", unique("s2"), port=second).connect()
        assert port_accepts(*broker.address)
    finally:
        on_second.disconnect()
        admin.disconnect()


def test_non_administrators_cannot_control_listeners_or_write_sys(two_listeners) -> None:
    """A user who is not an administrator, and an anonymous client, get PUBACK 0x87 for the
    control topic and the listener keeps running; a retained publication to $SYS/broker/...
    does not replace the broker's own statistic."""
    broker, second = two_listeners
    bob = PahoClient(broker, "v5", unique("bob"), username="bob", password="bob-secret").connect()
    anonymous = PahoClient(broker, "v5", unique("anon")).connect()
    try:
        assert bob.publish(f"{CONTROL}{second}", b"OFF", 1) == 0x87
        assert anonymous.publish(f"{CONTROL}all", b"OFF", 1) == 0x87
        assert bob.publish("$SYS/broker/version", b"fake", 1, retain=True) == 0x87
        time.sleep(0.5)  # the control would have been applied by now
        assert port_accepts("127.0.0.1", second)
        reader = PahoClient(broker, "v311", unique("sys")).connect()
        try:
            reader.subscribe("$SYS/broker/version", 0)
            [got] = reader.inbox.wait_for(1)
            assert got.payload.startswith(b"relaymq ") and got.retain
        finally:
            reader.disconnect()
    finally:
        bob.disconnect()
        anonymous.disconnect()


def test_a_wrong_password_cannot_become_an_administrator(two_listeners) -> None:
    """The administrator's name with a wrong password is refused at CONNECT (CONNACK bad user
    name or password), so it never reaches listener control."""
    broker, _ = two_listeners
    assert PahoClient(broker, "v5", unique("fake"), username="admin", password="guess").refused() \
        == "Bad user name or password"
