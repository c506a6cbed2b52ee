"""Scale curves: throughput and p99 latency as the work grows, relaymq beside Mosquitto.

    bench/scale [--curves subscriptions,connections,retained,payload] [--brokers relaymq,mosquitto]
                [--quick] [--out bench/results/scale]

(bench/scale is the wrapper that installs what is missing first, as bench/compare does; this is
what it runs.) Each point of a curve gets a freshly started broker with the settings of
bench/compare (bench/compare_brokers.py: persistence on, same limits), the background work of
that point, then the measured stream:

* **the stream**: QoS 1, one publisher -> one clean-session subscriber, inflight 100. Its
  throughput is measured flat out; its p99 latency paced at 1,000 msg/s (fewer for big
  payloads) with the subscriber reading at once (``read_pause`` 0), so that the latency says
  what one message waits, not how long a queue is.
* **subscriptions** 1k / 10k / 100k / 1M held by idle clients (100,000 each), wildcards mixed:
  a quarter each of ``+/<i>/x``, ``scale/<i>/#``, ``scale/+/n<i>`` and ``scale/t/0/<i>``; none
  matches the stream's topic ``scale/t/0``, so every one is work the broker's matching must
  not do per publication.
* **connections** 1k / 10k / 50k idle MQTT connections (keep-alive 0) beside the stream; the
  open-file limit is raised first (:func:`lift_fd_limit`); where it cannot go past 50,000,
  the last point is the largest number that fits (:func:`fitting`).
* **retained** 10k / 100k / 1M retained topics: the rate they are stored at, and the rate at
  which a ``#`` subscriber receives them all (p99 does not apply).
* **payload** 64 B to 1 MB: the stream with that payload (fewer messages as they grow).

Each point also records the broker's RSS once the background work is in place, and the load
average after it. The brokers take turns at each point (relaymq, then Mosquitto, then the next
point), so the two figures of a point were measured within a minute of each other. Results go to
``scale-<time>.json`` in ``--out`` and, with matplotlib (``--plot-python``), one PNG per curve.
Asserts nothing: the curves are read off the figures (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare_brokers import (  # noqa: E402
    COMMON_CONFIG, RELAYMQ_PORTS, USERNAME, broker_pid, environment, make_broker, rss_bytes,
)

from relaymq.bench import BenchSpec, run as run_load, scenarios  # noqa: E402
from relaymq.bench.client import Connection  # noqa: E402
from relaymq.bench.wire import subscribe_many_packet  # noqa: E402

HOST = "127.0.0.1"
STREAM_TOPIC = "scale/t"          # the publisher cycles over STREAM_TOPIC/0 (topics=1)
FILTERS_PER_CLIENT = 100_000
FILTERS_PER_PACKET = 100
SUBACKS_IN_FLIGHT = 20
#: The relaymq settings a scale point needs beyond bench/compare's, each to Mosquitto's default:
#: no cap on the listener's connections (relaymq's default, 20,000, stops the 50,000 point) and
#: no byte limit on a session's queue. With relaymq's default (64 MiB), the stream at 1 MB with
#: 100 in flight fills the subscriber's session and its publisher is held back until it drains
#: (62 msg/s against 212 without the limit, one run): that measures the limit, not the broker.
RELAYMQ_SCALE = {"listener": [{**RELAYMQ_PORTS["listener"][0], "max_connections": -1}],
                 "limits": {**COMMON_CONFIG["limits"], "max_queued_bytes": 0}}


@dataclass(frozen=True)
class Curve:
    """One curve: its points (x values), what x counts, and how a point is measured."""

    key: str
    title: str
    x_label: str
    points: tuple[int, ...]
    quick: tuple[int, ...]


CURVES: tuple[Curve, ...] = (
    Curve("subscriptions", "subscriptions held (wildcards mixed)", "subscriptions",
          (1_000, 10_000, 100_000, 1_000_000), (1_000, 10_000)),
    Curve("connections", "idle connections beside the stream", "connections",
          (1_000, 10_000, 50_000), (1_000,)),
    Curve("retained", "retained topics, '#' receives all", "retained topics",
          (10_000, 100_000, 1_000_000), (10_000,)),
    Curve("payload", "payload size", "payload (bytes)",
          (64, 1_024, 16_384, 262_144, 1_048_576), (64, 65_536)),
)
CURVE_BY_KEY = {curve.key: curve for curve in CURVES}


# -- the measured stream ---------------------------------------------------------------------


def stream(broker: Any, payload: int = 64, quick: bool = False) -> dict[str, Any]:
    """The stream's throughput (flat out) and p99 latency (paced)."""
    budget = 5_000_000 if quick else 50_000_000          # bytes carried by the flat-out run
    count = max(100, min(5_000 if quick else 50_000, budget // payload))
    base = {"host": HOST, "port": broker.port, "username": USERNAME, "qos": 1, "inflight": 100,
            "payload_size": payload, "topic": STREAM_TOPIC, "processes": 1}
    flat = run_load(BenchSpec(count=count, **base), progress=False)
    rate = min(1_000.0, 20_000_000 / payload)            # at most 20 MB/s while pacing
    paced = run_load(BenchSpec(count=max(50, int(rate * (1 if quick else 3))), rate=rate, read_pause=0,
                               **base), progress=False)
    p99 = paced.latency_us.get("p99")
    return {"throughput": flat.receive_rate, "count": flat.sent, "lost": flat.lost,
            "p99_ms": None if p99 is None else p99 / 1000, "paced_rate": rate,
            "p50_ms": None if paced.latency_us.get("p50") is None else paced.latency_us["p50"] / 1000}


# -- background work -------------------------------------------------------------------------


def scale_filters(count: int) -> Iterator[str]:
    """``count`` topic filters, wildcards mixed, none matching the stream's topic."""
    shapes = ("+/{i}/x", "scale/{i}/#", "scale/+/n{i}", "scale/t/0/{i}")
    for i in range(count):
        yield shapes[i % 4].format(i=i // 4)


async def _subscribe_all(conn: Connection, filters: list[str]) -> None:
    """Send ``filters`` in SUBSCRIBE packets of FILTERS_PER_PACKET, SUBACKS_IN_FLIGHT at a time."""
    packets = [filters[i:i + FILTERS_PER_PACKET] for i in range(0, len(filters), FILTERS_PER_PACKET)]
    sent = acked = 0
    while acked < len(packets):
        while sent < len(packets) and sent - acked < SUBACKS_IN_FLIGHT:
            conn.writer.write(subscribe_many_packet(packets[sent], 0, conn.level, sent % 65535 + 1))
            sent += 1
        first, _ = await conn.read_packet()
        if first >> 4 == 9:
            acked += 1


class HeldSubscriptions:
    """``with HeldSubscriptions(port, n):`` n subscriptions held by idle clients (a thread
    with its own event loop keeps them connected until the block ends)."""

    def __init__(self, port: int, total: int) -> None:
        self.port, self.total = port, total
        self.seconds = 0.0
        self._ready = threading.Event()
        self._release: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._release = asyncio.Event()
            filters = list(scale_filters(self.total))
            start = time.monotonic()
            conns = []
            try:
                for n, first in enumerate(range(0, len(filters), FILTERS_PER_CLIENT)):
                    conn = await Connection.open(HOST, self.port, f"scale-subs-{n}", username=USERNAME)
                    conns.append(conn)
                    await _subscribe_all(conn, filters[first:first + FILTERS_PER_CLIENT])
                self.seconds = time.monotonic() - start
            except BaseException as error:  # noqa: BLE001 - reported by __enter__
                self._error = error
            self._ready.set()
            await self._release.wait()
            for conn in conns:
                await conn.close()

        asyncio.run(main())

    def __enter__(self) -> HeldSubscriptions:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self.__exit__()
            raise RuntimeError(f"could not subscribe: {self._error}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)
        self._thread.join(60)


def lift_fd_limit(wanted: int = 200_000) -> int:
    """Raise the open-file limit so that 50,000 connections fit in the broker and in the
    generator (each connection is a descriptor on both sides; brokers started afterwards
    inherit it). The hard limit can only be raised with the privilege to (root here: the
    machine's hard limit is 20,000); otherwise the soft limit goes up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
        except (ValueError, OSError):
            pass
    return scenarios.raise_fd_limit()


#: Descriptors a broker needs beside its connections (database, listeners, the stream).
FD_MARGIN = 1_000


def fitting(points: list[int], limit: int) -> list[int]:
    """The connection points the open-file limit allows: a point above it becomes the largest
    that fits (said on stderr), since the broker holds one descriptor per connection."""
    most = limit - FD_MARGIN
    fitted = sorted({min(x, most) for x in points})
    if fitted != sorted(points):
        print(f"scale: the open-file limit is {limit:,} and cannot be raised here, so the largest"
              f" connection point is {most:,}", file=sys.stderr)
    return fitted


# -- one point of each curve -----------------------------------------------------------------


def point_subscriptions(broker: Any, n: int, quick: bool) -> dict[str, Any]:
    with HeldSubscriptions(broker.port, n) as held:
        figures = {"rss_mb": rss_bytes(broker_pid(broker)) / 1e6, "setup_seconds": held.seconds}
        figures.update(stream(broker, quick=quick))
    return figures


def point_connections(broker: Any, n: int, quick: bool) -> dict[str, Any]:
    with scenarios.IdleConnections(HOST, broker.port, n, username=USERNAME) as idle:
        if idle.connected < n:
            raise RuntimeError(f"{idle.connected:,}/{n:,} connected: {idle.errors[:2]}")
        figures = {"rss_mb": rss_bytes(broker_pid(broker)) / 1e6, "setup_seconds": idle.seconds}
        figures.update(stream(broker, quick=quick))
    return figures


def point_retained(broker: Any, n: int, quick: bool) -> dict[str, Any]:
    stored, timing = scenarios.retained_round_trip(HOST, broker.port, n, username=USERNAME)
    return {"throughput": timing.retained / timing.seconds if timing.seconds else 0.0,
            "store_rate": n / stored if stored else 0.0, "received": timing.retained,
            "lost": n - timing.retained, "rss_mb": rss_bytes(broker_pid(broker)) / 1e6}


def point_payload(broker: Any, n: int, quick: bool) -> dict[str, Any]:
    figures = stream(broker, payload=n, quick=quick)
    figures["rss_mb"] = rss_bytes(broker_pid(broker)) / 1e6
    return figures


POINTS: dict[str, Callable[[Any, int, bool], dict[str, Any]]] = {
    "subscriptions": point_subscriptions, "connections": point_connections,
    "retained": point_retained, "payload": point_payload,
}


def measure_point(kind: str, curve: Curve, x: int, workroot: Path, quick: bool) -> dict[str, Any]:
    """One point against a fresh broker; a failure becomes a note, not an abort."""
    workdir = workroot / f"{kind}-{curve.key}-{x}"
    broker = make_broker(kind, workdir, config=RELAYMQ_SCALE if kind == "relaymq" else None)
    started = time.monotonic()
    try:
        broker.start()
        figures = POINTS[curve.key](broker, x, quick)
    except Exception as error:  # noqa: BLE001 - one failure must not end the run
        figures = {"throughput": None, "note": f"failed: {type(error).__name__}: {error}"}
    finally:
        try:
            broker.stop(timeout=120)
        except Exception:  # noqa: BLE001
            broker.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    figures["seconds"] = time.monotonic() - started
    return figures


def _cell(figures: dict[str, Any]) -> str:
    if figures.get("throughput") is None:
        return figures.get("note", "n/a")
    text = f"{figures['throughput']:,.0f} msg/s"
    if figures.get("p99_ms") is not None:
        text += f", p99 {figures['p99_ms']:.2f} ms"
    if figures.get("lost"):
        text += f", lost {figures['lost']:,}"
    return text + f", {figures.get('rss_mb', 0):.0f} MB"


def growth(points: list[dict[str, Any]]) -> str:
    """How the cost per message grew from the curve's first point to its last, beside how the
    work grew: '1,000x the work, 1.3x the cost per message'."""
    done = [p for p in points if p["figures"].get("throughput")]
    if len(done) < 2:
        return ""
    first, last = done[0], done[-1]
    cost = first["figures"]["throughput"] / last["figures"]["throughput"]
    return f"{last['x'] / first['x']:,.0f}x the work, {cost:.2f}x the time per message"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curves", default=",".join(CURVE_BY_KEY),
                        help=f"comma-separated, from {', '.join(CURVE_BY_KEY)} (default: all)")
    parser.add_argument("--brokers", default="relaymq,mosquitto", help="relaymq and/or mosquitto")
    parser.add_argument("--quick", action="store_true", help="the small points only (a smoke run)")
    parser.add_argument("--points", default="", help="override the x values of every chosen curve, e.g. 1000,5000")
    parser.add_argument("--out", default=str(HERE / "results" / "scale"), help="where JSON and PNG go")
    parser.add_argument("--plot-python", default="", help="a Python with matplotlib, for the PNGs")
    args = parser.parse_args()
    chosen = [c.strip() for c in args.curves.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CURVE_BY_KEY]
    if unknown:
        parser.error(f"unknown curve(s) {', '.join(unknown)}; choose from {', '.join(CURVE_BY_KEY)}")
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not set(brokers) <= {"relaymq", "mosquitto"}:
        parser.error("--brokers takes relaymq and/or mosquitto")
    limit = lift_fd_limit()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    doc: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "quick": args.quick,
                           "environment": environment(), "curves": {}}
    workroot = out / f".work-{stamp}"
    for key in chosen:
        curve = CURVE_BY_KEY[key]
        xs = [int(x) for x in args.points.split(",")] if args.points else list(curve.quick if args.quick else curve.points)
        if key == "connections":
            xs = fitting(xs, limit)
        entry: dict[str, Any] = {"title": curve.title, "x_label": curve.x_label, "brokers": {}}
        doc["curves"][key] = entry
        points: dict[str, list[dict[str, Any]]] = {kind: [] for kind in brokers}
        for x in xs:   # the brokers take turns at each point, so a pair shares the machine's state
            for kind in brokers:
                print(f"  {key:13s} {kind:9s} {x:>9,} ...", end="", flush=True, file=sys.stderr)
                figures = measure_point(kind, curve, x, workroot, args.quick)
                figures["load_average"] = os.getloadavg()[0]
                print(f" {_cell(figures)} ({figures['seconds']:.0f}s)", file=sys.stderr)
                points[kind].append({"x": x, "figures": figures})
        for kind, kept in points.items():
            entry["brokers"][kind] = {"points": kept, "growth": growth(kept)}
        path = out / f"scale-{stamp}.json"
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")   # after every curve
    shutil.rmtree(workroot, ignore_errors=True)
    print(f"results: {path}")
    for key, entry in doc["curves"].items():
        for kind, data in entry["brokers"].items():
            print(f"{key:13s} {kind:9s} " + " | ".join(f"{p['x']:,}: {_cell(p['figures'])}" for p in data["points"]))
            if data["growth"]:
                print(f"{'':13s} {'':9s} {data['growth']}")
    if args.plot_python:
        subprocess.run([args.plot_python, str(HERE / "scale_chart.py"), str(path)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
