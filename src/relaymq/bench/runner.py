"""``relaymq bench`` load runs: publishers and subscribers spread over worker processes.

Why processes: one Python process saturates one core long before a broker does, so the clients
are dealt round-robin over ``processes`` workers (multiprocessing), each running its share on
one asyncio loop (uvloop when installed). The parent only coordinates: it waits until every
client is connected and subscribed, releases them together, shows progress from shared
counters, tells the subscribers how many messages to expect once the publishers are done, and
merges the workers' figures into one :class:`relaymq.bench.report.RunReport`.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import resource
import sys
import time
import uuid
from array import array
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TextIO

from relaymq.bench.client import DEFAULT_READ_PAUSE, BenchError, Connection
from relaymq.bench.report import RunReport
from relaymq.bench.wire import STAMP_SIZE, PublishTemplates, ReceiveTally

#: Latency samples kept over all subscribers of a run (each subscriber keeps its share).
RUN_LATENCY_SAMPLES = 2_000_000
#: Who gets persistent sessions (``--persistent``): nobody, subscribers, publishers, all.
PERSISTENT_CHOICES = ("", "sub", "pub", "all")


@dataclass
class BenchSpec:
    """Everything that defines a load run (the ``relaymq bench`` options)."""

    host: str = "127.0.0.1"
    port: int = 1883
    #: The subscribers' broker when it is another one than the publishers' (a broker network:
    #: bench/bench_network.py); None: the same.
    sub_port: int | None = None
    publishers: int = 1
    subscribers: int = 1
    qos: int = 0
    sub_qos: int | None = None        # None: same as qos
    protocol: int = 4                 # MQTT protocol level: 4 (3.1.1) or 5
    payload_size: int = 64
    inflight: int = 100               # QoS 1/2 window per publisher
    rate: float = 0.0                 # total messages/s over all publishers; 0 = flat out
    count: int | None = 10_000        # messages per publisher (None: use duration)
    duration: float | None = None     # seconds of publishing (when count is None)
    topic: str = ""                   # topic prefix; "" = bench/<random>
    topics: int = 1                   # publishers cycle over topic/0..topics-1
    retain: bool = False
    processes: int = 0                # 0: one per core, at most one per client
    drain_timeout: float = 5.0        # stop waiting after this long without a delivery
    read_pause: float = DEFAULT_READ_PAUSE  # s a QoS 0 subscriber waits after a small read
    connect_timeout: float = 30.0
    client_prefix: str = ""           # client ids PREFIX-s0.., PREFIX-p0..; "" = bench-<random>
    persistent: str = ""              # persistent sessions for: "" none, "sub", "pub" or "all"
    session_expiry: int | None = None  # MQTT 5 Session Expiry Interval of persistent sessions
    username: str | None = None
    password: str | None = None

    def resolved(self) -> BenchSpec:
        """A copy with defaults filled in and the options checked (ValueError on bad ones)."""
        spec = BenchSpec(**self.__dict__)
        for wrong, error in _SPEC_CHECKS:
            if wrong(spec):
                raise ValueError(error)
        spec.sub_qos = spec.qos if spec.sub_qos is None else spec.sub_qos
        tag = uuid.uuid4().hex[:8]
        spec.topic = spec.topic or f"bench/{tag}"
        spec.client_prefix = spec.client_prefix or f"bench-{tag}"
        clients = spec.publishers + spec.subscribers
        spec.processes = max(1, min(spec.processes or (os.cpu_count() or 1), clients))
        return spec

    @property
    def persistent_subscribers(self) -> bool:
        return self.persistent in ("sub", "all")

    @property
    def persistent_publishers(self) -> bool:
        return self.persistent in ("pub", "all")

    def topic_names(self) -> list[str]:
        return [f"{self.topic}/{k}" for k in range(self.topics)]

    @property
    def topic_filter(self) -> str:
        return f"{self.topic}/#"


#: The checks of a BenchSpec's options: (what is wrong, the error it raises), in order.
_SPEC_CHECKS: tuple[tuple[Callable[[BenchSpec], bool], str], ...] = (
    (lambda s: s.qos not in (0, 1, 2) or (s.sub_qos is not None and s.sub_qos not in (0, 1, 2)),
     "QoS must be 0, 1 or 2"),
    (lambda s: s.protocol not in (4, 5), "protocol level must be 4 or 5"),
    (lambda s: s.payload_size < STAMP_SIZE, f"payload size must be at least {STAMP_SIZE} bytes"),
    (lambda s: s.publishers < 0 or s.subscribers < 0 or s.publishers + s.subscribers == 0,
     "need at least one publisher or subscriber"),
    (lambda s: s.count is None and s.duration is None, "give a message count or a duration"),
    (lambda s: s.count is not None and s.count < 0, "count must be >= 0"),
    (lambda s: s.inflight < 1 or s.topics < 1, "inflight and topics must be >= 1"),
    (lambda s: not 0 <= s.read_pause <= 0.1, "read pause must be between 0 and 100 ms"),
    (lambda s: s.persistent not in PERSISTENT_CHOICES,
     f"persistent must be one of {', '.join(PERSISTENT_CHOICES[1:])}"),
    (lambda s: s.session_expiry is not None and not 0 < s.session_expiry <= 0xFFFFFFFF,
     "session expiry must be 1..4294967295 seconds"),
)


@dataclass
class _Shared:
    """Objects the parent shares with every worker."""

    ready: Any
    start: Any
    stop: Any
    start_ns: Any
    expected: Any                       # deliveries per subscriber; 0 = not known yet
    publishers_done: Any                # publishers that have sent (and had acked) everything
    sent: Any                           # per worker
    received: Any                       # per worker
    results: Any


@dataclass
class _WorkerResult:
    worker: int
    error: str | None = None
    sent: int = 0
    completed: int = 0
    refused: int = 0
    pub_end_ns: int = 0
    received: int = 0
    unique: int = 0
    duplicates: int = 0
    recv_start_ns: int = 0
    recv_end_ns: int = 0
    latencies: bytes = b""
    subs_done: bool = False
    role: str = ""
    cpu_seconds: float = 0.0


def _deal(spec: BenchSpec) -> list[tuple[list[int], list[int]]]:
    """(publisher indices, subscriber indices) per worker: subscribers first, round-robin."""
    shares: list[tuple[list[int], list[int]]] = [([], []) for _ in range(spec.processes)]
    k = 0
    for s in range(spec.subscribers):
        shares[k % spec.processes][1].append(s)
        k += 1
    for p in range(spec.publishers):
        shares[k % spec.processes][0].append(p)
        k += 1
    return shares


def _worker_entry(spec: BenchSpec, worker: int, pubs: list[int], subs: list[int],
                  shared: _Shared) -> None:
    """Process entry point: run this worker's clients and put one _WorkerResult."""
    runner: Callable[[Coroutine[Any, Any, None]], None]
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is optional
        runner = asyncio.run
    try:
        runner(_worker(spec, worker, pubs, subs, shared))   # puts its own result
    except BaseException as error:  # report, never hang the parent
        shared.results.put(_WorkerResult(worker, error=f"{type(error).__name__}: {error}"))
        with shared.ready.get_lock():
            shared.ready.value += 1_000_000  # wake the parent's readiness wait


async def _worker(spec: BenchSpec, worker: int, pubs: list[int], subs: list[int],
                  shared: _Shared) -> _WorkerResult:
    password = spec.password.encode() if spec.password is not None else None

    async def open_client(name: str, persistent: bool, port: int = spec.port) -> Connection:
        return await Connection.open_session(
            spec.host, port, f"{spec.client_prefix}-{name}", spec.protocol,
            persistent=persistent, session_expiry=spec.session_expiry, username=spec.username,
            password=password, timeout=spec.connect_timeout)

    sub_conns = list(await asyncio.gather(
        *(open_client(f"s{i}", spec.persistent_subscribers, spec.sub_port or spec.port) for i in subs)))
    for conn in sub_conns:
        await conn.subscribe(spec.topic_filter, spec.sub_qos or 0, spec.connect_timeout)
    pub_conns = list(await asyncio.gather(
        *(open_client(f"p{i}", spec.persistent_publishers) for i in pubs)))
    templates = PublishTemplates(spec.topic_names(), spec.payload_size, spec.qos, spec.protocol,
                                 spec.retain)
    with shared.ready.get_lock():
        shared.ready.value += len(subs) + len(pubs)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, shared.start.wait)
    start_ns = shared.start_ns.value
    deadline = None if spec.duration is None else start_ns + int(spec.duration * 1e9)
    rate = spec.rate / spec.publishers if spec.rate and spec.publishers else 0.0
    result = _WorkerResult(worker)
    sent_slot = shared.sent
    recv_slot = shared.received
    totals = {"sent": 0, "received": 0}

    def sent_progress(n: int) -> None:
        totals["sent"] += n
        sent_slot[worker] = totals["sent"]

    def recv_progress(n: int) -> None:
        totals["received"] += n
        recv_slot[worker] = totals["received"]

    async def run_publisher(index: int, conn: Connection) -> None:
        res = await conn.publish(templates, index, count=spec.count, deadline_ns=deadline,
                                 window=spec.inflight, rate=rate, progress=sent_progress)
        result.sent += res.sent
        result.completed += res.completed
        result.refused += res.refused
        result.pub_end_ns = max(result.pub_end_ns, res.end_ns)
        with shared.publishers_done.get_lock():
            shared.publishers_done.value += 1

    tallies = [ReceiveTally() for _ in subs]

    def done(tally: ReceiveTally) -> bool:
        # runs once per received chunk: a plain shared value, no lock (the stop event's
        # is_set takes semaphores, so the receive watchdog polls it instead)
        expected = shared.expected.value
        return expected > 0 and tally.unique >= expected

    async def run_subscriber(conn: Connection, tally: ReceiveTally) -> None:
        await conn.receive(tally, done, progress=recv_progress, stop=shared.stop.is_set,
                           read_pause=spec.read_pause)

    sub_tasks = [asyncio.create_task(run_subscriber(c, t)) for c, t in zip(sub_conns, tallies, strict=False)]
    await asyncio.gather(*(run_publisher(i, c) for i, c in zip(pubs, pub_conns, strict=False)))
    await asyncio.gather(*sub_tasks)
    result.subs_done = True
    per_sub = max(1000, RUN_LATENCY_SAMPLES // max(1, spec.subscribers))
    samples = array("q")
    for tally in tallies:
        result.received += tally.received
        result.unique += tally.unique
        result.duplicates += tally.duplicates
        result.recv_end_ns = max(result.recv_end_ns, tally.last_ns)
        if tally.first_ns:
            result.recv_start_ns = min(result.recv_start_ns or tally.first_ns, tally.first_ns)
        lat = tally.latencies_us
        step = max(1, -(-len(lat) // per_sub))
        samples.extend(lat[::step] if step > 1 else lat)
    result.latencies = samples.tobytes()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.cpu_seconds = usage.ru_utime + usage.ru_stime
    result.role = "+".join(r for r, n in (("sub", len(subs)), ("pub", len(pubs))) if n)
    shared.results.put(result)
    # Stay connected until the whole run is over: some brokers (amqtt) drop what a publisher
    # sent, even acknowledged QoS 1, when it disconnects before the delivery is done.
    await loop.run_in_executor(None, shared.stop.wait)
    # persistent sessions are removed again: the broker is left as the run found it
    await asyncio.gather(*(c.end_session() for c in sub_conns + pub_conns),
                         return_exceptions=True)
    return result


class Progress:
    """A one-line progress display on a stream (rewritten in place with a carriage return)."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.last = (0, 0, time.monotonic())

    def show(self, elapsed: float, sent: int, received: int) -> None:
        if not self.enabled:
            return
        s0, r0, t0 = self.last
        now = time.monotonic()
        dt = max(now - t0, 1e-6)
        self.stream.write(f"\r[{elapsed:6.1f}s] sent {sent:>12,} ({(sent - s0) / dt:>10,.0f}/s)"
                          f"  received {received:>12,} ({(received - r0) / dt:>10,.0f}/s) ")
        self.stream.flush()
        self.last = (sent, received, now)

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def run(spec: BenchSpec, *, progress: bool | None = None, stream: TextIO | None = None,
        ) -> RunReport:
    """Run one load; returns the merged report. Raises BenchError when a worker fails.

    ``progress``: None = only when ``stream`` (default stderr) is a terminal."""
    spec = spec.resolved()
    stream = stream or sys.stderr
    show = Progress(stream, stream.isatty() if progress is None else progress)
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
    shared = _Shared(
        ready=ctx.Value("q", 0), start=ctx.Event(), stop=ctx.Event(),
        start_ns=ctx.Value("q", 0, lock=False), expected=ctx.Value("q", 0, lock=False),
        publishers_done=ctx.Value("q", 0),
        sent=ctx.Array("q", spec.processes, lock=False),
        received=ctx.Array("q", spec.processes, lock=False), results=ctx.Queue(),
    )
    shares = _deal(spec)
    procs = [ctx.Process(target=_worker_entry, args=(spec, w, pubs, subs, shared), daemon=True)
             for w, (pubs, subs) in enumerate(shares)]
    for proc in procs:
        proc.start()
    results: list[_WorkerResult] = []
    try:
        _wait_connected(spec, shared, procs)
        start_ns = time.monotonic_ns()
        shared.start_ns.value = start_ns
        shared.start.set()
        results = _supervise(spec, shared, procs, show, start_ns)
    finally:
        show.close()
        shared.stop.set()
        shared.start.set()
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    errors = [r.error for r in results if r.error]
    if errors:
        raise BenchError("; ".join(dict.fromkeys(errors)))
    return _merge(spec, results, start_ns)


def _wait_connected(spec: BenchSpec, shared: _Shared, procs: list[Any]) -> None:
    """Wait until every client is connected; else stop the workers and raise their errors."""
    clients = spec.publishers + spec.subscribers
    deadline = time.monotonic() + spec.connect_timeout + 10
    while shared.ready.value < clients:
        if shared.ready.value >= 1_000_000 or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if shared.ready.value != clients:
        shared.stop.set()
        shared.start.set()
        failed = _collect(shared, procs, 10)
        reason = "; ".join(dict.fromkeys(r.error for r in failed if r.error)) or (
            "clients did not connect")
        raise BenchError(reason)


def _merge(spec: BenchSpec, results: list[_WorkerResult], start_ns: int) -> RunReport:
    """The workers' results as one report."""
    sub_qos = spec.qos if spec.sub_qos is None else spec.sub_qos
    report = RunReport(spec.publishers, spec.subscribers, spec.qos, spec.protocol,
                       spec.payload_size, persistent=spec.persistent,
                       delivered_qos=min(spec.qos, sub_qos),
                       read_pause_ms=round(spec.read_pause * 1000, 3))
    latencies = array("q")
    pub_end = recv_end = start_ns
    recv_start = 0
    for r in results:
        report.sent += r.sent
        report.completed += r.completed
        report.refused += r.refused
        report.received += r.received
        report.unique += r.unique
        report.duplicates += r.duplicates
        pub_end = max(pub_end, r.pub_end_ns)
        recv_end = max(recv_end, r.recv_end_ns)
        if r.recv_start_ns:
            recv_start = min(recv_start or r.recv_start_ns, r.recv_start_ns)
        report.worker_cpu_seconds.append((r.role, round(r.cpu_seconds, 3)))
        chunk = array("q")
        chunk.frombytes(r.latencies)
        latencies.extend(chunk)
    report.expected = report.sent * spec.subscribers
    return report.finish(start_ns, pub_end, recv_end, latencies, recv_start_ns=recv_start)


def _supervise(spec: BenchSpec, shared: _Shared, procs: list[Any], show: Progress,
               start_ns: int) -> list[_WorkerResult]:
    """Show progress; once publishing ends, publish the expected count; stop on idleness."""
    results: list[_WorkerResult] = []
    last_received = -1
    idle_since = time.monotonic()
    pubs_done_at: float | None = None
    import queue as queue_module
    while len(results) < len(procs):
        try:
            results.append(shared.results.get(timeout=0.25))
            continue
        except queue_module.Empty:
            pass
        sent = sum(shared.sent)
        received = sum(shared.received)
        show.show((time.monotonic_ns() - start_ns) / 1e9, sent, received)
        now = time.monotonic()
        if received != last_received:
            last_received, idle_since = received, now
        if pubs_done_at is None and _publishing_over(spec, shared, start_ns):
            pubs_done_at = now
        if pubs_done_at is not None and now - idle_since > spec.drain_timeout:
            shared.stop.set()
        if not any(p.is_alive() for p in procs) and shared.results.empty():
            break
    return results


def _publishing_over(spec: BenchSpec, shared: _Shared, start_ns: int) -> bool:
    """True once every publisher is done; then the subscribers are told what to expect.

    Every subscriber matches every topic, so each expects all that was sent. The progress
    counters are final by then: a publisher counts each batch before it reports done."""
    over = shared.publishers_done.value >= spec.publishers
    if spec.publishers == 0 and spec.duration is not None:
        over = time.monotonic_ns() >= start_ns + int(spec.duration * 1e9)
    if over and spec.subscribers and spec.publishers:
        shared.expected.value = max(sum(shared.sent), 1)
    return over


def _collect(shared: _Shared, procs: list[Any], timeout: float) -> list[_WorkerResult]:
    import queue as queue_module
    out: list[_WorkerResult] = []
    end = time.monotonic() + timeout
    while len(out) < len(procs) and time.monotonic() < end:
        try:
            out.append(shared.results.get(timeout=0.2))
        except queue_module.Empty:
            if not any(p.is_alive() for p in procs):
                break
    return out
