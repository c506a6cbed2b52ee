"""Item 46, the real-time transport, through real sockets against a real broker process
(seed 003 l.2004-2071; seed 000 l.619-665)."""

from __future__ import annotations

import re
import threading
import time

import paho.mqtt.client as mqtt
import pytest
from harness import BrokerProcess, free_port
from realtime.rtclient import RtClient

from relaymq.config import ConfigError
from relaymq.realtime import frames
from relaymq.realtime.frames import Close, Frame, Ping, Publish
from relaymq.realtime.settings import build


def _broker(tmp_path, **realtime: object) -> BrokerProcess:
    port = free_port()
    broker = BrokerProcess("relaymq", config={"realtime": {"enabled": True, "host": "127.0.0.1", "port": port,
                                                           **realtime}}, workdir=tmp_path / "broker")
    broker.realtime_port = port  # type: ignore[attr-defined]
    return broker


def _rt(broker: BrokerProcess, client_id: str, **options: int) -> RtClient:
    return RtClient("127.0.0.1", broker.realtime_port, client_id, **options)  # type: ignore[attr-defined]


class MqttSubscriber:
    def __init__(self, broker: BrokerProcess, topic_filter: str) -> None:
        self.messages: list[mqtt.MQTTMessage] = []
        self.arrived = threading.Condition()
        subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="mqtt-sub", protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *_args: subscribed.set()
        self.client.connect(*broker.address)
        self.client.loop_start()
        self.client.subscribe(topic_filter)
        assert subscribed.wait(10)

    def _on_message(self, _client: object, _userdata: object, message: mqtt.MQTTMessage) -> None:
        with self.arrived:
            self.messages.append(message)
            self.arrived.notify_all()

    def wait(self, count: int, timeout: float = 10) -> list[mqtt.MQTTMessage]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.messages) >= count, timeout), self.messages
            return list(self.messages)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_item_46_realtime_and_mqtt_clients_see_each_others_publications(tmp_path) -> None:
    """Item 46, seed 000 l.619-665 (real-time clients communicate with applications on the
    other transports) and seed 003 l.2004-2071: a real-time publication reaches MQTT and
    real-time subscribers; an MQTT publication reaches real-time subscribers; the JMS priority
    and a response's correlation id travel as MQTT 5 user property and Correlation Data."""
    with _broker(tmp_path) as broker:
        reader, writer = _rt(broker, "rt-reader"), _rt(broker, "rt-writer")
        assert reader.subscribe("scores/#").ok
        assert not reader.subscribe("scores/#/x").ok  # an invalid filter is refused, not fatal
        subscriber = MqttSubscriber(broker, "scores/#")
        try:
            writer.publish("scores/match1", b"2-1", priority=7, correlation=b"req-9")
            got = reader.wait_for(Publish)
            assert got == Publish("scores/match1", b"2-1", 7, b"req-9")
            message = subscriber.wait(1)[0]
            assert (message.topic, message.payload) == ("scores/match1", b"2-1")
            assert ("JMSPriority", "7") in message.properties.UserProperty
            assert message.properties.CorrelationData == b"req-9"
            publisher = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="mqtt-pub")
            publisher.connect(*broker.address)
            publisher.loop_start()
            publisher.publish("scores/match2", b"0-0", qos=1).wait_for_publish(10)
            publisher.loop_stop()
            publisher.disconnect()
            assert reader.wait_for(Publish) == Publish("scores/match2", b"0-0")
            writer.publish("$SYS/broker/fake", b"x")  # reserved for the broker: dropped
            writer.publish("scores/match3", b"1-0")
            assert reader.wait_for(Publish).topic == "scores/match3"
            assert reader.subscribe("scores/#", unsubscribe=True).ok
            writer.publish("scores/match4", b"9-9")
            reader.round_trip()
            writer.round_trip()
            assert [m.topic for m in subscriber.wait(4)] == [f"scores/match{i}" for i in range(1, 5)]
            assert reader.pending == []
        finally:
            subscriber.close()
            reader.close()
            writer.close()


def test_item_46_realtime_clients_are_held_to_the_acl_as_anonymous_clients(tmp_path) -> None:
    """Item 46 at the seam with the authorisation model (docs/security.md): the transport
    authenticates nobody, so a real-time client is an anonymous client of the ACL. It may
    publish only where anonymous clients may write, and receives only what they may read;
    an MQTT subscriber sees exactly the allowed publication."""
    acl = tmp_path / "acl"
    acl.write_text("topic read public/#\ntopic write public/rt/#\ntopic read open/#\n")
    port = free_port()
    broker = BrokerProcess("relaymq", config={"realtime": {"enabled": True, "host": "127.0.0.1", "port": port},
                                              "access": {"acl_file": str(acl)}}, workdir=tmp_path / "broker")
    broker.realtime_port = port  # type: ignore[attr-defined]
    with broker:
        reader, writer = _rt(broker, "rt-reader"), _rt(broker, "rt-writer")
        assert reader.subscribe("#").ok
        subscriber = MqttSubscriber(broker, "public/#")  # what anonymous MQTT clients may read
        try:
            writer.publish("private/x", b"no")       # anonymous may not write here: dropped
            writer.publish("public/rt/1", b"yes")
            assert reader.wait_for(Publish) == Publish("public/rt/1", b"yes")
            assert [(m.topic, m.payload) for m in subscriber.wait(1)] == [("public/rt/1", b"yes")]
            writer.round_trip()
            assert [m.topic for m in subscriber.messages] == ["public/rt/1"]
        finally:
            subscriber.close()
            reader.close()
            writer.close()


def test_item_46_defaults_announced_and_checked() -> None:
    """Item 46, seed 003 l.2026-2058: maxBrokerQueueSize 1,000,000 bytes (0 = unlimited),
    maxMessageSize 100,000, brokerPingInterval 5,000 ms; the listener is off by default; a bad
    value is refused naming the key."""
    s = build(None, "realtime", None)
    assert (s.enabled, s.max_broker_queue_size, s.max_message_size, s.broker_ping_interval) == (
        False, 1_000_000, 100_000, 5000)
    assert build({"max_broker_queue_size": 0}, "realtime", None).max_broker_queue_size == 0
    for key, value in (("max_message_size", 10), ("broker_ping_interval", -1), ("port", 70000),
                       ("max_broker_queue_size", -5)):
        with pytest.raises(ConfigError) as refused:
            build({key: value}, "realtime", None)
        assert refused.value.key == f"realtime.{key}"


def test_item_46_welcome_states_the_limits_and_port_in_use_stops_start_up(tmp_path) -> None:
    """Item 46, seed 003 l.2026-2058: the broker tells a client the limits it applies; a port
    already taken stops start-up naming realtime.port."""
    with _broker(tmp_path) as broker:
        client = _rt(broker, "limits")
        assert (client.welcome.max_queue_size, client.welcome.max_message_size, client.welcome.ping_interval_ms) == (
            1_000_000, 100_000, 5000)
        client.close()
        second = BrokerProcess("relaymq", config={"realtime": {"enabled": True, "host": "127.0.0.1",
                                                               "port": broker.realtime_port}},  # type: ignore[attr-defined]
                               workdir=tmp_path / "second", start_timeout=60)
        with pytest.raises(Exception, match="config error: realtime.port"):
            second.start()
        second.cleanup()


def test_item_46_oversized_message_disconnects_the_client(tmp_path) -> None:
    """Item 46, seed 003 l.2052-2058 (maxMessageSize): a client that sends a message over the
    maximum is disconnected, with a CLOSE saying why; others are not affected."""
    with _broker(tmp_path, max_message_size=1000) as broker:
        big, other = _rt(broker, "big"), _rt(broker, "other")
        assert other.subscribe("t").ok
        big.publish("t", b"x" * 900)
        assert other.wait_for(Publish).payload == b"x" * 900
        big.publish("t", b"x" * 1000)  # the frame is over 1,000 bytes with its topic and header
        close = big.wait_for(Close)
        assert isinstance(close, Close) and close.reason == frames.TOO_LARGE
        assert big.next_frame(10) is None  # and the socket is closed
        other.round_trip()
        assert other.pending == []
        big.close()
        other.close()


def test_item_46_overflow_keeps_the_latest_high_priority_and_responses(tmp_path) -> None:
    """Item 46, seed 003 l.2026-2038 (maxBrokerQueueSize): a client that stops reading has
    everything queued for it deleted past the limit, except the latest message, high-priority
    messages (JMS 5-9) and responses; once it reads again those arrive, in order."""
    limit = 100_000
    with _broker(tmp_path, max_broker_queue_size=limit, broker_ping_interval=0) as broker:
        slow = _rt(broker, "slow", receive_buffer=4096)
        assert slow.subscribe("feed/#").ok
        writer = _rt(broker, "writer")
        total, payload = 5000, b"." * 1000  # 5 MB against a 100 KB queue
        for index in range(total):
            if index % 1000 == 250:
                writer.publish("feed/urgent", b"high-%d" % index, priority=9)
            elif index % 1000 == 750:
                writer.publish("feed/reply", b"response-%d" % index, correlation=b"c%d" % index)
            else:
                writer.publish("feed/normal", b"%d:" % index + payload)
        writer.round_trip()  # the broker routed all of them
        received: list[Frame] = []
        slow.round_trip(keep=received, timeout=60)
        writer.close()
        slow.close()
        dropped = _wait_for_log(broker, r"real-time client slow: (\d+) messages dropped")
    publications = [f for f in received if isinstance(f, Publish)]
    normal = [int(p.payload.split(b":")[0]) for p in publications if p.topic == "feed/normal"]
    high = [p.payload for p in publications if p.topic == "feed/urgent"]
    responses = [p.payload for p in publications if p.topic == "feed/reply"]
    assert high == [b"high-%d" % i for i in range(250, total, 1000)]
    assert responses == [b"response-%d" % i for i in range(750, total, 1000)]
    assert normal == sorted(normal) and normal[-1] == total - 1  # the latest is kept
    assert dropped > 0 and len(normal) + dropped == total - 10  # every normal one: received or dropped
    assert len(normal) < total / 4  # the socket buffers are bounded too (connection.SEND_BUFFER)
    print(f"overflow: {len(normal)} of {total - 10} normal messages reached the slow client, {dropped} dropped;"
          f" all {len(high)} high-priority and {len(responses)} responses did")
    assert not any(isinstance(f, Ping) and not f.pong for f in received)


def _wait_for_log(broker: BrokerProcess, pattern: str, timeout: float = 15) -> int:
    """The number the broker's log line matching ``pattern`` states, once it is written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, broker.log_path.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        time.sleep(0.05)
    raise AssertionError(f"no log line {pattern!r}")


def test_item_46_broker_pings_and_closes_a_silent_client(tmp_path) -> None:
    """Item 46, seed 003 l.2040-2050 (brokerPingInterval): the broker pings every interval; a
    client that answers stays connected, one that sends nothing for three intervals is closed
    with a CLOSE saying why."""
    with _broker(tmp_path, broker_ping_interval=200) as broker:
        lively, silent = _rt(broker, "lively"), _rt(broker, "silent")
        started = time.monotonic()
        for _ in range(6):
            ping = lively.wait_for(Ping)
            assert isinstance(ping, Ping) and not ping.pong
            lively.send(Ping(ping.token, pong=True))
        close = silent.wait_for(Close, timeout=10)
        assert isinstance(close, Close) and close.reason == frames.PING_TIMEOUT
        assert time.monotonic() - started >= 0.6
        lively.round_trip()  # still connected
        lively.close()
        silent.close()
