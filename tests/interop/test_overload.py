"""Overload through real clients (issue 14, "Nothing acknowledged is ever lost"): a QoS 1
publisher much faster than its subscriber.

With the default configuration a PUBACK means the message is safe: when the subscriber's queue
is full ([limits] max_queued_messages for a clean session, max_stored_messages for a persistent
one) the broker holds the publisher back instead of dropping what it acknowledged, and its
memory stays bounded while it does. Dropping is an explicit opt-in per listener
(``overflow = "drop-new" | "drop-oldest"``), counted in $SYS. docs/configuration.md ([limits],
[[listener]] overflow) and docs/architecture.md ("What keeps memory bounded") describe it.

The subscriber is paho whose network thread is stopped inside ``on_message`` (a gate), so it
reads nothing more from its socket until the gate opens: a client that stops reading.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import paho.mqtt.client as mqtt
import pytest

from harness import BrokerProcess

from .clients import PahoClient, Received, paho_client, unique
from .test_memory_bounds import rss_mb

pytestmark = pytest.mark.interop

PAYLOAD = 64  # bytes, as in the measurement
#: The broker's resident set may grow by at most this much (MB) over what it used before the
#: flood, while the subscriber is stuck. What it legitimately holds is about a thousand 64-byte
#: messages (the queue) and the publisher's window; before the fix a stuck clean subscriber
#: cost nothing either, because everything past 1,000 was dropped: this bound is about the
#: new behaviour holding publishers, not queueing their messages somewhere else.
RSS_GROWTH_MB = 16


def payload(i: int) -> bytes:
    return f"{i:08d}".encode().ljust(PAYLOAD, b".")


class Gate:
    """Stops a paho client's network thread in ``on_message`` while closed: from then on the
    client reads nothing from its socket and acknowledges nothing."""

    def __init__(self, client: PahoClient, close_after: int = 0) -> None:
        self.opened = threading.Event()
        self.close_after = close_after
        self.client = client
        self.inbox = client.inbox
        client.client.on_message = self._on_message

    def _on_message(self, client, userdata, message: mqtt.MQTTMessage) -> None:  # noqa: ANN001
        self.inbox.add(Received(message.topic, bytes(message.payload), message.qos, bool(message.retain)))
        if len(self.inbox.messages) > self.close_after:
            self.opened.wait(120)  # the test opens it; the bound only frees a failed run

    def open(self) -> None:
        self.opened.set()


class Acks:
    """PUBACKs a paho publisher received (paho's on_publish, on its network thread)."""

    def __init__(self, client: PahoClient) -> None:
        self.count = 0
        self._lock = threading.Lock()
        client.client.on_publish = self._on_publish

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:  # noqa: ANN001
        with self._lock:
            self.count += 1


def wait_until_quiet(value: Callable[[], int], quiet: float, limit: float) -> int:
    """Poll ``value()`` until it has not changed for ``quiet`` seconds (or ``limit`` passed)."""
    deadline = time.monotonic() + limit
    last, since = value(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = value()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    return value()


def wait_for(condition: Callable[[], bool], limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit:g} s: {what}")
        time.sleep(0.05)


def flood(broker: BrokerProcess, topic: str, count: int, sub_level: str, *, clean: bool = True,
          close_after: int = 0) -> tuple[PahoClient, Gate, PahoClient, Acks, float]:
    """A gated QoS 1 subscriber on ``topic`` and a 3.1.1 publisher that has handed all
    ``count`` QoS 1 messages to paho (paho sends 20 at a time, as its window allows)."""
    sub = PahoClient(broker, sub_level, unique("slow"), clean=clean)
    gate = Gate(sub, close_after)
    sub.connect()
    assert sub.subscribe(topic, 1) == [1]
    pub = paho_client(broker, "v311", unique("fast"))
    acks = Acks(pub)
    before = rss_mb(broker.proc.pid)
    for i in range(count):
        pub.client.publish(topic, payload(i), 1)
    return sub, gate, pub, acks, before


def test_default_stuck_clean_subscriber_holds_the_publisher_back_and_loses_nothing(broker_factory) -> None:
    """Issue 14: with the default configuration, 20,000 QoS 1 messages to a clean-session
    subscriber that stops reading after 500: the publisher is held back (it has far fewer
    PUBACKs than messages sent while the subscriber is stuck), the broker's RSS grows by less
    than RSS_GROWTH_MB meanwhile, and once the subscriber reads again every acknowledged
    message is delivered, in order: delivered == acknowledged == sent. Before: the publisher got
    every PUBACK and the subscriber ~1,500 messages (max_queued_messages = 1000, the rest
    dropped with a WARNING). MQTT 3.1.1 4.6 (order), docs/configuration.md [limits]."""
    broker = broker_factory(kind="relaymq")
    count = 20_000
    topic = unique("overload")
    sub, gate, pub, acks, before = flood(broker, topic, count, "v311", close_after=500)
    try:
        stuck_acks = wait_until_quiet(lambda: acks.count, quiet=1.5, limit=30)
        stuck_rss = [rss_mb(broker.proc.pid)]
        # held back: the queue (1,000) + the subscriber's window (20) + what it read before
        # it stopped (500), and nothing like the 20,000 it was sent
        assert stuck_acks < 2_000, f"publisher got {stuck_acks} PUBACKs while the subscriber was stuck"
        delivered_while_stuck = len(sub.inbox.messages)
        assert delivered_while_stuck <= 600
        assert wait_until_quiet(lambda: acks.count, quiet=0.5, limit=5) == stuck_acks  # still held
        stuck_rss.append(rss_mb(broker.proc.pid))
        assert max(stuck_rss) - before < RSS_GROWTH_MB, (
            f"broker RSS {max(stuck_rss):.1f} MB, {before:.1f} MB before the flood")
        gate.open()
        got = sub.inbox.wait_for(count, timeout=60)
        wait_for(lambda: acks.count == count, 30, f"{count} PUBACKs (have {acks.count})")
    finally:
        gate.open()
        pub.disconnect()
        sub.disconnect()
    assert [m.payload for m in got] == [payload(i) for i in range(count)]
    assert len(got) == acks.count == count
    print(f"stuck: {stuck_acks} PUBACKs for {count} sent, {delivered_while_stuck} delivered; "
          f"RSS {before:.1f} -> {max(stuck_rss):.1f} MB")


def test_persistent_session_past_max_stored_messages_holds_the_publisher_back(broker_factory) -> None:
    """Issue 14: a persistent MQTT 5 session whose backlog reaches max_stored_messages (2,000
    here; the first 1,000 in memory, the rest in the store only) holds the publisher back;
    the subscriber is not disconnected (before: dropped and DISCONNECT 0x97 quota exceeded),
    and receives every acknowledged message in order once it reads again.
    docs/configuration.md [limits] max_stored_messages; MQTT 3.1.1 4.6."""
    broker = broker_factory(kind="relaymq", config={"limits": {"max_stored_messages": 2_000}})
    count = 6_000
    topic = unique("stored")
    sub, gate, pub, acks, _ = flood(broker, topic, count, "v5", clean=False)
    try:
        stuck_acks = wait_until_quiet(lambda: acks.count, quiet=1.5, limit=30)
        assert stuck_acks < 2_100, f"publisher got {stuck_acks} PUBACKs while the subscriber was stuck"
        assert not sub.disconnected.is_set()
        gate.open()
        got = sub.inbox.wait_for(count, timeout=60)
        wait_for(lambda: acks.count == count, 30, f"{count} PUBACKs (have {acks.count})")
        assert not sub.disconnected.is_set(), sub.disconnect_reason
    finally:
        gate.open()
        pub.disconnect()
        sub.disconnect()
    assert [m.payload for m in got] == [payload(i) for i in range(count)]


def _sys_value(broker: BrokerProcess, name: str) -> Callable[[], int]:
    """The latest retained value of $SYS/broker/<name>, read by a subscriber left connected."""
    reader = paho_client(broker, "v311", unique("sys"))
    reader.subscribe(f"$SYS/broker/{name}", 0)

    def value() -> int:
        messages = [m for m in reader.inbox.messages if m.topic == f"$SYS/broker/{name}"]
        return int(messages[-1].payload) if messages else -1

    value.reader = reader  # type: ignore[attr-defined]
    return value


def test_opt_in_drop_new_drops_and_counts_in_sys(broker_factory) -> None:
    """Issue 14: dropping stays available as an explicit opt-in on the subscriber's listener,
    ``overflow = "drop-new"``: the publisher is not held back (all 3,000 PUBACKs while the
    subscriber is stuck), what did not fit is dropped, and $SYS/broker/publish/messages/
    dropped/overflow counts exactly what the subscriber never got."""
    config = {"listener": [{"name": "default", "host": "127.0.0.1", "overflow": "drop-new"}],
              "broker": {"sys_interval": 1}}
    broker = broker_factory(kind="relaymq", config=config)
    count = 3_000
    dropped = _sys_value(broker, "publish/messages/dropped/overflow")
    topic = unique("dropnew")
    sub, gate, pub, acks, _ = flood(broker, topic, count, "v311")
    try:
        wait_for(lambda: acks.count == count, 30, f"{count} PUBACKs (have {acks.count})")
        gate.open()
        got = sub.inbox.wait_while_progressing(lambda m: len(m) >= count, idle=2, limit=30)
        assert 1_000 <= len(got) < count
        wait_for(lambda: dropped() == count - len(got), 15,
                 f"$SYS dropped/overflow == {count - len(got)} (is {dropped()})")
    finally:
        gate.open()
        pub.disconnect()
        sub.disconnect()
        dropped.reader.disconnect()  # type: ignore[attr-defined]
    payloads = [m.payload for m in got]
    assert payloads == sorted(payloads)  # what arrives keeps its order

