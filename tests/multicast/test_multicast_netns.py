"""Item 47 through real processes: a broker and several ``relaymq multicast listen`` receivers
in a network namespace of the test's own, with nftables dropping one in ten datagrams that
arrive for the data port (data, repairs, heartbeats, JOINs and NAKs alike)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from harness import BrokerProcess
from multicast.netns import Namespace
from multicast.receivers import ReceiverProcess

PORT = 34343
MESSAGES = 300
RECEIVERS = 3


@pytest.fixture
def netns() -> Iterator[Namespace]:
    ns = Namespace()
    try:
        ns.enter()
        yield ns
    finally:
        ns.close()


class NamespaceBroker(BrokerProcess):
    """A broker started with ``ip netns exec`` (the test's thread is in the namespace too, so
    the harness's readiness check reaches it)."""

    def __init__(self, ns: Namespace, **options: Any) -> None:
        super().__init__("relaymq", **options)
        self.ns = ns

    def command(self) -> list[str]:
        return self.ns.exec_prefix() + super().command()


def _broker(ns: Namespace, tmp_path, topics: list[dict], **multicast: object) -> BrokerProcess:
    config = {"multicast": {"enabled": True, "data_port": PORT, "nack_accumulation_ms": 50,
                            "control_interval_ms": 200, **multicast, "topic": topics}}
    return NamespaceBroker(ns, config=config, workdir=tmp_path / "broker")


def _publish(broker: BrokerProcess, topic: str | list[str], count: int) -> None:
    """``count`` messages "m0", "m1", ... on ``topic`` (a list: on each in turn)."""
    topics = [topic] if isinstance(topic, str) else topic
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="mc-publisher")
    client.connect(*broker.address)
    client.loop_start()
    try:
        for index in range(count):
            client.publish(topics[index % len(topics)], f"m{index}", qos=1).wait_for_publish(10)
    finally:
        client.loop_stop()
        client.disconnect()


def _receivers(ns: Namespace, topic_filter: str, count: int, how_many: int = RECEIVERS) -> list[ReceiverProcess]:
    receivers = [ReceiverProcess(ns.exec_prefix(), "-t", topic_filter, "--json", "-C", str(count), "-W", "90")
                 for _ in range(how_many)]
    deadline = time.monotonic() + 30
    for receiver in receivers:
        receiver.wait_joined(deadline)
    return receivers


def _round(ns: Namespace, tmp_path, topics: list[dict], topic_filter: str, publish: str | list[str],
           published: int, expected: int, how_many: int = RECEIVERS, **multicast: object) -> list[ReceiverProcess]:
    """A broker, ``how_many`` receivers of ``topic_filter`` that stop after ``expected``
    messages (delivered or lost), ``published`` messages by MQTT on ``publish``; the receivers
    once they all finished."""
    with _broker(ns, tmp_path, topics, **multicast) as broker:
        receivers = _receivers(ns, topic_filter, expected, how_many)
        try:
            _publish(broker, publish, published)
            for receiver in receivers:
                assert receiver.finish(120) == 0, receiver.stderr[-5:]
        finally:
            for receiver in receivers:
                receiver.stop()
    return receivers


def test_item_47_reliable_multicast_repairs_every_loss(netns: Namespace, tmp_path) -> None:
    """Item 47, seed 003 l.1074-1080 (Reliable, the default quality) and l.812-880 (NAK back-off,
    check period, history, accumulation): with 10% of the datagrams dropped, every receiver gets
    every message, in order, none twice."""
    netns.drop_udp(PORT, 10)
    receivers = _round(netns, tmp_path, [{"topic": "prices", "enabled": "Enabled"}], "prices/#", "prices/IBM",
                       MESSAGES, MESSAGES)
    dropped = netns.dropped()
    repaired = 0
    for receiver in receivers:
        got = receiver.messages()
        assert [m["payload"] for m in got] == [f"m{i}" for i in range(MESSAGES)]
        assert [m["seq"] for m in got] == list(range(1, MESSAGES + 1))
        summary = receiver.summary()
        assert summary["lost_packets"] == 0 and receiver.losses() == []
        repaired += summary["repaired"]
    assert dropped > 0 and repaired > 0, (dropped, repaired)
    print(f"reliable: {dropped} datagrams dropped, {repaired} repairs received by {RECEIVERS} receivers")


def test_item_47_unreliable_multicast_reports_its_losses(netns: Namespace, tmp_path) -> None:
    """Item 47, seed 003 l.1074-1080 (Unreliable): nothing is repaired, and every receiver
    reports as lost exactly the sequence numbers it did not get (heartbeats, l.620-633, carry
    the latest one, so a lost tail is reported too)."""
    netns.drop_udp(PORT, 10)
    receivers = _round(netns, tmp_path, [{"topic": "ticks", "enabled": "Enabled", "quality": "Unreliable"}],
                       "ticks/#", "ticks/t", MESSAGES, MESSAGES)
    total_lost = 0
    for receiver in receivers:
        got = [m["seq"] for m in receiver.messages()]
        gaps = sorted(set(range(1, MESSAGES + 1)) - set(got))
        assert got == sorted(got)
        assert sorted(receiver.losses()) == gaps
        summary = receiver.summary()
        assert summary["lost_packets"] == len(gaps) and summary["repaired"] == 0 and summary["naks"] == 0
        total_lost += len(gaps)
    assert total_lost > 0
    print(f"unreliable: {total_lost} losses reported by {RECEIVERS} receivers of {MESSAGES} messages each")


#: the seed's example (l.685-721): "multicast" with foo enabled and bar not
EXAMPLE = [{"topic": "multicast/foo", "enabled": "Enabled"}, {"topic": "multicast/bar", "enabled": "Disabled"}]


def test_item_47_overlapping_accept_multicasts_only_the_enabled_topics(netns: Namespace, tmp_path) -> None:
    """Item 47, seed 003 l.693-705 (Accept, the default): a subscription to multicast/# gets
    what is published on foo by multicast and nothing of bar."""
    receivers = _round(netns, tmp_path, EXAMPLE, "multicast/#", ["multicast/foo", "multicast/bar"], 100, 50,
                       how_many=2)
    for receiver in receivers:
        assert [(m["topic"], m["payload"]) for m in receiver.messages()] == [
            ("multicast/foo", f"m{i}") for i in range(0, 100, 2)]


def test_item_47_overlapping_reject_refuses_the_subscription(netns: Namespace, tmp_path) -> None:
    """Item 47, seed 003 l.707-711 (Reject): a subscription to multicast/# is refused with the
    reason; multicast/foo alone is accepted."""
    with _broker(netns, tmp_path, EXAMPLE, overlapping_topic_behavior="Reject"):
        refused = ReceiverProcess(netns.exec_prefix(), "-t", "multicast/#", "-W", "30")
        accepted = ReceiverProcess(netns.exec_prefix(), "-t", "multicast/foo", "-W", "30")
        try:
            assert refused.finish(60) == 1
            assert accepted.wait_joined(time.monotonic() + 30)["mode"] == "multicast"
        finally:
            refused.stop()
            accepted.stop()
    assert "reaches topics disabled for multicast" in refused.stderr[-1]


def test_item_47_overlapping_revert_serves_unicast_with_repair(netns: Namespace, tmp_path) -> None:
    """Item 47, seed 003 l.713-721 (Revert): a subscription to multicast/# gets foo and bar,
    unicast, repaired like a reliable stream while one in ten UDP datagrams (data, NAKs, joins)
    is dropped."""
    netns.drop_udp(None, 10)
    receivers = _round(netns, tmp_path, EXAMPLE, "multicast/#", ["multicast/foo", "multicast/bar"], 100, 100,
                       how_many=2, overlapping_topic_behavior="Revert")
    for receiver in receivers:
        assert '"unicast"' in receiver.stderr[0]
        assert [m["payload"] for m in receiver.messages()] == [f"m{i}" for i in range(100)]
        assert receiver.summary()["lost_packets"] == 0
