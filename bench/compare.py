"""relaymq beside Mosquitto and amqtt: every scenario of issue 8 against each broker, in one run.

    bench/compare [--quick] [--brokers relaymq,mosquitto,amqtt] [--out bench/results]

(bench/compare is the wrapper that installs what is missing first; this is what it runs.)

Each scenario gets a freshly started broker (own port, own data directory, persistence on:
bench/compare_brokers.py) and the load generator of ``relaymq bench`` (relaymq.bench), so the
three brokers see exactly the same clients. The figures go to a table on stdout with ratios,
to ``compare-<time>.json`` and, when matplotlib is available (bench/compare_chart.py), to a PNG.

It also measures the generator against Mosquitto's own C clients (``mosquitto_pub -l`` into
``mosquitto_sub -C``) in scenario 1, to show the generator is not what limits the figures.

Asserts nothing: the targets are read off the table.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare_brokers import (  # noqa: E402
    BROKERS, USERNAME, amqtt_version, broker_pid, environment, make_broker, mosquitto_version,
    rss_bytes,
)

import relaymq  # noqa: E402
from relaymq import __version__ as relaymq_version  # noqa: E402
from relaymq.bench import BenchSpec, run as run_load  # noqa: E402
from relaymq.bench import scenarios  # noqa: E402

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Sizes:
    """The counts of one run (full or --quick)."""

    one_to_one: int          # messages in scenarios 1-3 (QoS 2 gets half)
    fan_out: int             # messages the publisher of scenario 4 sends (x 100 deliveries)
    fan_in: int              # messages per publisher in scenario 5 (x 100 publishers)
    idle: int                # connections in scenario 6
    retained: int            # topics in scenario 7
    backlog: int             # queued messages in scenarios 8 and 9
    c_clients: int           # messages in the generator check
    repeats: int             # alternations in the generator check

    def scaled(self, factor: float) -> Sizes:
        """Smaller counts of scenarios 7-9 for a slow broker (amqtt); the table labels the
        cells with the count used. The load scenarios (1-5) keep their counts: amqtt's rates
        there are the same at either size except scenario 4, where a small count understates
        it (audit of issue 8), so only full counts compare."""
        def s(n: int) -> int:
            return max(10, int(n * factor))
        return Sizes(self.one_to_one, self.fan_out, self.fan_in, self.idle,
                     s(self.retained), s(self.backlog), self.c_clients, self.repeats)


FULL = Sizes(one_to_one=200_000, fan_out=2_000, fan_in=1_000, idle=10_000, retained=100_000,
             backlog=100_000, c_clients=200_000, repeats=5)
QUICK = Sizes(one_to_one=5_000, fan_out=100, fan_in=20, idle=300, retained=1_000,
              backlog=1_000, c_clients=20_000, repeats=1)


@dataclass(frozen=True)
class Scenario:
    """One row of the table: ``measure(broker, sizes)`` returns {row key: figure dict}.

    ``rate_key``: a figure in msg/s that compares brokers which ran different counts (the
    table then prints that ratio, marked ~); without one, different counts get no ratio."""

    key: str
    title: str
    unit: str
    higher_is_better: bool
    rate_key: str = ""


ROWS: tuple[Scenario, ...] = (
    Scenario("s1", "1 QoS 0, 1 pub -> 1 sub", "msg/s", True),
    Scenario("s2", "2 QoS 1, 1 -> 1, inflight 100, persistent sub", "msg/s", True),
    Scenario("s2c", "2c same, clean sessions (nothing stored)", "msg/s", True),
    Scenario("s3", "3 QoS 2, 1 -> 1, inflight 100, persistent", "msg/s", True),
    Scenario("s4", "4 QoS 0 fan-out 1 -> 100", "msg/s", True),
    Scenario("s5", "5 QoS 1 fan-in 100 -> 1, persistent sub", "msg/s", True),
    Scenario("s6", "6 broker RSS, idle connections", "MB", False),
    Scenario("s7", "7 retained topics: '#' receives all", "s", False, "rate"),
    Scenario("s8", "8 session backlog: reconnect + drain", "s", False, "rate"),
    Scenario("s9", "9 restart with the backlog", "s", False),
)
ROW_BY_KEY = {row.key: row for row in ROWS}


# -- measurements ------------------------------------------------------------------------------


def _notes(lost: int = 0, duplicates: int = 0) -> str:
    """The problems a figure must be read with: losses, and duplicates (which a rate counts)."""
    notes = []
    if lost:
        notes.append(f"lost {lost:,}")
    if duplicates:
        notes.append(f"dup {duplicates:,}")
    return ", ".join(notes)


def _load(broker: Any, **spec: Any) -> dict[str, Any]:
    report = run_load(BenchSpec(host=HOST, port=broker.port, username=USERNAME, **spec),
                      progress=False)
    figures = report.to_dict()
    figures["value"] = report.receive_rate
    figures["count"] = report.sent
    figures["note"] = _notes(report.lost, report.duplicates)
    return figures


#: The generator's processes in the one-publisher, one-subscriber rows (1-3) and in the
#: generator check: both clients in one process. On a 2-core machine a second client process
#: takes CPU from the broker it measures: against Mosquitto, scenario 1 reached 77,000 msg/s
#: with two processes and 92,000 with one, what Mosquitto's C clients reach (92,000). The
#: fan-out and fan-in rows keep one process per core: 100 clients need them.
ONE_TO_ONE = {"processes": 1}


def s1(broker: Any, sizes: Sizes) -> dict[str, Any]:
    return _load(broker, qos=0, count=sizes.one_to_one, **ONE_TO_ONE)


def s2(broker: Any, sizes: Sizes) -> dict[str, Any]:
    """QoS 1 queued for a persistent-session subscriber: the broker's durable path."""
    return _load(broker, qos=1, inflight=100, count=sizes.one_to_one, persistent="sub", **ONE_TO_ONE)


def s2c(broker: Any, sizes: Sizes) -> dict[str, Any]:
    """Scenario 2 with clean sessions: the difference to s2 is what storing costs a broker."""
    return _load(broker, qos=1, inflight=100, count=sizes.one_to_one, **ONE_TO_ONE)


def s3(broker: Any, sizes: Sizes) -> dict[str, Any]:
    """QoS 2 with persistent publisher and subscriber: the inbound QoS 2 state and the
    queued deliveries are both session state a broker keeps."""
    return _load(broker, qos=2, inflight=100, count=max(10, sizes.one_to_one // 2),
                 persistent="all", **ONE_TO_ONE)


def s4(broker: Any, sizes: Sizes) -> dict[str, Any]:
    return _load(broker, qos=0, subscribers=100, count=sizes.fan_out)


def s5(broker: Any, sizes: Sizes) -> dict[str, Any]:
    return _load(broker, qos=1, publishers=100, inflight=100, count=sizes.fan_in,
                 persistent="sub")


def s6(broker: Any, sizes: Sizes) -> dict[str, Any]:
    pid = broker_pid(broker)
    time.sleep(1.0)
    before = rss_bytes(pid)
    with scenarios.IdleConnections(HOST, broker.port, sizes.idle, username=USERNAME) as idle:
        time.sleep(2.0)   # let the broker settle (buffers allocated, sessions created)
        during = rss_bytes(pid)
        connected, errors, seconds = idle.connected, idle.errors, idle.seconds
    per_conn = (during - before) / connected if connected else 0.0
    note = f"{connected:,}/{sizes.idle:,} connected" if connected < sizes.idle else ""
    if errors:
        note += f" ({errors[0]})"
    return {"value": during / 1e6, "rss_before_mb": before / 1e6, "rss_mb": during / 1e6,
            "connected": connected, "kb_per_connection": per_conn / 1024,
            "connect_seconds": seconds, "errors": errors[:5], "note": note.strip()}


def s7(broker: Any, sizes: Sizes) -> dict[str, Any]:
    n = sizes.retained
    stored, timing = scenarios.retained_round_trip(HOST, broker.port, n, username=USERNAME)
    rate = timing.retained / timing.seconds if timing.seconds else 0.0
    notes = [f"got {timing.retained:,}/{n:,}"] if timing.retained < n else []
    notes += [_notes(duplicates=timing.received - timing.unique)] if timing.received > timing.unique else []
    return {"value": timing.seconds, "rate": rate, "count": n, "store_seconds": stored,
            "receive_seconds": timing.seconds, "received": timing.retained,
            "note": ", ".join(notes)}


def s8(broker: Any, sizes: Sizes) -> dict[str, Any]:
    """Queue a backlog for an offline persistent session, then reconnect and drain it."""
    n = sizes.backlog
    client_id, topic = "bench-backlog", "bench/backlog"
    fill = scenarios.queue_backlog(HOST, broker.port, client_id, topic, n, username=USERNAME)
    timing = scenarios.drain_session(HOST, broker.port, client_id, n, username=USERNAME)
    rate = timing.unique / timing.seconds if timing.seconds else 0.0
    notes = [f"got {timing.unique:,}/{n:,}"] if timing.unique < n else []
    notes += [_notes(duplicates=timing.received - timing.unique)] if timing.received > timing.unique else []
    # Both brokers are configured with max_inflight 100; how many messages one read brought
    # unacknowledged shows the window each kept (Mosquitto 2.0.11 was seen past 3,000)
    return {"value": timing.seconds, "rate": rate, "count": n, "fill_seconds": fill,
            "drain_seconds": timing.seconds, "received": timing.received,
            "unique": timing.unique, "largest_burst": timing.largest_burst, "note": ", ".join(notes),
            "info": f"burst {timing.largest_burst:,}"}


def s9(broker: Any, sizes: Sizes) -> dict[str, Any]:
    """Queue the same backlog, stop the broker cleanly, and time from starting it again until
    the session is accepted; then drain, to show how much of the backlog survived."""
    n = sizes.backlog
    client_id, topic = "bench-restart", "bench/restart"
    fill = scenarios.queue_backlog(HOST, broker.port, client_id, topic, n, username=USERNAME)
    broker.stop(timeout=300)
    start = time.monotonic()
    broker.start()
    _, present = scenarios.wait_for_session(HOST, broker.port, client_id, username=USERNAME)
    restart = time.monotonic() - start
    timing = scenarios.drain_session(HOST, broker.port, client_id, n, username=USERNAME,
                                     idle_timeout=10)
    notes = [] if present else ["session lost"]
    if timing.unique < n:
        notes.append(f"{timing.unique:,}/{n:,} survived")
    return {"value": restart, "count": n, "fill_seconds": fill, "session_present": present,
            "survived": timing.unique, "note": ", ".join(notes)}


MEASURES: dict[str, Callable[[Any, Sizes], Any]] = {
    "s1": s1, "s2": s2, "s2c": s2c, "s3": s3, "s4": s4, "s5": s5, "s6": s6, "s7": s7, "s8": s8,
    "s9": s9,
}


class ScenarioTimeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise ScenarioTimeout("scenario timed out")


def run_broker(kind: str, sizes: Sizes, workroot: Path, *, amqtt_binary: str | None,
               timeout: float, only: set[str] | None) -> dict[str, dict[str, Any]]:
    """Every scenario against a fresh broker of ``kind``; failures become notes, not aborts."""
    out: dict[str, dict[str, Any]] = {}
    for name, measure in MEASURES.items():
        keys = name.split("+")
        if only and not (set(keys) & only):
            continue
        workdir = workroot / f"{kind}-{name}"
        broker = make_broker(kind, workdir, amqtt_binary=amqtt_binary)
        print(f"  {kind:9s} {name:6s} ...", end="", flush=True, file=sys.stderr)
        started = time.monotonic()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(timeout))
        try:
            broker.start()
            result = measure(broker, sizes)
            results = result if "value" not in result else {keys[0]: result}
        except BaseException as error:  # noqa: BLE001 - one failure must not end the run
            if isinstance(error, KeyboardInterrupt):
                raise
            reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            results = {key: {"value": None, "note": f"failed: {reason}"} for key in keys}
        finally:
            signal.alarm(0)
            try:
                broker.stop(timeout=60)
            except Exception:  # noqa: BLE001
                broker.kill()
        out.update(results)
        summary = ", ".join(_cell(ROW_BY_KEY[k], results[k]) for k in keys)
        print(f" {summary} ({time.monotonic() - started:.0f}s)", file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


# -- the generator against Mosquitto's C clients ---------------------------------------------


def _wait_subscribed(broker: Any, client_id: str, topic: str, proc: Any,
                     timeout: float = 30.0) -> None:
    """Wait until Mosquitto's log (``log_type subscribe``) shows ``client_id`` subscribed to
    ``topic``: it logs the subscription as it processes the SUBSCRIBE, before the SUBACK. Costs
    the client nothing, unlike ``mosquitto_sub -d``, which also prints a line per message."""
    wanted = f" {client_id} 0 {topic}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(line.endswith(wanted) for line in broker.log_tail(200).splitlines()):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"mosquitto_sub exited with {proc.returncode} before subscribing")
        time.sleep(0.005)
    raise RuntimeError(f"mosquitto_sub did not subscribe within {timeout:.0f}s")


def c_clients_rate(broker: Any, count: int, workdir: Path) -> tuple[float, float]:
    """Messages/s that ``mosquitto_pub -l`` -> ``mosquitto_sub -C`` reach (QoS 0, 64 bytes):
    (stream rate, raw rate).

    The stream rate runs from the first message's arrival to the last's, as seen at the
    subscriber: the time its output file first has data (polled every 0.5 ms) to that file's
    last modification. The raw rate runs from starting the publisher to the subscriber's exit;
    it includes process start, connect and, in ``mosquitto_pub -l`` (2.0), a 100 ms sleep
    while it waits for its CONNACK, so it understates the C clients. The publisher starts
    once the broker has the subscription (no fixed sleep)."""
    pub_bin, sub_bin = shutil.which("mosquitto_pub"), shutil.which("mosquitto_sub")
    if not pub_bin or not sub_bin:
        raise RuntimeError("mosquitto_pub/mosquitto_sub not installed")
    port = broker.port
    topic = f"bench/c/{os.getpid()}"
    sub_id = f"bench-csub-{time.monotonic_ns() % 10**9}"
    output = workdir / f"{sub_id}.out"
    lines = ("x" * 64 + "\n") * count
    with tempfile.TemporaryFile() as feed, output.open("wb") as sink:
        feed.write(lines.encode())
        feed.seek(0)
        sub = subprocess.Popen([sub_bin, "-h", HOST, "-p", str(port), "-t", topic, "-q", "0",
                                "-C", str(count), "-u", USERNAME, "-i", sub_id], stdout=sink)
        pub = None
        first_ns = 0
        try:
            _wait_subscribed(broker, sub_id, topic, sub)
            start = time.monotonic()
            pub = subprocess.Popen([pub_bin, "-h", HOST, "-p", str(port), "-t", topic, "-q", "0",
                                    "-l", "-u", USERNAME], stdin=feed)
            deadline = start + 300
            while sub.poll() is None and time.monotonic() < deadline:
                if not first_ns and os.fstat(sink.fileno()).st_size:
                    first_ns = time.time_ns()
                time.sleep(0.0005 if not first_ns else 0.01)
            sub.wait(timeout=1)
            elapsed = time.monotonic() - start
            pub.wait(timeout=60)
        finally:
            for proc in (sub, pub):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
    last_ns = output.stat().st_mtime_ns
    output.unlink()
    if sub.returncode != 0:
        raise RuntimeError(f"mosquitto_sub exited with {sub.returncode}")
    if not first_ns or last_ns <= first_ns:
        raise RuntimeError("could not time mosquitto_sub's output")
    return count / ((last_ns - first_ns) / 1e9), count / elapsed


def generator_check(sizes: Sizes, workroot: Path) -> dict[str, Any]:
    """Scenario 1 against one Mosquitto: C clients and the generator alternately.

    Both figures are stream rates: from the first message's arrival at the subscriber to the
    last's, so neither includes process start, connect or waits (:func:`c_clients_rate`;
    ``stream_rate`` of relaymq.bench.report). The raw figures are in the JSON. The ratio
    compares the medians of the alternated runs, robust to an outlier either way on a shared
    machine; the best run of each is in the JSON and printed beside it."""
    broker = make_broker("mosquitto", workroot / "generator-check",
                         config={"mosquitto": {"log_type": "subscribe"}})
    c_rates: list[float] = []
    c_raw: list[float] = []
    gen_rates: list[float] = []
    gen_raw: list[float] = []
    print(f"  generator check ({sizes.repeats} x {sizes.c_clients:,} messages each) ...",
          end="", flush=True, file=sys.stderr)
    with broker:
        for _ in range(sizes.repeats):
            rate, raw = c_clients_rate(broker, sizes.c_clients, workroot)
            c_rates.append(rate)
            c_raw.append(raw)
            figures = _load(broker, qos=0, count=sizes.c_clients, **ONE_TO_ONE)
            gen_rates.append(figures["stream_rate"])
            gen_raw.append(figures["receive_rate"])
    c_med, g_med = statistics.median(c_rates), statistics.median(gen_rates)
    ratio = g_med / c_med if c_med else 0.0
    c_best, g_best = max(c_rates), max(gen_rates)
    print(f" C clients {c_med:,.0f} msg/s, generator {g_med:,.0f} msg/s ({ratio:.0%})",
          file=sys.stderr)
    return {"c_clients_rates": c_rates, "c_clients_raw_rates": c_raw,
            "generator_rates": gen_rates, "generator_receive_rates": gen_raw,
            "c_clients": c_med, "generator": g_med, "ratio": ratio, "best_c_clients": c_best,
            "best_generator": g_best, "best_ratio": g_best / c_best if c_best else 0.0,
            "count": sizes.c_clients}


# -- output ------------------------------------------------------------------------------------


def _fmt(row: Scenario, value: float | None) -> str:
    if value is None:
        return "-"
    if row.unit == "msg/s":
        return f"{value:,.0f}"
    if row.unit == "MB":
        return f"{value:,.1f}"
    return f"{value:,.2f}"


def _cell(row: Scenario, figures: dict[str, Any] | None, full_count: int | None = None) -> str:
    """The figure, labelled with its count when it ran fewer than the row's others, its
    notes (losses, duplicates, failures) and what helps to read it (``info``: row 8's burst)."""
    if not figures:
        return "n/a"
    text = _fmt(row, figures.get("value"))
    extras = []
    count = figures.get("count")
    if full_count and count and count < full_count:
        extras.append(f"n={count:,}")
    if figures.get("note"):
        extras.append(figures["note"])
    if figures.get("info"):
        extras.append(figures["info"])
    return f"{text} ({'; '.join(extras)})" if extras else text


def advantage(row: Scenario, ours: float | None, theirs: float | None) -> float | None:
    """How many times better relaymq is (> 1: relaymq better), whatever the row's direction."""
    if not ours or not theirs:
        return None
    return ours / theirs if row.higher_is_better else theirs / ours


def ratio_cell(row: Scenario, ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """relaymq's advantage over one broker in one row, as the table prints it.

    Same count: the ratio of the figures. Different counts (a scaled amqtt run): the ratio of
    the per-message rates, marked ~, when the row has one; otherwise none ("n differs"): a
    restart time with 10,000 messages says nothing about one with 100,000. ``*``: a figure of
    the pair has a note."""
    flag = "*" if ours.get("note") or theirs.get("note") else ""
    if ours.get("count") and theirs.get("count") and ours["count"] != theirs["count"]:
        if not row.rate_key:
            return "n differs"
        adv = advantage(Scenario("", "", "msg/s", True), ours.get(row.rate_key),
                        theirs.get(row.rate_key))
        return "-" if adv is None else f"~{adv:.2f}x{flag}"
    adv = advantage(row, ours.get("value"), theirs.get("value"))
    return "-" if adv is None else f"{adv:.2f}x{flag}"


def table(results: dict[str, dict[str, dict[str, Any]]], brokers: list[str]) -> str:
    others = [b for b in brokers if b != "relaymq"]
    header = ["scenario", "unit"] + brokers + ([f"vs {b}" for b in others] if "relaymq" in brokers else [])
    rows = [header]
    for row in ROWS:
        figures = {kind: results.get(kind, {}).get(row.key) for kind in brokers}
        if not any(figures.values()):
            continue   # a row not run (--scenarios)
        full = max((f.get("count") or 0 for f in figures.values() if f), default=0)
        cells = [row.title, row.unit]
        for kind in brokers:
            cells.append(_cell(row, figures[kind], full))
        if "relaymq" in brokers:
            for kind in others:
                cells.append(ratio_cell(row, figures["relaymq"] or {}, figures[kind] or {}))
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                               for i, c in enumerate(r)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="relaymq beside Mosquitto and amqtt (issue 8)")
    ap.add_argument("--quick", action="store_true", help="small counts: a smoke run of minutes")
    ap.add_argument("--brokers", default=",".join(BROKERS), help="comma-separated subset")
    ap.add_argument("--scenarios", default="", help="only these rows, e.g. s1,s2,s6")
    ap.add_argument("--amqtt", default=os.environ.get("RELAYMQ_AMQTT", ""),
                    help="the amqtt executable (bench/compare installs one)")
    ap.add_argument("--amqtt-scale", type=float, default=0.1,
                    help="amqtt's counts in scenarios 7-9 x this (default 0.1; the table "
                         "labels them n=...); scenarios 1-6 always run at full counts")
    ap.add_argument("--plot-python", default=os.environ.get("RELAYMQ_PLOT_PYTHON", ""),
                    help="a python with matplotlib for the PNG chart")
    ap.add_argument("--no-generator-check", action="store_true")
    ap.add_argument("--timeout", type=float, default=0, help="seconds per scenario and broker")
    ap.add_argument("--out", default=str(HERE / "results"), help="directory for JSON and PNG")
    args = ap.parse_args(argv)

    scenarios.raise_fd_limit()   # brokers started from here inherit it
    # A relaymq installed by pip has its bytecode compiled. From a checkout with
    # PYTHONDONTWRITEBYTECODE set (the development machine's environment does), each start would
    # compile every module again, and row 9 would time the compiler, not the start.
    compileall.compile_dir(str(Path(relaymq.__file__).parent), quiet=1)
    # and the methods of its dataclasses, which an installed broker keeps after its first start
    # (relaymq.dataclass_code): in a process of its own, which imports every module
    source = str(Path(relaymq.__file__).parents[1])  # the relaymq this run measures
    subprocess.run([sys.executable, "-c", "from relaymq.dataclass_code import keep_package; keep_package()"],
                   check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])})
    sizes = QUICK if args.quick else FULL
    timeout = args.timeout or (180 if args.quick else 900)
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = set(brokers) - set(BROKERS)
    if unknown:
        ap.error(f"unknown broker(s): {', '.join(sorted(unknown))}")
    only = {s.strip() for s in args.scenarios.split(",") if s.strip()} or None
    amqtt_binary = args.amqtt or shutil.which("amqtt")
    if amqtt_binary and os.sep in amqtt_binary:
        amqtt_binary = os.path.abspath(amqtt_binary)   # brokers run in their own directories
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    workroot = Path(tempfile.mkdtemp(prefix="relaymq-compare-"))
    started = time.time()
    versions = {"relaymq": relaymq_version, "mosquitto": mosquitto_version(),
                "amqtt": amqtt_version(amqtt_binary)}
    print(f"relaymq {versions['relaymq']}, {versions['mosquitto']}, amqtt {versions['amqtt']}; "
          f"{'quick' if args.quick else 'full'} run; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs", file=sys.stderr)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    sizes_used: dict[str, dict[str, int]] = {}
    try:
        check = None
        if not args.no_generator_check and "mosquitto" in brokers:
            try:
                check = generator_check(sizes, workroot)
            except Exception as error:  # noqa: BLE001
                check = {"error": f"{type(error).__name__}: {error}"}
                print(f" failed: {check['error']}", file=sys.stderr)
        for kind in brokers:
            kind_sizes = sizes.scaled(args.amqtt_scale) if kind == "amqtt" else sizes
            sizes_used[kind] = kind_sizes.__dict__
            results[kind] = run_broker(kind, kind_sizes, workroot, amqtt_binary=amqtt_binary,
                                       timeout=timeout, only=only)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    text = table(results, brokers)
    print()
    print(text)
    if check and "ratio" in check:
        print(f"\ngenerator check (scenario 1 against Mosquitto, median of {sizes.repeats}): "
              f"mosquitto_pub -l -> mosquitto_sub -C {check['c_clients']:,.0f} msg/s, "
              f"relaymq bench {check['generator']:,.0f} msg/s = {check['ratio']:.0%} "
              f"({'OK' if check['ratio'] >= 0.9 else 'BELOW'} the 90% bar; best runs: "
              f"{check['best_ratio']:.0%}); both timed at the subscriber, first message "
              f"received to last")
    if "*" in text:
        print("* a figure of this pair has a note (losses, a lost backlog, a failure): the ratio "
              "compares what arrived; read the note first")
    if "~" in text:
        print("~ the brokers ran different counts (n=...): the ratio is of the per-message rates "
              "(msg/s, in the JSON)")
    if "n differs" in text:
        print("n differs: a restart time with a smaller backlog is not compared")
    doc = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "seconds": time.time() - started, "quick": args.quick, "versions": versions,
           "environment": environment(), "sizes": sizes_used, "generator_check": check,
           "rows": [row.__dict__ for row in ROWS], "results": results, "table": text}
    json_path = out_dir / f"compare-{stamp}.json"
    json_path.write_text(json.dumps(doc, indent=2, default=str))
    print(f"\nJSON: {json_path}")
    png_path = out_dir / f"compare-{stamp}.png"
    plot_python = args.plot_python or sys.executable
    plotted = subprocess.run([plot_python, str(HERE / "compare_chart.py"), str(json_path),
                              str(png_path)], capture_output=True, text=True)
    if plotted.returncode == 0:
        print(f"chart: {png_path}")
    else:
        print(f"chart: not drawn ({(plotted.stderr.strip().splitlines() or ['?'])[-1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
