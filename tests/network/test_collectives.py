"""Broker networks of seed 003 with real broker processes (issue 17; pubsub.md items 18,
40-43): collectives, joined collectives, hierarchies; exactly one copy per subscriber, none
looping; a broker killed in the middle of a persistent stream."""

from __future__ import annotations

from pathlib import Path

import pytest
from interop.clients import paho_client

from network.topology import (
    both_ways_once,
    collective,
    gateway,
    network,
    parent_child,
    stream_through_a_kill,
    wait_routed,
    wait_until,
)

pytestmark = pytest.mark.interop


def test_item40_41_collective_of_three_one_copy_no_loop(tmp_path: Path) -> None:
    """Items 40-41: in a collective of three, a subscriber on A gets one copy of what is
    published on B and on C, and of what is published on A itself; nothing loops."""
    with network(tmp_path, ["A", "B", "C"], collective("A", "B", "C")) as brokers:
        sub = paho_client(brokers["A"], "v5")
        sub.subscribe("news/#", 1)
        other = paho_client(brokers["C"], "v5")
        other.subscribe("news/#", 1)
        on_b, on_c, on_a = (paho_client(brokers[n], "v5") for n in "BCA")
        wait_routed(on_b, [sub, other], "news/probe-b")
        wait_routed(on_c, [sub, other], "news/probe-c")
        for i in range(20):
            on_b.publish("news/b", f"b{i}".encode(), 1)
            on_c.publish("news/c", f"c{i}".encode(), 1)
            on_a.publish("news/a", f"a{i}".encode(), 1)
        want = sorted(f"{n}{i}".encode() for n in "abc" for i in range(20))
        sub.inbox.wait_for(60)
        other.inbox.wait_for(60)
        got = sorted(m.payload for m in sub.inbox.wait_quiet(1.5) if m.payload != b"probe")
        assert got == want
        assert sorted(m.payload for m in other.inbox.wait_quiet(0.1) if m.payload != b"probe") == want


def test_item40_two_collectives_joined_through_one_broker_each(tmp_path: Path) -> None:
    """Item 40: collectives join through one broker each (A-D); a publication on B reaches a
    subscriber on E, once; one on E reaches B, once."""
    edges = collective("A", "B", "C") + collective("D", "E") + gateway("A", "D")
    with network(tmp_path, ["A", "B", "C", "D", "E"], edges) as brokers:
        both_ways_once(brokers["B"], brokers["E"], "t", 10)


def test_item40_three_level_hierarchy(tmp_path: Path) -> None:
    """Hierarchies (seed 003 "parent"/"child"): a publication on a leaf reaches subscribers on
    the root and on another leaf, once each."""
    edges = parent_child("ROOT", "MID") + parent_child("MID", "LEAF1") + parent_child("MID", "LEAF2")
    with network(tmp_path, ["ROOT", "MID", "LEAF1", "LEAF2"], edges) as brokers:
        root, leaf2 = paho_client(brokers["ROOT"], "v5"), paho_client(brokers["LEAF2"], "v5")
        root.subscribe("h/#", 1)
        leaf2.subscribe("h/#", 1)
        pub = paho_client(brokers["LEAF1"], "v5")
        wait_routed(pub, [root, leaf2], "h/probe")
        for i in range(10):
            pub.publish("h/v", f"{i}".encode(), 1)
        root.inbox.wait_for(10)
        leaf2.inbox.wait_for(10)
        want = sorted(f"{i}".encode() for i in range(10))
        assert sorted(m.payload for m in root.inbox.wait_quiet(1.5)) == want
        assert sorted(m.payload for m in leaf2.inbox.wait_quiet(0.1)) == want


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["MID", "SUB"])
def test_kill_9_in_a_persistent_stream_loses_nothing_and_duplicates_nothing(tmp_path: Path, victim: str) -> None:
    """Issue 17: kill -9 a broker in the middle of a persistent (QoS 2) stream and restart it:
    nothing acknowledged to the publisher is lost, nothing arrives twice. PUB -> MID -> SUB,
    the subscriber's session persistent; the broker in the middle, or the subscriber's."""
    edges = gateway("PUB", "MID") + gateway("MID", "SUB")
    with network(tmp_path, ["PUB", "MID", "SUB"], edges) as brokers:
        sub = paho_client(brokers["SUB"], "v5", "far-subscriber", clean=False)
        sub.subscribe("stream/#", 2)
        pub = paho_client(brokers["PUB"], "v5")
        wait_routed(pub, sub, "stream/probe", qos=2)
        stream_through_a_kill(pub, sub, brokers[victim], "stream/x")


def test_item40_a_cycle_between_collectives_is_refused(tmp_path: Path) -> None:
    """Item 40: connections that would make messages cycle are refused. Three brokers joined
    in a ring of gateways: each learns the others' neighbour lists and stops its links on the
    cycle, naming the configuration key; nothing then goes round."""
    edges = gateway("A", "B") + gateway("B", "C") + gateway("C", "A")
    with network(tmp_path, ["A", "B", "C"], edges) as brokers:
        for name, proc in brokers.items():
            wait_until(lambda proc=proc: proc.log_tail(400).count("closes a cycle") >= 2,
                       f"{name} refuses its two links on the ring")
            assert "network.neighbor[0]" in proc.log_tail(400) and "network.neighbor[1]" in proc.log_tail(400)


def test_item40_a_tree_of_collectives_is_not_refused(tmp_path: Path) -> None:
    """Item 40, the other side: two collectives joined by one gateway pair and a child below
    are a tree: every broker learns the whole network and refuses nothing."""
    edges = collective("A", "B", "C") + collective("D", "E") + gateway("A", "D") + parent_child("E", "F")
    with network(tmp_path, ["A", "B", "C", "D", "E", "F"], edges) as brokers:
        watcher = paho_client(brokers["F"], "v5")
        watcher.subscribe("relaymq/network/topology/#", 0)
        wait_until(lambda: len({m.topic for m in watcher.inbox.messages}) == 6, "F learns all six lists")
        for proc in brokers.values():
            assert "closes a cycle" not in proc.log_tail(400)
