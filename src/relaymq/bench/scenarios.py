"""The comparison's measurements that are not a plain load run (issue 8 scenarios 6 to 9).

* many idle connections held open while the caller reads the broker's memory;
* many retained topics stored, then the time a ``#`` subscriber takes to receive them all;
* a persistent session with a backlog of queued QoS 1 messages: the time to reconnect and drain
  it, and the time a restarted broker takes to accept that session again.

They use the same clients as the load runs (relaymq.bench.client), so every figure comes from
the same code path whatever the broker. Each returns plain numbers; the broker processes and
their memory are the caller's business (bench/compare).
"""

from __future__ import annotations

import asyncio
import ipaddress
import multiprocessing as mp
import resource
import time
from dataclasses import dataclass
from typing import Any

from relaymq.bench.client import BenchError, Connection
from relaymq.bench.wire import PublishTemplates, ReceiveTally, subscribe_packet
from relaymq.store.base import NEVER_EXPIRES

#: Connections a worker opens at the same time (a listen backlog overflows beyond that).
CONNECT_CONCURRENCY = 64


def raise_fd_limit() -> int:
    """Raise this process's open-file soft limit to its hard limit; returns the new limit.

    10,000 connections need 10,000 descriptors in the broker and the generator, more than the
    usual soft limit of 1024; child processes (and brokers started afterwards) inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def _run(coro: Any) -> Any:
    try:
        import uvloop
        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)


# -- idle connections ----------------------------------------------------------------------


def _source_address(host: str, worker: int) -> str | None:
    """A distinct loopback source address per worker, so each has its own ephemeral ports.

    One source address has ~28,000 ephemeral ports towards one destination; spreading 10,000+
    connections over 127.0.0.2, .3, ... keeps far from that limit."""
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return None
    if addr.version == 4 and addr.is_loopback:
        return f"127.0.0.{2 + worker % 250}"
    return None


def _idle_worker(host: str, port: int, count: int, level: int, username: str | None,
                 prefix: str, worker: int, connected: Any, release: Any, errors: Any) -> None:
    raise_fd_limit()

    async def main() -> None:
        source = _source_address(host, worker)
        gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
        conns: list[Connection] = []

        async def one(i: int) -> None:
            async with gate:
                for attempt in range(3):
                    try:
                        conns.append(await Connection.open(host, port, f"{prefix}-{worker}-{i}",
                                                           level, keep_alive=0, source=source,
                                                           username=username))
                        with connected.get_lock():
                            connected.value += 1
                        return
                    except (TimeoutError, OSError, BenchError) as error:
                        if attempt == 2:
                            errors.put(f"{type(error).__name__}: {error}")
                        await asyncio.sleep(0.2)

        await asyncio.gather(*(one(i) for i in range(count)))
        await asyncio.get_running_loop().run_in_executor(None, release.wait)
        for conn in conns:
            conn.writer.transport.abort()

    _run(main())


class IdleConnections:
    """``with IdleConnections(host, port, 10_000) as idle:`` holds that many MQTT connections
    open (CONNECT done, then silent, keep-alive 0) until the block ends.

    ``idle.connected`` is how many succeeded; ``idle.errors`` the distinct failures."""

    def __init__(self, host: str, port: int, total: int, *, processes: int = 4, level: int = 4,
                 username: str | None = None, timeout: float = 300.0) -> None:
        self.host, self.port, self.total, self.level = host, port, total, level
        self.username = username
        self.processes = max(1, min(processes, total))
        self.timeout = timeout
        self.connected = 0
        self.errors: list[str] = []
        self.seconds = 0.0
        self._procs: list[Any] = []

    def __enter__(self) -> IdleConnections:
        raise_fd_limit()
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
        self._connected = ctx.Value("q", 0)
        self._release = ctx.Event()
        self._errors = ctx.Queue()
        prefix = f"idle-{int(time.time() * 1000) % 10**8}"
        share, extra = divmod(self.total, self.processes)
        start = time.monotonic()
        for w in range(self.processes):
            n = share + (1 if w < extra else 0)
            proc = ctx.Process(target=_idle_worker, daemon=True,
                               args=(self.host, self.port, n, self.level, self.username,
                                     prefix, w,
                                     self._connected, self._release, self._errors))
            proc.start()
            self._procs.append(proc)
        deadline = start + self.timeout
        failed = 0
        while self._connected.value + failed < self.total and time.monotonic() < deadline:
            while not self._errors.empty():
                self.errors.append(self._errors.get())
                failed += 1
            if not any(p.is_alive() for p in self._procs):
                break
            time.sleep(0.05)
        self.seconds = time.monotonic() - start
        self.connected = self._connected.value
        self.errors = sorted(set(self.errors))
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        for proc in self._procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()


# -- retained topics -------------------------------------------------------------------------


#: Seconds a publisher stays connected after its last acknowledgement. Some brokers (amqtt)
#: process acknowledged messages asynchronously and drop what is pending when the publisher
#: disconnects; every broker gets the same grace, so the comparison stays even.
LINGER = 1.0
#: Topic prefix of the barrier messages (see :func:`_barrier`).
BARRIER_PREFIX = "bench/barrier"
#: Publisher index stamped on barrier messages: never one of the measured publishers', so a
#: receiver that gets a barrier does not take it for a duplicate of message 0.
BARRIER_PUBLISHER = 0xFFFFFFFF


async def _barrier(pub: Connection, host: str, port: int, username: str | None,
                   timeout: float = 600.0) -> float:
    """Wait until the broker has processed everything ``pub`` published; returns the seconds.

    An acknowledgement does not say the broker is done with a message: amqtt acknowledges
    first and processes later, so a subscriber arriving too early misses retained messages
    and a backlog is still being built. The barrier is one more retained QoS 1 message on the
    same connection (brokers process a connection's messages in order); once a new subscriber
    gets it back as a retained message, everything before it has been processed."""
    topic = f"{BARRIER_PREFIX}/{_client_id('b')}"
    templates = PublishTemplates([topic], 64, 1, pub.level, retain=True)
    start = time.monotonic()
    await pub.publish(templates, BARRIER_PUBLISHER, count=1, window=1)
    while time.monotonic() - start < timeout:
        probe = await Connection.open(host, port, _client_id("probe"), pub.level,
                                      username=username)
        tally = ReceiveTally()
        probe.writer.write(subscribe_packet(topic, 0, pub.level))
        await probe.receive(tally, lambda t: t.retained >= 1, idle_timeout=1.0)
        await probe.close()
        if tally.retained:
            return time.monotonic() - start
    raise BenchError(f"the broker did not process its backlog within {timeout:.0f}s")


async def _publish_all(conn: Connection, topics: list[str], count: int, *, qos: int,
                       retain: bool, payload_size: int, window: int) -> float:
    """Publish ``count`` messages cycling over ``topics`` on an open connection; returns the
    seconds until all were acknowledged."""
    templates = PublishTemplates(topics, payload_size, qos, conn.level, retain)
    result = await conn.publish(templates, 0, count=count, window=window)
    if result.refused:
        raise BenchError(f"{result.refused} publications refused")
    return (result.end_ns - result.start_ns) / 1e9


@dataclass
class DeliveryTiming:
    """How long a receiver took, and what it got."""

    seconds: float
    received: int
    unique: int
    retained: int
    session_present: bool = False
    #: ReceiveTally.largest_burst: the most messages received unacknowledged at once.
    largest_burst: int = 0


def _client_id(kind: str) -> str:
    return f"bench-{kind}-{time.monotonic_ns() % 10**9}"


def retained_round_trip(host: str, port: int, count: int, *, prefix: str = "bench/retained",
                        topic_filter: str = "#", level: int = 4, payload_size: int = 64,
                        window: int = 100, idle_timeout: float = 30.0,
                        username: str | None = None) -> tuple[float, DeliveryTiming]:
    """Store ``count`` retained QoS 1 messages (topics PREFIX/0..), then subscribe to
    ``topic_filter`` and time until all arrived, from the SUBSCRIBE being written.

    Returns (seconds until stored, the receiver's timing). "Stored" is when the broker has
    processed them all (:func:`_barrier`), not merely acknowledged them. The publisher stays
    connected until the receiver is done; the receiver stops after ``idle_timeout`` silent
    seconds, so a broker that lost some shows it in ``retained``."""

    async def main() -> tuple[float, DeliveryTiming]:
        pub = await Connection.open(host, port, _client_id("retain"), level, username=username)
        topics = [f"{prefix}/{i}" for i in range(count)]
        stored = await _publish_all(pub, topics, count, qos=1, retain=True,
                                    payload_size=payload_size, window=window)
        stored += await _barrier(pub, host, port, username)
        sub = await Connection.open(host, port, _client_id("rsub"), level, username=username)
        tally = ReceiveTally()
        start = time.monotonic_ns()
        sub.writer.write(subscribe_packet(topic_filter, 0, level))
        # the barrier is retained too: '#' gets it besides the count
        expect = count + (1 if topic_filter == "#" else 0)
        await sub.receive(tally, lambda t: t.retained >= expect, idle_timeout=idle_timeout)
        end = tally.last_ns or time.monotonic_ns()
        await sub.close()
        await pub.close()
        barrier = 1 if BARRIER_PUBLISHER in tally.seen else 0
        return stored, DeliveryTiming((end - start) / 1e9, tally.received - barrier,
                                      tally.unique - barrier, tally.retained - barrier)

    return _run(main())


# -- persistent session backlog ---------------------------------------------------------------


SESSION_EXPIRY = NEVER_EXPIRES   # MQTT 5: never expires (3.1.1: clean session 0 is persistent)


def queue_backlog(host: str, port: int, client_id: str, topic: str, count: int, *,
                  level: int = 4, payload_size: int = 64, window: int = 100,
                  username: str | None = None) -> float:
    """Create a persistent session subscribed to ``topic`` at QoS 1, disconnect it, then
    publish ``count`` QoS 1 messages for it to queue. Returns the seconds until the broker had
    processed them all (:func:`_barrier`)."""

    async def main() -> float:
        sub = await Connection.open(host, port, client_id, level, clean=False,
                                    session_expiry=SESSION_EXPIRY, username=username)
        await sub.subscribe(topic, 1)
        await sub.close()
        pub = await Connection.open(host, port, _client_id("fill"), level, username=username)
        seconds = await _publish_all(pub, [topic], count, qos=1, retain=False,
                                     payload_size=payload_size, window=window)
        seconds += await _barrier(pub, host, port, username)
        await asyncio.sleep(LINGER)
        await pub.close()
        return seconds

    return _run(main())


def drain_session(host: str, port: int, client_id: str, expected: int, *, level: int = 4,
                  idle_timeout: float = 30.0, username: str | None = None) -> DeliveryTiming:
    """Reconnect the persistent session and time until ``expected`` queued messages arrived
    (every one acknowledged), from the CONNECT; stops after ``idle_timeout`` of silence."""

    async def main() -> DeliveryTiming:
        start = time.monotonic_ns()
        conn = await Connection.open(host, port, client_id, level, clean=False,
                                     session_expiry=SESSION_EXPIRY, username=username)
        tally = ReceiveTally()
        await conn.receive(tally, lambda t: t.unique >= expected, idle_timeout=idle_timeout)
        end = tally.last_ns or time.monotonic_ns()
        await conn.close()
        return DeliveryTiming((end - start) / 1e9, tally.received, tally.unique, tally.retained,
                              conn.session_present, tally.largest_burst)

    return _run(main())


def wait_for_session(host: str, port: int, client_id: str, *, level: int = 4,
                     timeout: float = 120.0, username: str | None = None) -> tuple[float, bool]:
    """Poll until the broker accepts ``client_id``'s persistent session; returns (seconds, session
    present). Used right after starting a broker to time its restart with a backlog. The
    connection is then dropped without DISCONNECT, so the session and its queue stay."""

    async def main() -> tuple[float, bool]:
        start = time.monotonic()
        last: Exception | None = None
        while time.monotonic() - start < timeout:
            try:
                conn = await Connection.open(host, port, client_id, level, clean=False,
                                             session_expiry=SESSION_EXPIRY, timeout=timeout,
                                             username=username)
            except (TimeoutError, OSError, BenchError) as error:
                last = error
                await asyncio.sleep(0.01)
                continue
            elapsed = time.monotonic() - start
            present = conn.session_present
            await conn.close(disconnect=False)
            return elapsed, present
        raise BenchError(f"broker did not accept the session within {timeout:.0f}s: {last}")

    return _run(main())
