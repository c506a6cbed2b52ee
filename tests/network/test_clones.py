"""Cloned brokers with real broker processes (pubsub.md item 43; seed 003 l.275-320,
1139-1222): a clone pair shares its subscription table, so either can serve a subscriber;
exactly one copy per subscriber, no loop; a clone killed in the middle of a persistent
stream loses and doubles nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from interop.clients import paho_client
from pubsub.psc_process import http

from network.topology import both_ways_once, collective, network, stream_through_a_kill, wait_routed, wait_until

pytestmark = pytest.mark.interop

NAMES = ["C1", "C2"]
#: Each clone names the other with its queue manager, in the seed's list syntax.
CLONES = {"C1": {"cloned_brokers": "C2,QMC2"}, "C2": {"cloned_brokers": "C1,QMC1"}}
QMGRS = {name: {"qmgr": {"name": f"QM{name}", "channel_allow_anonymous": True}} for name in NAMES}


def clone_pair(tmp_path: Path, assured: bool = False) -> Any:
    """The two clones; ``assured``: their queue managers joined by channels too (each neighbour
    entry names the other's, as the clone list does), so persistent publications take them."""
    return network(tmp_path, NAMES, collective(*NAMES), extra=None if assured else QMGRS, network_keys=CLONES,
                   assured=assured)


def replicated(broker: Any, owner: str, client_id: str) -> bool:
    """Has ``broker`` got ``owner``'s announced table for ``client_id`` (retained there)?"""
    watcher = paho_client(broker, "v5")
    try:
        watcher.subscribe(f"relaymq/network/clones/{owner}/{client_id}", 0)
        return any(m.payload for m in watcher.inbox.wait_quiet(0.3))
    finally:
        watcher.disconnect()


def test_item_43_clone_pair_one_copy_each_way_no_loop(tmp_path: Path) -> None:
    """Item 43, seed 003 l.1139-1160: two clones configured with "C2,QMC2" / "C1,QMC1". A
    subscriber on C1 gets one copy of what is published on C2 and of what is published on C1;
    one on C2 likewise; nothing comes back round."""
    with clone_pair(tmp_path) as brokers:
        both_ways_once(brokers["C1"], brokers["C2"], "clone", 20, persistent=True)


def test_item_43_a_subscription_made_on_one_clone_is_served_by_the_other(tmp_path: Path) -> None:
    """Seed 003 l.285-298 (the "redirected subscription" figure): a subscriber registers on C1;
    C1 becomes unavailable (kill -9); the subscriber connects to C2 without subscribing again
    and gets what is published on C2 - its subscription was replicated. When C1 is back, it
    learns that the client is served by C2 and drops its own copy of the session, so the
    client gets each publication once, from C2."""
    with clone_pair(tmp_path) as brokers:
        c1, c2 = brokers["C1"], brokers["C2"]
        sub = paho_client(c1, "v5", "roaming", clean=False)
        sub.subscribe("redirect/#", 1)
        wait_until(lambda: replicated(c2, "C1", "roaming"), "C2 holds C1's table for 'roaming'")
        sub.drop()
        c1.kill()
        again = paho_client(c2, "v5", "roaming", clean=False)  # no SUBSCRIBE
        pub = paho_client(c2, "v5")
        pub.publish("redirect/x", b"while C1 is down", 1)
        assert [m.payload for m in again.inbox.wait_for(1)] == [b"while C1 is down"]
        c1.start()
        wait_until(lambda: "roaming is now served by clone C2" in c1.log_tail(200),
                   "C1 drops its session of 'roaming'")
        pub1 = paho_client(c1, "v5")
        wait_routed(pub1, again, "redirect/probe")  # C2's proxy subscription is at C1 again
        for i in range(10):
            pub1.publish("redirect/y", f"{i}".encode(), 1)
            pub.publish("redirect/z", f"{i}".encode(), 1)
        again.inbox.wait_for(20)
        got = [m.payload for m in again.inbox.wait_quiet(1.5)]
        assert sorted(got) == sorted(f"{i}".encode() for i in range(10) for _ in (1, 2))
        assert not replicated(c2, "C1", "roaming")  # C1 cleared its announcement


def test_item_43_clones_change_at_run_time_in_the_list_syntax(tmp_path: Path) -> None:
    """Seed 003 l.1185-1222: "-broker" removes a clone, "+broker,qm" adds one; a change that is
    not valid is refused naming the key."""
    with clone_pair(tmp_path) as brokers:
        c1 = brokers["C1"]

        def change(value: str) -> tuple[int, Any]:
            status, _, reply = http(c1, "PUT", "/relaymq/network/clones",
                                    json.dumps({"cloned_brokers": value}).encode(), headers=c1.admin_headers())
            return status, json.loads(reply)

        status, reply = change("+C2,QMC2")
        assert status == 400 and "already a clone" in reply["error"], reply
        status, reply = change("+C9,QM9")
        assert status == 400 and "cloned_brokers" in reply["error"] and "C9" in reply["error"], reply
        status, reply = change("-C2")
        assert status == 200 and reply["cloned_brokers"] == "", reply
        status, reply = change("+C2,QMC2")
        assert status == 200 and reply["cloned_brokers"] == "C2,QMC2", reply
        assert change("")[1]["cloned_brokers"] == ""
        assert change("C2,QMC2")[1]["cloned_brokers"] == "C2,QMC2"
        status, _, body = http(c1, "DELETE", "/relaymq/network/neighbors/C2", headers=c1.admin_headers())
        assert status == 400 and b"clone" in body


@pytest.mark.slow
@pytest.mark.parametrize("assured", [False, True], ids=["link", "channel"])
@pytest.mark.parametrize("victim", ["C1", "C2"])
def test_item_43_kill_9_a_clone_in_a_persistent_stream(tmp_path: Path, victim: str, assured: bool) -> None:
    """Issue 17, item 43: subscriber on C1 (persistent session), publisher on C2, QoS 2; kill -9
    one clone in the middle of the stream and restart it: nothing the publisher had
    acknowledged is lost, nothing arrives twice; with the publications crossing by the MQTT
    link, and by the queue managers' channel (seed 003 l.1139-1160: the clones' queue managers)."""
    with clone_pair(tmp_path, assured) as brokers:
        sub = paho_client(brokers["C1"], "v5", "clone-subscriber", clean=False)
        sub.subscribe("cstream/#", 2)
        pub = paho_client(brokers["C2"], "v5")
        wait_routed(pub, sub, "cstream/probe", qos=2)
        pub_after = paho_client(brokers["C1"], "v5") if victim == "C2" else None  # the publisher's clone goes
        stream_through_a_kill(pub, sub, brokers[victim], "cstream/x", pub_after=pub_after)
        if assured and victim == "C1":  # C2's counts (in memory) were not reset by a restart
            status, _, body = http(brokers["C2"], "GET", "/relaymq/network", headers=brokers["C2"].admin_headers())
            assert status == 200 and json.loads(body)["assured"]["sent"].get("C1", 0) > 0, body
