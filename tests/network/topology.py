"""Broker networks for the tests: relaymq processes on loopback ports that know each other's
ports before any of them starts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import BrokerProcess, free_port
from interop.clients import WAIT, PahoClient

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
            queues: tuple[str, ...] = ()) -> Iterator[dict[str, BrokerProcess]]:
    """Start relaymq brokers ``names`` joined by ``edges``; ``queues`` are defined on each
    (for psc subscribers), and each gets a fixed HTTP port (``config["http"]["port"]``)."""
    brokers = {name: BrokerProcess("relaymq", workdir=tmp_path / name) for name in names}
    for proc in brokers.values():
        for queue in queues:
            assert main(["queue", "define", queue, "--data-dir", str(proc.data_dir)]) == 0
    for name, proc in brokers.items():
        proc.config = {**proc.config, "http": {"host": "127.0.0.1", "port": free_port()},
                       "qmgr": {"channel_allow_anonymous": True}}
        neighbors = [{"name": other, "host": "127.0.0.1", "port": brokers[other].port, "relation": relation,
                      "reconnect_initial_ms": 50, "reconnect_max_ms": 500}
                     for broker, other, relation in edges if broker == name]
        proc.config = {**proc.config, "network": {"broker": name, "neighbor": neighbors}, **(extra or {}).get(name, {})}
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


def wait_routed(publisher: PahoClient, subscriber: PahoClient, topic: str, qos: int = 0) -> None:
    """Publish probes on ``topic`` until the subscriber has one: the proxy subscriptions are in
    place along the way (no fixed sleep). The probes are then forgotten."""
    deadline = time.monotonic() + WAIT
    while not subscriber.inbox.messages:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no probe on {topic} reached {subscriber.client_id}")
        publisher.publish(topic, b"probe", qos)
        subscriber.inbox.wait_quiet(0.1)
    subscriber.inbox.wait_quiet(0.5)  # probes still on their way arrive now
    with subscriber.inbox._cond:
        subscriber.inbox.messages.clear()
