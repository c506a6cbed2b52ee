"""Broker networks for the tests: relaymq processes on loopback ports that know each other's
ports before any of them starts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import BrokerProcess, free_port
from interop.clients import WAIT, PahoClient, paho_client

from relaymq.cli.main import main

Edge = tuple[str, str, str]  # (broker, neighbour, relation as seen from broker)


def collective(*names: str) -> list[Edge]:
    return [(a, b, "collective") for a in names for b in names if a != b]


def parent_child(parent: str, child: str) -> list[Edge]:
    return [(parent, child, "child"), (child, parent, "parent")]


def gateway(a: str, b: str) -> list[Edge]:
    return [(a, b, "gateway"), (b, a, "gateway")]


@contextmanager
def network(tmp_path: Path, names: list[str], edges: list[Edge], extra: dict[str, dict[str, Any]] | None = None,
            queues: tuple[str, ...] = (),
            network_keys: dict[str, dict[str, Any]] | None = None,
            assured: bool = False) -> Iterator[dict[str, BrokerProcess]]:
    """Start relaymq brokers ``names`` joined by ``edges``; ``queues`` are defined on each
    (for psc subscribers), and each gets a fixed HTTP port (``config["http"]["port"]``).
    ``network_keys``: more ``[network]`` keys per broker (``cloned_brokers``). ``assured``: each
    broker's queue manager is ``QM<name>`` with a ``[[qmgr.connection]]`` to each neighbour's,
    named in the neighbour entry (``qmgr``): persistent publications go over the channels."""
    brokers = {name: BrokerProcess("relaymq", workdir=tmp_path / name) for name in names}
    for proc in brokers.values():
        for queue in queues:
            assert main(["queue", "define", queue, "--data-dir", str(proc.data_dir)]) == 0
    channel_ports = {name: free_port() for name in names}
    for name, proc in brokers.items():
        qmgr: dict[str, Any] = {"channel_allow_anonymous": True}
        others = [(other, relation) for broker, other, relation in edges if broker == name]
        if assured:
            qmgr.update(name=f"QM{name}", channel_port=channel_ports[name],
                        connection=[{"name": f"QM{other}", "address": f"127.0.0.1:{channel_ports[other]}",
                                     "retry_initial_ms": 50, "retry_max_ms": 500} for other, _ in others])
        proc.config = {**proc.config, "http": {"host": "127.0.0.1", "port": free_port()}, "qmgr": qmgr}
        neighbors = [{"name": other, "host": "127.0.0.1", "port": brokers[other].port, "relation": relation,
                      "reconnect_initial_ms": 50, "reconnect_max_ms": 500, **({"qmgr": f"QM{other}"} if assured else {})}
                     for other, relation in others]
        section = {"broker": name, "neighbor": neighbors, **(network_keys or {}).get(name, {})}
        proc.config = {**proc.config, "network": section, **(extra or {}).get(name, {})}
    try:
        for proc in brokers.values():
            proc.start()
        yield brokers
    finally:
        for proc in brokers.values():
            proc.stop()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout:g}s: {what}")
        time.sleep(0.02)


def wait_routed(publisher: PahoClient, subscribers: PahoClient | Sequence[PahoClient], topic: str,
                qos: int = 0) -> None:
    """Publish probes on ``topic`` until each subscriber has one: the proxy subscriptions are
    in place along the way (no fixed sleep). Then the probes are forgotten, and so is anything
    the subscribers had before. Only a probe counts: a message left from an earlier step made
    this return before any link was up (the clone test's failure in CI). Name every subscriber
    the probes reach, so none keeps a late one."""
    listening = [subscribers] if isinstance(subscribers, PahoClient) else list(subscribers)
    deadline = time.monotonic() + WAIT
    for subscriber in listening:
        subscriber.inbox.clear()
    while waiting := [s for s in listening if not any(m.topic == topic for m in s.inbox.messages)]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no probe on {topic} reached {', '.join(s.client_id for s in waiting)}")
        publisher.publish(topic, b"probe", qos)
        waiting[0].inbox.wait_quiet(0.1)
    for subscriber in listening:
        subscriber.inbox.wait_quiet(0.5)  # probes still on their way arrive now
        subscriber.inbox.clear()


def stream_through_a_kill(pub: PahoClient, sub: PahoClient, victim: BrokerProcess, topic: str, count: int = 300,
                          pub_after: PahoClient | None = None) -> None:
    """Publish ``count`` QoS 2 publications (each acknowledged: PUBCOMP), kill -9 ``victim``
    half-way and start it again; then ``sub`` must have every one exactly once. ``pub_after``
    publishes the second half when the victim is ``pub``'s own broker. A subscriber on the
    victim reconnects by itself: the same paho client, since a new one would not know the
    QoS 2 publications it answered PUBREC to and whose PUBREL comes after the reconnect."""
    for i in range(count // 2):
        pub.publish(topic, f"{i}".encode(), 2)
    victim.kill()
    for i in range(count // 2, count):
        (pub_after or pub).publish(topic, f"{i}".encode(), 2)
    victim.start()
    got = sub.inbox.wait_while_progressing(lambda ms: len({m.payload for m in ms}) >= count, idle=15, limit=120)
    payloads = [m.payload for m in got]
    missing = sorted(set(range(count)) - {int(x) for x in payloads})
    assert not missing, f"lost {missing}"
    assert len(payloads) == count, f"{len(payloads) - count} duplicate(s)"


def both_ways_once(x: BrokerProcess, y: BrokerProcess, prefix: str, count: int, *, persistent: bool = False) -> None:
    """A subscriber to ``prefix/#`` on ``x`` and one on ``y`` (``persistent`` sessions or not);
    ``count`` QoS 1 publications made on each broker: both subscribers get every one of them,
    exactly once (none lost, none looping back)."""
    subscribers = [paho_client(broker, "v5", None, clean=not persistent) for broker in (x, y)]
    for sub in subscribers:
        sub.subscribe(f"{prefix}/#", 1)
    pub_x, pub_y = paho_client(x, "v5"), paho_client(y, "v5")
    wait_routed(pub_y, subscribers, f"{prefix}/probe")
    wait_routed(pub_x, subscribers, f"{prefix}/probe")
    for i in range(count):
        pub_x.publish(f"{prefix}/x", f"x{i}".encode(), 1)
        pub_y.publish(f"{prefix}/y", f"y{i}".encode(), 1)
    want = sorted(f"{n}{i}".encode() for n in "xy" for i in range(count))
    for sub in subscribers:
        sub.inbox.wait_for(2 * count)
    assert sorted(m.payload for m in subscribers[0].inbox.wait_quiet(1.5)) == want
    assert sorted(m.payload for m in subscribers[1].inbox.wait_quiet(0.1)) == want
