"""Interoperability with the mosquitto_pub / mosquitto_sub command-line clients (-V mqttv31,
mqttv311, mqttv5): what an operator would type against the broker.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness import BrokerProcess

from .clients import LEVELS, MOSQUITTO_PUB, MOSQUITTO_SUB, MosquittoSub, mosquitto_pub, unique

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(not (Path(MOSQUITTO_SUB).exists() and Path(MOSQUITTO_PUB).exists()),
                       reason="mosquitto_pub/mosquitto_sub not installed (Debian: mosquitto-clients)"),
]


@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize("level", LEVELS)
def test_publish_subscribe_round_trip(shared_broker: BrokerProcess, level: str, qos: int) -> None:
    """mosquitto_pub at QoS n reaches mosquitto_sub subscribed at QoS n, at QoS n.

    Spec: mqtt.md items 7-9 (QoS 0/1/2 flows, seed 000 l.699-741), item 12 (delivered QoS =
    min(published, granted), l.1767-1769).
    """
    topic = unique("cli/rt")
    sub = MosquittoSub(shared_broker, level, topic, qos).start()
    try:
        mosquitto_pub(shared_broker, level, topic, b"hello from the shell", qos)
        [got] = sub.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos, got.retain) == (topic, b"hello from the shell", qos, False)
    finally:
        sub.stop()


@pytest.mark.parametrize("level", LEVELS)
def test_retained_then_cleared(shared_broker: BrokerProcess, level: str) -> None:
    """A retained message (QoS 2) reaches a later subscriber (QoS 1) with the retain flag at
    QoS 1; after an empty retained publish (-r -n) a new subscriber gets no retained message.

    Spec: mqtt.md item 31 (RETAIN=1 after SUBACK, seed 000 l.843; QoS = min(original,
    granted)); MQTT 3.1.1 [MQTT-3.3.1-10] (zero-byte retained message clears it). The "no
    retained message" check is ordered, not timed: a live message published after the SUBACK
    must be the first thing the subscriber prints.
    """
    topic = unique("cli/retain")
    mosquitto_pub(shared_broker, level, topic, b"state=on", 2, retain=True)
    late = MosquittoSub(shared_broker, level, topic, 1).start()
    try:
        [got] = late.inbox.wait_for(1)
        assert (got.payload, got.retain, got.qos) == (b"state=on", True, 1)
    finally:
        late.stop()

    mosquitto_pub(shared_broker, level, topic, b"", 1, retain=True)
    later = MosquittoSub(shared_broker, level, topic, 1).start()
    try:
        mosquitto_pub(shared_broker, level, topic, b"live", 1)
        first = later.inbox.wait_for(1)[0]
        assert (first.payload, first.retain) == (b"live", False), later.inbox.messages
    finally:
        later.stop()


@pytest.mark.parametrize("level", LEVELS)
def test_will_on_kill_but_not_on_disconnect(shared_broker: BrokerProcess, level: str) -> None:
    """SIGKILLed client (socket closed, no DISCONNECT): its will is published. A client that
    exits normally (-C 1: DISCONNECT after one message): its will is not.

    Spec: mqtt.md item 25 (will on I/O error, never after DISCONNECT, seed 000 l.970-972; at
    will QoS, l.1211; payload = will message bytes, l.1217).
    """
    will_topic = unique("cli/will")
    watcher = MosquittoSub(shared_broker, level, will_topic, 1).start()
    try:
        will = ["--will-topic", will_topic, "--will-qos", "1"]
        victim = MosquittoSub(shared_broker, level, unique("cli/idle"), 0,
                              extra=[*will, "--will-payload", "killed"]).start()
        victim.kill()
        [got] = watcher.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos) == (will_topic, b"killed", 1)

        own_topic = unique("cli/polite")
        polite = MosquittoSub(shared_broker, level, own_topic, 0,
                              extra=[*will, "--will-payload", "must not appear", "-C", "1"]).start()
        mosquitto_pub(shared_broker, level, own_topic, b"time to go", 0)
        assert polite.wait_exit() == 0, polite.output
        mosquitto_pub(shared_broker, level, will_topic, b"sentinel", 1)
        watcher.inbox.wait_for(2)
        received = watcher.inbox.wait_quiet(1.0)
        assert [m.payload for m in received] == [b"killed", b"sentinel"]
    finally:
        watcher.stop()


@pytest.mark.parametrize("level", LEVELS)
def test_persistent_session_survives_restart(broker: BrokerProcess, level: str) -> None:
    """mosquitto_sub -c subscribes and leaves; the broker restarts; a QoS 1 message published
    meanwhile is delivered when mosquitto_sub -c comes back with the same client id.

    Spec: mqtt.md item 26 (subscriptions survive DISCONNECT; QoS 1/2 kept until reconnect,
    seed 000 l.1227-1229), item 6 (stored before acknowledged, l.427/439/743).
    """
    topic = unique("cli/persist")
    client_id = unique(f"c{level}")
    first = MosquittoSub(broker, level, topic, 1, client_id=client_id, clean=False,
                         extra=["-E"]).start()  # -E: exit (with DISCONNECT) after the SUBACK
    assert first.wait_exit() == 0, first.output

    broker.restart()
    mosquitto_pub(broker, level, topic, b"queued across a restart", 1)

    again = MosquittoSub(broker, level, topic, 1, client_id=client_id, clean=False,
                         extra=["-C", "1"]).start()
    try:
        [got] = again.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos) == (topic, b"queued across a restart", 1)
    finally:
        again.stop()


def test_store_group_commit_statistics_reach_mosquitto_sub(tmp_path: Path) -> None:
    """Issue 2 ($SYS statistics) and issue 8: an operator with mosquitto_sub sees the SQLite
    store's group commit under $SYS/broker/store/: commits, statements written and statements
    coalesced, as decimal counts that grow once a persistent session stores a QoS 1 message."""
    config = {"broker": {"sys_interval": 1}, "http": {"port": 0}, "qmgr": {"channel_port": 0}}
    with BrokerProcess("relaymq", config=config, workdir=tmp_path) as broker:
        keeper = MosquittoSub(broker, "v311", "stored/t", 1, clean=False).start()
        keeper.stop()                         # offline: the next message is queued and stored
        mosquitto_pub(broker, "v311", "stored/t", b"kept", 1)
        names = ("commits", "statements/written", "statements/coalesced")
        sys_sub = MosquittoSub(broker, "v311", "$SYS/broker/store/#", 0).start()
        try:
            figures: dict[str, int] = {}
            deadline = time.monotonic() + 10
            # until every counter has arrived and the commit shows (the three are published one
            # after the other: stopping at the first two raced the third)
            while time.monotonic() < deadline and not (
                    set(names) <= set(figures)
                    and figures["commits"] >= 1 and figures["statements/written"] >= 2):
                for m in sys_sub.inbox.wait_for(len(sys_sub.inbox.messages) + 1):
                    name = m.topic.removeprefix("$SYS/broker/store/")
                    if name == "state":  # "ok", or "cannot write: ..." (issue 15 finding 9)
                        assert m.payload == b"ok"
                        continue
                    figures[name] = int(m.payload)
        finally:
            sys_sub.stop()
        assert set(names) <= set(figures)
        assert figures["commits"] >= 1 and figures["statements/written"] >= 2
        assert figures["statements/coalesced"] >= 0
