"""Persistent publications between brokers over the queue managers' assured channels, with
real broker processes (issue 17; pubsub.md items 40, 41; seed 003 l.115-135: each pair of
broker queue managers joined by a pair of channels; l.1432-1440: PersistenceAsPublisher).
Non-persistent publications keep the MQTT link."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from interop.clients import paho_client
from pubsub.psc_process import http

from network.topology import collective, network, stream_through_a_kill, wait_routed, wait_until
from relaymq.cli.main import main

pytestmark = pytest.mark.interop


def shown(broker: Any) -> dict[str, Any]:
    status, _, body = http(broker, "GET", "/relaymq/network", headers=broker.admin_headers())
    assert status == 200, body
    return dict(json.loads(body))


def test_item_41_persistent_publications_cross_over_the_channel_the_others_over_the_link(tmp_path: Path) -> None:
    """Seed 003 l.1432-1440 and issue 17: in a collective of two whose queue managers are joined
    by channels, a QoS 1 and a QoS 2 publication on B reach the subscriber on A once each by
    the assured channel (B's transmission queue, A's RELAYMQ.NETWORK.IN), and a QoS 0 one by
    the MQTT link, never by the channel."""
    with network(tmp_path, ["A", "B"], collective("A", "B"), assured=True) as brokers:
        sub = paho_client(brokers["A"], "v5", "assured-sub", clean=False)
        sub.subscribe("assured/#", 2)
        pub = paho_client(brokers["B"], "v5")
        wait_routed(pub, sub, "assured/probe", qos=1)
        wait_routed(pub, sub, "assured/probe0", qos=0)  # the MQTT link's proxy subscription is there too
        before = shown(brokers["B"])["assured"]["sent"].get("A", 0)
        for i in range(20):
            pub.publish("assured/p1", f"q1-{i}".encode(), 1)
            pub.publish("assured/p2", f"q2-{i}".encode(), 2)
            pub.publish("assured/p0", f"q0-{i}".encode(), 0)
        want = sorted(f"q{q}-{i}".encode() for q in (0, 1, 2) for i in range(20))
        sub.inbox.wait_for(60)
        got = sub.inbox.wait_quiet(1.5)
        assert sorted(m.payload for m in got) == want
        assert shown(brokers["B"])["assured"]["sent"]["A"] - before == 40  # the persistent ones, and only those
        assert {m.qos for m in got if m.payload.startswith(b"q2")} == {2}


def test_item_42_retained_persistent_publications_come_over_the_channel(tmp_path: Path) -> None:
    """Item 42 (seed 003 l.2622-2626) on an assured link: a new proxy subscription brings the
    neighbour's retained publications, the persistent ones by the channel and the others by
    the link, once each; A keeps both, and a later subscriber on A gets them from A."""
    with network(tmp_path, ["A", "B"], collective("A", "B"), assured=True) as brokers:
        pub = paho_client(brokers["B"], "v5")
        pub.publish("ret/persistent", b"kept-1", 1, retain=True)
        pub.publish("ret/light", b"kept-0", 0, retain=True)
        first = paho_client(brokers["A"], "v5")
        first.subscribe("ret/#", 1)
        first.inbox.wait_for(2)
        assert sorted(m.payload for m in first.inbox.wait_quiet(1.0)) == [b"kept-0", b"kept-1"]
        assert shown(brokers["B"])["assured"]["sent"] == {"A": 1}  # the persistent one, by the channel
        later = paho_client(brokers["A"], "v5")
        later.subscribe("ret/#", 1)
        later.inbox.wait_for(2)
        assert sorted((m.payload, m.retain) for m in later.inbox.wait_quiet(0.5)) == [(b"kept-0", True),
                                                                                       (b"kept-1", True)]


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["A", "B"])
def test_issue_17_kill_9_either_side_of_the_channel_mid_stream(tmp_path: Path, victim: str) -> None:
    """Issue 17: a 2-broker collective, a persistent (QoS 2) stream published on B for a
    subscriber on A (persistent session); kill -9 the subscriber's broker or the publisher's
    in the middle and restart it: every publication B acknowledged arrives at A's subscriber,
    once. The publications cross by the queue managers' channel."""
    with network(tmp_path, ["A", "B"], collective("A", "B"), assured=True) as brokers:
        sub = paho_client(brokers["A"], "v5", "assured-far", clean=False)
        sub.subscribe("astream/#", 2)
        pub = paho_client(brokers["B"], "v5")
        wait_routed(pub, sub, "astream/probe", qos=2)
        pub_after = None
        if victim == "B":  # the publisher's broker goes: the second half is published by a third broker
            pub_after = paho_client(brokers["A"], "v5")
        stream_through_a_kill(pub, sub, brokers[victim], "astream/x", pub_after=pub_after)
        if victim == "A":
            wait_until(lambda: shown(brokers["B"])["assured"]["sent"].get("A", 0) >= 150, "B sent by the channel")


def test_issue_17_an_assured_neighbour_without_its_channel_stops_start_up(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The brief: invalid configuration stops start-up with a message naming the key: a
    neighbour whose queue manager no [[qmgr.connection]] reaches."""
    config = tmp_path / "relaymq.toml"
    config.write_text('''
[qmgr]
name = "QMA"

[network]
broker = "A"
neighbor = [{ name = "B", host = "127.0.0.1", port = 1884, qmgr = "QMB" }]
''')
    assert main(["serve", "--check", "--config", str(config), "--data-dir", str(tmp_path / "data")]) == 2
    assert "network.neighbor[0].qmgr: no [[qmgr.connection]] leads to 'QMB'" in capsys.readouterr().err
