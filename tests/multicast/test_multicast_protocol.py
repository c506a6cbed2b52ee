"""Item 47's protocol without sockets: the topic plan (per-topic enable, overlapping-topic
behaviour), the sender's repair window and the receiver's state machine, with the packets
passed by hand so each loss is chosen."""

from __future__ import annotations

import pytest

from relaymq.multicast import packets
from relaymq.multicast.pacing import Pacer
from relaymq.multicast.receiver import Loss, Message, Receiver
from relaymq.multicast.sender import Sender
from relaymq.multicast.settings import build
from relaymq.multicast.topics import MULTICAST, REJECTED, UNICAST, TopicPlan

RECEIVER = ("10.0.0.2", 40000)
#: the seed's example (l.685-721): "multicast" with foo enabled and bar not
EXAMPLE = [{"topic": "multicast/foo", "enabled": "Enabled"}, {"topic": "multicast/bar", "enabled": "Disabled"}]


def _plan(behavior: str = "Accept", topics: list[dict] | None = None, **more: object) -> TopicPlan:
    return TopicPlan(build({"overlapping_topic_behavior": behavior, "topic": topics or EXAMPLE, **more},
                           "multicast", None))


def test_item_47_root_disabled_children_inherit() -> None:
    """Item 47, seed 003 l.1046-1056: the root is Disabled unless enabled; a child without a
    setting inherits its parent's; a child can enable or disable its own subtree."""
    plan = _plan(topics=[{"topic": "a", "enabled": "Enabled"}, {"topic": "a/b"}, {"topic": "a/b/c", "enabled": "Disabled"}])
    assert plan.stream_for("x/y") is None
    assert plan.stream_for("a/b/d") is plan.stream_for("a")
    assert plan.stream_for("a/b/c/d") is None
    assert plan.stream_for("$SYS/x") is None
    everything = _plan(topics=[{"topic": "a", "enabled": "Disabled"}], root="Enabled")
    assert everything.stream_for("x") is not None and everything.stream_for("a/b") is None


@pytest.mark.parametrize(("behavior", "mode", "topics"), [
    ("Accept", MULTICAST, ["multicast/foo"]), ("Reject", REJECTED, []), ("Revert", UNICAST, [])])
def test_item_47_overlapping_topic_behavior(behavior: str, mode: str, topics: list[str]) -> None:
    """Item 47, seed 003 l.673-721: multicast/# over foo (enabled) and bar (disabled): Accept
    multicasts foo only, Reject refuses, Revert serves it unicast; multicast/foo alone is
    multicast whatever the behaviour."""
    decision = _plan(behavior).decide("multicast/#")
    assert decision.mode == mode
    assert [r.topic for r in decision.regions] == topics
    assert _plan(behavior).decide("multicast/foo").mode == MULTICAST
    assert _plan(behavior).decide("multicast/foo/+").mode == MULTICAST


def test_item_47_groups_come_from_the_address_range() -> None:
    """Item 47, seed 003 l.580-597, 1058-1060: "auto" picks a group in the broker's range, the
    same at every start, one per enabled topic; a given group is kept."""
    topics = [{"topic": "a", "enabled": "Enabled"}, {"topic": "b", "enabled": "Enabled", "group": "239.1.2.3"},
              {"topic": "c", "enabled": "Enabled"}]
    plan = _plan(topics=topics, address_range_min="239.1.0.0", address_range_max="239.1.255.255")
    groups = {r.topic: r.group for r in plan.enabled_regions()}
    assert groups["b"] == "239.1.2.3" and len(set(groups.values())) == 3
    assert all(g.startswith("239.1.") for g in groups.values())
    again = _plan(topics=topics, address_range_min="239.1.0.0", address_range_max="239.1.255.255")
    assert {r.topic: r.group for r in again.enabled_regions()} == groups


def _joined(sender: Sender, topic_filter: str) -> Receiver:
    answer = sender.on_datagram(packets.encode(packets.Join(7, topic_filter)), RECEIVER, 0.0)
    accept = packets.decode(answer[0][0])
    assert isinstance(accept, packets.Accept)
    return Receiver(accept, 0.0, jitter=lambda: 0.5)


def _feed(receiver: Receiver, datagrams: list, now: float, drop: set[int] = frozenset()) -> list:
    events = []
    for index, (data, _) in enumerate(datagrams):
        if index not in drop:
            events += receiver.on_packet(packets.decode(data), now)
    return events


def test_item_47_naks_repair_in_order_and_fragments_reassemble() -> None:
    """Item 47, seed 003 l.812-826, 874-880: gaps are NAKed after the back-off, repaired once
    however many ask, delivered in order; a message longer than a packet (l.610-614) travels
    in fragments and arrives whole."""
    sender = Sender(build({"topic": EXAMPLE}, "multicast", None), _plan())
    first, second = _joined(sender, "multicast/foo/#"), _joined(sender, "multicast/foo/#")
    big = bytes(range(256)) * 100  # 25,600 bytes: four packets of 7,000
    sent = [d for i in range(5) for d in sender.publish("multicast/foo/x", big if i == 2 else b"m%d" % i)]
    assert len(sent) == 8
    got = {id(first): _feed(first, sent, 0.0, drop={1, 4}), id(second): _feed(second, sent, 0.0, drop={4, 6})}
    assert [e.payload for e in got[id(first)] if isinstance(e, Message)] == [b"m0"]
    naks = first.due(0.01)[0] + second.due(0.01)[0]  # the back-off (50 ms here) has not passed
    assert naks == []
    naks = first.due(0.06)[0] + second.due(0.06)[0]
    for nak in naks:
        sender.on_datagram(packets.encode(nak), RECEIVER, 0.06)
    assert sender.due(0.1) == []  # gathered for nack_accumulation_ms (500)
    repairs = sender.due(0.6)
    assert len(repairs) == 3 and sender.stats.repairs == 3  # seqs 2, 5, 7: each once
    for receiver in (first, second):
        events = got[id(receiver)] + _feed(receiver, repairs, 0.6)
        assert [e.payload for e in events if isinstance(e, Message)] == [b"m0", b"m1", big, b"m3", b"m4"]
        assert receiver.stats.lost_packets == 0 and receiver.pending() == 0


def test_item_47_out_of_window_is_lost_and_heartbeat_finds_the_tail() -> None:
    """Item 47, seed 003 l.864-872 (the history bounds what can be repaired), l.620-633 (the
    control packet): a packet gone from the window is announced LOST; a lost last packet is
    found by the heartbeat's latest sequence number and repaired."""
    sender = Sender(build({"topic": EXAMPLE, "minimal_history_kb": 1000}, "multicast", None), _plan())
    receiver = _joined(sender, "multicast/foo")
    sent = [d for i in range(300) for d in sender.publish("multicast/foo", b"%d" % i + b"." * 4000)]
    _feed(receiver, sent, 0.0, drop={0, 299})
    naks, _ = receiver.due(1.0)  # seq 1: found missing when seq 2 came
    for nak in naks:
        sender.on_datagram(packets.encode(nak), RECEIVER, 1.0)
    assert receiver.pending() == 1  # the tail is not known yet
    events = _feed(receiver, sender.due(2.0) + sender.heartbeats(), 2.0)
    assert [e.seqs for e in events if isinstance(e, Loss)] == [[1]]  # out of the window: LOST
    assert receiver.pending() == 1  # the heartbeat told of seq 300
    naks, _ = receiver.due(3.0)
    for nak in naks:
        sender.on_datagram(packets.encode(nak), RECEIVER, 3.0)
    events = _feed(receiver, sender.due(4.0), 4.0)
    assert receiver.stats.lost_packets == 1 and receiver.stats.messages == 299 and receiver.pending() == 0
    assert receiver.stats.repaired == 1


def test_item_47_unreliable_counts_gaps_and_tail() -> None:
    """Item 47, seed 003 l.1074-1080 (Unreliable): no NAK; a gap and a lost tail are losses."""
    sender = Sender(build({"topic": [{"topic": "t", "enabled": "Enabled", "quality": "Unreliable"}]}, "multicast",
                          None), _plan(topics=[{"topic": "t", "enabled": "Enabled", "quality": "Unreliable"}]))
    receiver = _joined(sender, "t")
    sent = [d for i in range(10) for d in sender.publish("t", b"%d" % i)]
    events = _feed(receiver, sent, 0.0, drop={3, 4, 9})
    events += receiver.on_packet(packets.decode(sender.heartbeats()[0][0]), 0.0)
    assert [s for e in events if isinstance(e, Loss) for s in e.seqs] == [4, 5, 10]
    assert receiver.due(5.0) == ([], []) and receiver.stats.messages == 7


def test_item_47_transmission_rate_limit() -> None:
    """Item 47, seed 003 l.737-795: Static holds the rate to the limit; Dynamic halves it on
    reported losses (never under 10 kbps) and climbs back to the limit; Disabled never waits."""
    static = Pacer("Static", 80, 0.1)  # 10,000 bytes a second, a burst of 1,000
    sent, now = 0, 0.0
    while now < 2.0:
        wait = static.wait(now, 500)
        if wait == 0:
            sent += 500
        now += max(wait, 0.001)
    assert 19_000 <= sent <= 21_500
    dynamic = Pacer("Dynamic", 80, 0.1)
    for _ in range(20):
        dynamic.losses_reported()
    assert dynamic.rate == 10 * 1000 / 8
    for _ in range(20):
        dynamic.interval_passed()
    assert dynamic.rate == 10_000
    assert Pacer("Disabled", 80, 0.1).wait(0.0, 1_000_000) == 0


def test_item_47_a_jump_past_the_gap_limit_is_given_up_not_tracked() -> None:
    """Item 47 (robustness of the receiver's gap detection, seed 003 l.820-826): a packet far
    ahead (a long outage, or a forged sequence number) does not make the receiver NAK a billion
    packets: what it held is delivered, the rest before the new packet is one reported loss."""
    sender = Sender(build({"topic": EXAMPLE}, "multicast", None), _plan())
    receiver = _joined(sender, "multicast/foo")
    sent = [d for i in range(3) for d in sender.publish("multicast/foo", b"%d" % i)]
    events = _feed(receiver, sent, 0.0, drop={1})
    stream = packets.decode(sent[0][0]).stream
    far = packets.encode(packets.Data(stream, 10**9, packets.RELIABLE, 0, 1, "multicast/foo", b"far"))
    events += receiver.on_packet(packets.decode(far), 0.0)
    assert [e.payload for e in events if isinstance(e, Message)] == [b"0", b"2", b"far"]
    losses = [e for e in events if isinstance(e, Loss)]
    assert [loss.ranges for loss in losses] == [((2, 1), (4, 10**9 - 4))]
    assert receiver.pending() == 0 and receiver.due(10.0) == ([], [])
