"""Items 18, 41, 42 and 44's Neighbor section across real broker processes (pubsub.md;
issue 17): Local publications and subscriptions stay local, publications travel only to
brokers with matching subscribers, retained publications are held by every broker with a
matching subscription, the statistics and $SYS show the neighbours."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from interop.clients import WAIT, paho_client
from pubsub.psc_process import CONTROL, Rest, http

from network.topology import collective, network, wait_routed, wait_until

pytestmark = pytest.mark.interop


def drain(rest: Rest, queue: str) -> list[bytes]:
    bodies = []
    while True:
        status, _, body = rest.get(queue, wait_ms=300)
        if status != 200:
            return bodies
        bodies.append(body)


def test_item18_local_publications_and_subscriptions_stay_local(tmp_path: Path) -> None:
    """Item 18: a Local subscription on B gets only what is published on B; a Local
    publication on A reaches A's subscribers and no other broker; a global subscription on B
    gets publications from A (and is proxied there, the Local one is not)."""
    queues = ("APP.REPLY", "B.LOCAL", "B.GLOBAL")
    with network(tmp_path, ["A", "B"], collective("A", "B"), queues=queues) as brokers:
        rest_a, rest_b = Rest(brokers["A"]), Rest(brokers["B"])
        assert rest_b.command(CONTROL, "<Command>RegSub</Command><Topic>loc/#</Topic><QName>B.LOCAL</QName>"
                                       "<RegOpt>Local</RegOpt>") == ("ok", [])
        assert rest_b.command(CONTROL, "<Command>RegSub</Command><Topic>loc/#</Topic><QName>B.GLOBAL</QName>") == (
            "ok", [])
        on_a = paho_client(brokers["A"], "v5")
        on_a.subscribe("loc/#", 1)
        pub_a = paho_client(brokers["A"], "v5")
        deadline = time.monotonic() + WAIT
        while rest_b.get("B.GLOBAL", wait_ms=100)[0] != 200:  # B's proxy subscription at A is in place
            assert time.monotonic() < deadline, brokers["B"].describe_log()
            pub_a.publish("loc/probe", b"probe", 1)
        on_a.inbox.wait_quiet(0.5)
        drain(rest_b, "B.GLOBAL")
        assert drain(rest_b, "B.LOCAL") == []  # the probes came from A: not for a Local subscription
        on_a.inbox.clear()

        pub_a.publish("loc/from-a", b"global from A", 1)
        paho_client(brokers["B"], "v5").publish("loc/from-b", b"made on B", 1)
        assert rest_a.command(STREAM_CMD, "<Command>Publish</Command><Topic>loc/local-a</Topic>"
                                          "<PubOpt>Local</PubOpt>", body="local on A") == ("ok", [])
        wait_until(lambda: len(on_a.inbox.messages) >= 3, "A's subscriber gets its three publications")
        got_global = sorted(drain_until(rest_b, "B.GLOBAL", 2))
        assert got_global == [b"global from A", b"made on B"]
        assert drain(rest_b, "B.LOCAL") == [b"made on B"]
        assert drain(rest_b, "B.GLOBAL") == []  # the Local publication on A did not come
        assert sorted(m.payload for m in on_a.inbox.wait_quiet(0.5)) == [b"global from A", b"local on A",
                                                                          b"made on B"]


STREAM_CMD = "SYSTEM.BROKER.DEFAULT.STREAM"


def drain_until(rest: Rest, queue: str, count: int) -> list[bytes]:
    bodies: list[bytes] = []
    deadline = time.monotonic() + WAIT
    while len(bodies) < count and time.monotonic() < deadline:
        status, _, body = rest.get(queue, wait_ms=500)
        if status == 200:
            bodies.append(body)
    return bodies


def test_item41_publications_go_only_where_subscribed_with_one_proxy_per_filter(tmp_path: Path) -> None:
    """Item 41: one proxy subscription per distinct filter whatever the number of local
    subscribers, withdrawn with the last; a broker without a matching subscriber receives
    nothing of the traffic (the statistics' Neighbor section counts it: item 44)."""
    stats = {"pubsub": {"stats_interval_ms": 200}}
    with network(tmp_path, ["A", "B", "C"], collective("A", "B", "C"),
                 extra={name: stats for name in "ABC"}) as brokers:
        watcher = {n: paho_client(brokers[n], "v5") for n in "ABC"}
        for client in watcher.values():
            client.subscribe("$SYS/Broker/+/ExecutionGroup/+/Statistics", 0)
        subs = [paho_client(brokers["A"], "v5") for _ in range(3)]
        for sub in subs:
            sub.subscribe("only-a/#", 1)
        pub = paho_client(brokers["B"], "v5")
        wait_routed(pub, subs, "only-a/probe")

        def neighbors(name: str) -> dict[str, dict[str, str]]:
            report = ET.fromstring(watcher[name].inbox.messages[-1].payload)
            return {c.attrib["Name"]: c.attrib for c in report.find("Neighbor")}

        reports = len(watcher["C"].inbox.messages)
        wait_until(lambda: len(watcher["C"].inbox.messages) > reports + 1, "two fresh reports from C")
        c_before = int(neighbors("C")["B"]["MessagesReceived"])  # the network's own announcements
        for i in range(30):
            pub.publish("only-a/x", f"{i}".encode(), 1)
        subs[1].inbox.wait_for(30)

        def counted() -> bool:
            return (bool(watcher["A"].inbox.messages) and int(neighbors("A")["B"]["MessagesReceived"]) >= 30
                    and bool(watcher["C"].inbox.messages))

        wait_until(counted, "the statistics report A's traffic from B")
        report_a = ET.fromstring(watcher["A"].inbox.messages[-1].payload)
        assert report_a.find("Broker").attrib["NeighborCount"] == "2"
        assert neighbors("A")["B"]["Connected"] == "true" and neighbors("A")["B"]["Relation"] == "collective"
        assert neighbors("A")["B"]["ProxySubscriptions"] == "1"  # three subscribers, one proxy at B
        reports = len(watcher["C"].inbox.messages)
        wait_until(lambda: len(watcher["C"].inbox.messages) > reports + 1, "two fresh reports from C")
        assert int(neighbors("C")["B"]["MessagesReceived"]) == c_before  # C has no subscriber: none came

        for sub in subs:  # the last subscriber leaves: the proxy is withdrawn
            sub.disconnect()
        wait_until(lambda: neighbors("A")["B"]["ProxySubscriptions"] == "0", "the proxy subscription withdrawn")


def test_item42_retained_publications_are_held_by_every_broker_with_a_subscriber(tmp_path: Path) -> None:
    """Item 42: a retained publication made on A is stored by B once B has a matching
    subscriber; B then serves it to a new subscriber even with A gone."""
    with network(tmp_path, ["A", "B"], collective("A", "B")) as brokers:
        paho_client(brokers["A"], "v5").publish("ret/t", b"21.5", 1, retain=True)
        first = paho_client(brokers["B"], "v5")
        first.subscribe("ret/#", 1)
        (held,) = first.inbox.wait_for(1)
        assert held.payload == b"21.5"
        brokers["A"].stop()
        late = paho_client(brokers["B"], "v5")
        late.subscribe("ret/#", 1)
        (again,) = late.inbox.wait_for(1)
        assert (again.payload, again.retain) == (b"21.5", True)


def test_sys_topics_show_the_neighbours(tmp_path: Path) -> None:
    """Issue 17: "$SYS ... show neighbours": $SYS/broker/network/<broker>/neighbors/<name> is
    1 while the link is up, 0 when it is down."""
    with network(tmp_path, ["A", "B"], collective("A", "B")) as brokers:
        watcher = paho_client(brokers["A"], "v5")
        watcher.subscribe("$SYS/broker/network/#", 0)
        wait_until(lambda: any(m.payload == b"1" for m in watcher.inbox.messages), "B shown connected")
        assert watcher.inbox.messages[-1].topic == "$SYS/broker/network/A/neighbors/B"
        brokers["B"].kill()
        wait_until(lambda: watcher.inbox.messages[-1].payload == b"0", "B shown gone")


def test_neighbours_change_at_run_time_through_the_admin_api(tmp_path: Path) -> None:
    """Issue 17: broker-to-broker connections "changed at run time through the admin API":
    PUT connects a new neighbour (its proxy subscriptions made from what is subscribed now),
    GET shows it, DELETE disconnects it; a bad entry is refused naming the key."""
    with network(tmp_path, ["A", "B"], [], extra={n: {"network": {"broker": n}} for n in "AB"}) as brokers:
        a, b = brokers["A"], brokers["B"]
        sub = paho_client(a, "v5")
        sub.subscribe("rt/#", 1)
        pub = paho_client(b, "v5")

        def call(broker: Any, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
            status, _, reply = http(broker, method, "/relaymq/network" + path,
                                    json.dumps(body).encode() if body is not None else b"",
                                    headers=broker.admin_headers())
            return status, json.loads(reply)

        status, reply = call(a, "PUT", "/neighbors/B", {"host": "127.0.0.1", "port": b.port, "relation": "cousin"})
        assert status == 400 and "neighbor.relation" in reply["error"]
        assert http(a, "GET", "/relaymq/network")[0] in (401, 403)  # an administrator's act
        for here, there in ((a, "B"), (b, "A")):
            port = brokers[there].port
            status, reply = call(here, "PUT", f"/neighbors/{there}", {"host": "127.0.0.1", "port": port,
                                                                     "relation": "collective"})
            assert status == 201, reply
        wait_routed(pub, sub, "rt/probe")
        wait_until(lambda: call(a, "GET", "")[1]["neighbors"][0]["Connected"] == "true", "A shows B connected")
        assert call(a, "GET", "")[1]["neighbors"][0]["ProxySubscriptions"] == "1"

        assert call(a, "DELETE", "/neighbors/B")[0] == 200
        assert call(a, "DELETE", "/neighbors/B")[0] == 404
        assert call(a, "GET", "")[1]["neighbors"] == []
        pub.publish("rt/after", b"after", 1)
        assert [m for m in sub.inbox.wait_quiet(1.0) if m.payload == b"after"] == []
