"""Interoperability with paho-mqtt 2.x at MQTT 3.1 (MQIsdp), 3.1.1 and 5.0.

Real broker, real sockets, a real third-party client. Each test isolates itself with unique
topics and client ids, so most share one broker per module; the persistence test restarts its
own broker.
"""

from __future__ import annotations

import pytest

from harness import BrokerProcess

from .clients import LEVELS, WAIT, PahoClient, paho_client, unique

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize("level", LEVELS)
def test_publish_subscribe_round_trip(shared_broker: BrokerProcess, level: str, qos: int) -> None:
    """A message published at QoS n reaches a subscriber granted QoS n, at QoS n.

    Spec: mqtt.md items 7-9 (QoS 0/1/2 flows, seed 000 l.699-741) and item 12 (delivered QoS =
    min(published, granted), l.1767-1769).
    """
    topic = unique("interop/rt")
    sub = paho_client(shared_broker, level)
    pub = paho_client(shared_broker, level)
    try:
        assert sub.subscribe(topic, qos) == [qos]
        pub.publish(topic, b"round trip", qos)
        [got] = sub.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos, got.retain) == (topic, b"round trip", qos, False)
    finally:
        pub.disconnect()
        sub.disconnect()


@pytest.mark.parametrize(("original", "granted"), [(2, 1), (1, 2), (0, 2), (2, 0)])
@pytest.mark.parametrize("level", LEVELS)
def test_retained_message_for_later_subscriber(
    shared_broker: BrokerProcess, level: str, original: int, granted: int
) -> None:
    """A retained message reaches a later subscriber with RETAIN=1 at min(original, granted).

    Spec: mqtt.md item 31 (after SUBACK, one retained message per matching topic with RETAIN=1,
    seed 000 l.843; delivered at min(original QoS, granted QoS), decision in mqtt.md).
    """
    topic = unique("interop/retain")
    pub = paho_client(shared_broker, level)
    try:
        pub.publish(topic, b"last value", original, retain=True)
        sub = paho_client(shared_broker, level)
        try:
            assert sub.subscribe(topic, granted) == [granted]
            [got] = sub.inbox.wait_for(1)
            assert (got.payload, got.retain, got.qos) == (b"last value", True, min(original, granted))
        finally:
            sub.disconnect()
    finally:
        pub.publish(topic, b"", 0, retain=True)
        pub.disconnect()


@pytest.mark.parametrize("level", LEVELS)
def test_empty_retained_payload_clears(shared_broker: BrokerProcess, level: str) -> None:
    """A retained PUBLISH with an empty payload removes the retained message for the topic.

    Spec: MQTT 3.1.1 [MQTT-3.3.1-10]/[MQTT-3.3.1-11] (zero-byte retained message clears it),
    applied to all levels with mqtt.md item 31 (retained delivery after SUBACK, l.843).
    Checked without sleeping: a retained message would be sent right after the SUBACK, so the
    first message the new subscriber sees must be a live one published after subscribing.
    """
    topic = unique("interop/clear")
    pub = paho_client(shared_broker, level)
    sub = None
    try:
        pub.publish(topic, b"to be cleared", 1, retain=True)
        pub.publish(topic, b"", 1, retain=True)
        sub = paho_client(shared_broker, level)
        sub.subscribe(topic, 1)
        pub.publish(topic, b"live", 1)
        first = sub.inbox.wait_for(1)[0]
        assert (first.payload, first.retain) == (b"live", False), sub.inbox.messages
    finally:
        if sub:
            sub.disconnect()
        pub.disconnect()


@pytest.mark.parametrize("level", LEVELS)
def test_will_published_when_connection_drops(shared_broker: BrokerProcess, level: str) -> None:
    """The will is published (at its QoS, with its payload) when the socket closes without
    DISCONNECT.

    Spec: mqtt.md item 25 (will published on an I/O error, seed 000 l.970-972; at will QoS,
    l.1211; payload is the will message bytes, l.1217).
    """
    will_topic = unique("interop/will")
    watcher = paho_client(shared_broker, level)
    try:
        watcher.subscribe(will_topic, 1)
        doomed = paho_client(shared_broker, level, will=(will_topic, b"gone", 1, False))
        doomed.drop()
        [got] = watcher.inbox.wait_for(1)
        assert (got.topic, got.payload, got.qos, got.retain) == (will_topic, b"gone", 1, False)
    finally:
        watcher.disconnect()


@pytest.mark.parametrize("level", LEVELS)
def test_no_will_after_disconnect(shared_broker: BrokerProcess, level: str) -> None:
    """After a normal DISCONNECT the will is not published.

    Spec: mqtt.md item 25 ("never after DISCONNECT", seed 000 l.970-972) and item 26
    (DISCONNECT, l.1237-1254). A sentinel published on the will topic after the disconnect
    must be the only message; a short bounded extra wait catches a late will.
    """
    will_topic = unique("interop/nowill")
    watcher = paho_client(shared_broker, level)
    try:
        watcher.subscribe(will_topic, 1)
        polite = paho_client(shared_broker, level, will=(will_topic, b"should not appear", 1, False))
        polite.disconnect()
        helper = paho_client(shared_broker, level)
        helper.publish(will_topic, b"sentinel", 1)
        helper.disconnect()
        watcher.inbox.wait_for(1)
        received = watcher.inbox.wait_quiet(1.0)
        assert [m.payload for m in received] == [b"sentinel"]
    finally:
        watcher.disconnect()


@pytest.mark.parametrize("level", LEVELS)
def test_persistent_session_survives_restart(broker: BrokerProcess, level: str) -> None:
    """Subscriptions and QoS 1 messages queued for an offline persistent session survive a
    broker restart and are delivered when the client comes back.

    Spec: mqtt.md item 26 (subscriptions survive DISCONNECT; QoS 1/2 messages are kept until
    the client reconnects, seed 000 l.1227-1229) and item 6 (QoS 1/2 stored before they are
    acknowledged, l.427/439/743); MQTT 3.1.1 3.2.2.2 (Session Present).
    """
    topic = unique("interop/persist")
    client_id = unique(f"d{level}")
    sub = paho_client(broker, level, client_id, clean=False)
    assert sub.subscribe(topic, 1) == [1]
    sub.disconnect()

    broker.restart()

    pub = paho_client(broker, level)
    pub.publish(topic, b"while you were away", 1)
    pub.disconnect()

    back = PahoClient(broker, level, client_id, clean=False).connect()
    try:
        [got] = back.inbox.wait_for(1, WAIT)
        assert (got.topic, got.payload, got.qos) == (topic, b"while you were away", 1)
        if level != "v31":  # MQIsdp's CONNACK has no Session Present flag (seed l.1041-1047)
            assert back.session_present is True
    finally:
        back.disconnect()
