"""A publication crossing 1, 2 and 3 brokers of a network (issue 17, "Benchmarks"), beside one
broker alone: messages per second and latency, QoS 0 and QoS 1 (persistent subscriber), and
a publisher on one member of a collective of 3 with its subscriber on each member in turn.

Every broker is a ``relaymq serve`` process on a loopback port with its SQLite store; the
brokers of a chain are joined by gateway links (docs/networks.md), so a publication made on
the first is carried by each link in turn to a subscriber on the last. The load is
``relaymq bench``'s generator (relaymq.bench): publishers on the first broker, subscribers on
the last (``BenchSpec.sub_port``). Before the timed run a probe goes through until it arrives,
so the proxy subscriptions are in place.

The *assured* cases join the two brokers' queue managers by channels too (each neighbour entry
names the other's queue manager, ``qmgr``): persistent publications then cross by the assured
channel (docs/networks.md, "The assured path"), non-persistent ones still by the link.

Run: ``.venv/bin/python bench/bench_network.py [--count 20000] [--json FILE] [--link-only]``
(``--link-only``: only the one-link cases, plain and assured). Prints a table; asserts nothing
about speed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import BrokerProcess, free_port
from interop.clients import paho_client

from relaymq.bench.runner import BenchSpec, run

LIMITS = {"max_inflight": 100, "max_queued_messages": 1_000_000, "max_stored_messages": 2_000_000}


def start_chain(workdir: Path, size: int, collective: bool = False, assured: bool = False) -> list[BrokerProcess]:
    names = [f"B{i}" for i in range(size)]
    brokers = [BrokerProcess("relaymq", workdir=workdir / name, config={"limits": LIMITS}) for name in names]
    channel_ports = [free_port() for _ in names]
    for i, proc in enumerate(brokers):
        relation = "collective" if collective else "gateway"
        others = [j for j in range(size) if j != i] if collective else [j for j in (i - 1, i + 1) if 0 <= j < size]
        neighbors = [{"name": names[j], "host": "127.0.0.1", "port": brokers[j].port, "relation": relation,
                      **({"qmgr": f"QM{names[j]}"} if assured else {})} for j in others]
        if assured:
            proc.config = {**proc.config, "qmgr": {
                "name": f"QM{names[i]}", "channel_port": channel_ports[i], "channel_allow_anonymous": True,
                "connection": [{"name": f"QM{names[j]}", "address": f"127.0.0.1:{channel_ports[j]}"} for j in others]}}
        if neighbors:
            proc.config = {**proc.config, "network": {"broker": names[i], "neighbor": neighbors}}
    for proc in brokers:
        proc.start()
    return brokers


def prime(first: BrokerProcess, subscribers: list[BrokerProcess], topic: str) -> list[Any]:
    """Subscribe a watcher on each subscribing broker and probe until every watcher has one:
    the proxy subscriptions are in place before the clock starts (the watchers stay)."""
    watchers = []
    for broker in subscribers:
        watcher = paho_client(broker, "v5")
        watcher.subscribe(topic + "/#", 1)
        watchers.append(watcher)
    publisher = paho_client(first, "v5")
    deadline = time.monotonic() + 30
    while not all(w.inbox.messages for w in watchers):
        if time.monotonic() > deadline:
            raise TimeoutError("the network did not carry the probe")
        publisher.publish(topic + "/probe", b"probe-0123456789", 0)
        time.sleep(0.05)
    publisher.disconnect()
    return watchers


def measure(first: BrokerProcess, last: BrokerProcess, qos: int, count: int, subscribers: int = 1) -> dict[str, Any]:
    topic = f"bench/net-{uuid.uuid4().hex[:8]}"
    watchers = prime(first, [last], topic)
    spec = BenchSpec(host="127.0.0.1", port=first.port, sub_port=last.port, publishers=1,
                     subscribers=subscribers, qos=qos, count=count, topic=topic, protocol=5,
                     persistent="sub" if qos else "", drain_timeout=10.0, processes=2)
    report = run(spec, progress=False).to_dict()
    for watcher in watchers:
        watcher.disconnect()
    return report


def row(label: str, report: dict[str, Any]) -> dict[str, Any]:
    latency = report["latency_us"]

    def ms(value: int | None) -> float | None:
        return None if value is None else round(value / 1000, 2)

    return {"case": label, "msg_per_s": round(report["receive_rate"]), "received": report["unique"],
            "expected": report["expected"], "lost": report["lost"], "duplicates": report["duplicates"],
            "p50_ms": ms(latency.get("p50")), "p99_ms": ms(latency.get("p99"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="messages per case (default 20000)")
    parser.add_argument("--json", help="write the rows here too")
    parser.add_argument("--link-only", action="store_true", help="only the one-link cases, plain and assured")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-network-") as tmp:
        brokers = start_chain(Path(tmp) / "assured", 2, assured=True)
        try:
            for qos in (0, 1, 2):
                rows.append(row(f"1 link, assured (persistent by the channel), QoS {qos}",
                                measure(brokers[0], brokers[-1], qos, args.count)))
                print(rows[-1], file=sys.stderr, flush=True)
        finally:
            for proc in brokers:
                proc.stop()
        for hops in ((1,) if args.link_only else (0, 1, 2, 3)):
            brokers = start_chain(Path(tmp) / f"chain{hops}", hops + 1)
            try:
                for qos in ((0, 1, 2) if hops == 1 else (0, 1)):
                    label = "one broker" if hops == 0 else f"{hops} link(s), {hops + 1} brokers"
                    rows.append(row(f"{label}, QoS {qos}", measure(brokers[0], brokers[-1], qos, args.count)))
                    print(rows[-1], file=sys.stderr, flush=True)
            finally:
                for proc in brokers:
                    proc.stop()
        brokers = start_chain(Path(tmp) / "collective", 3, collective=True) if not args.link_only else []
        try:
            for qos in ((0, 1) if brokers else ()):
                # one publisher on B0 and its subscriber on B0, B1 or B2 in turn; every run on a
                # topic of its own, so a backlog of the last run cannot reach this one's subscriber
                for target, name in zip(brokers, ("B0 (local)", "B1", "B2"), strict=True):
                    rows.append(row(f"collective of 3, QoS {qos}, subscriber on {name}",
                                    measure(brokers[0], target, qos, args.count)))
                    print(rows[-1], file=sys.stderr, flush=True)
        finally:
            for proc in brokers:
                proc.stop()
    width = max(len(r["case"]) for r in rows)
    print(f"| {'case':<{width}} | msg/s | unique/expected | dup | p50 ms | p99 ms |")
    print(f"|{'-' * (width + 2)}|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']:<{width}} | {r['msg_per_s']:,} | {r['received']}/{r['expected']} | {r['duplicates']} "
              f"| {r['p50_ms']} | {r['p99_ms']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
