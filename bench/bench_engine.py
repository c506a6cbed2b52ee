"""The one storage engine's figures (issue 14 "Benchmarks"): what it makes durable per second.

    .venv/bin/python bench/bench_engine.py [--seconds S] [--records N] [--dir DIR]

* ``log append``: N publications archived the way the broker archives them. The broker opens
  one unit of work per socket read (``Connection.process_buffered``) and registers one
  ``on_durable`` callback per read for the read's PUBACKs (``Connection._register_acks``); the
  archive tap (``ArchiveService.tap``, run here) submits each publication's entry inside that
  unit. So the figure that models the broker submits ``--per-read`` publications (default 10; a publisher keeping 100 QoS 1
  messages in flight, as bench_durable's s2 does, sends more than that per read) per unit,
  with one callback each, from the event loop's thread, while the writer thread
  group-commits. The figure before it is the worst case: every publication alone in its read
  (one unit and one callback each). Messages per second = N / the time until the last
  callback ran (every entry committed), and the process's CPU microseconds per entry (every
  thread: the loop's and the writer's; steadier than the rate on a shared machine). Also the
  same N records appended in chunks of 5,000 through ``MessageLog.append`` (a tool's bulk load).
* ``put+get``: persistent put+get pairs on one queue of a queue manager on its own engine
  (``synchronous=FULL``: an fsync per commit), each pair a put that returns once durable and a
  destructive get that returns once its removal is durable. Two kinds of concurrent clients:
  asyncio tasks on ``AsyncQueueManager`` (how the broker's REST interface and pub/sub engine
  call it: the change is made on the loop and the task awaits the commit, 1, 8, 64 and 256
  clients; on the loop the broker runs on, uvloop when installed, named in the output, and
  with the garbage collector set as the broker sets it once started), and threads on the blocking ``QueueManager`` (1, 8, 32; each waiting client holds
  a thread, and the threads' GIL handoffs, not the disk, bound it). With several clients one
  commit covers many clients' work (group commit), and a get that takes a message before its
  put was committed cancels the put's row out of the batch.

The directory must be on the disk you care about (a tmpfs makes fsync free and the figures
meaningless). Asserts nothing about speed; checks that every record and message is accounted for.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from relaymq.message import Message
from relaymq.pipeline.archive_service import ArchiveService
from relaymq.pipeline.log import MessageLog
from relaymq.pipeline.log_entries import from_publication
from relaymq.pipeline.settings import ArchiveConfig, ArchiveRule
from relaymq.qmgr import QueueManager
from relaymq.store.base import StoredMessage
from relaymq.store.engine import Engine

T = TypeVar("T")

BODY = b"<events d_tstamp='20040417103118'>" + b"x" * 200 + b"</events>"


def log_append(directory: str, records: int, per_read: int) -> dict[str, float]:
    """The publications archived one per read and ``per_read`` per read (module docstring),
    each run in a fresh log; then the bulk append."""
    one = archive_publications(os.path.join(directory, "one-per-read"), records, 1)
    many = archive_publications(os.path.join(directory, "per-read"), records, per_read)
    return {**{f"one per read, {k}": v for k, v in one.items()}, **many,
            "bulk append (msg/s)": bulk_append(os.path.join(directory, "bulk"), records)}


def archive_publications(directory: str, records: int, per_read: int) -> dict[str, float]:
    """What the broker's archive does for ``records`` publications arriving ``per_read`` in
    each socket read: one unit of work per read, the archive tap (``ArchiveService.tap``: the
    rule's partition, the entry, its submission) per publication, one PUBACK callback per read.
    The publications (the broker's StoredMessage, each with its own MQTT 5 properties as the
    decoder makes them) are made before the clock starts: routing's work, not the archive's;
    then the garbage collector is set as the broker sets it once started (:func:`serving_heap`:
    with the defaults, its collections over the premade publications cost 1,000-2,000
    instructions an entry (callgrind), a cost of this bench, not of the broker)."""
    engine = Engine(os.path.join(directory, "relaymq.db"))
    rule = ArchiveRule(name="telemetry", topics=("LCUnit/#",), partitions=4)
    service = ArchiveService(ArchiveConfig(rules=(rule,)), directory, engine)
    done = threading.Event()
    left = [records]

    def acknowledged(count: int) -> None:  # the PUBACKs of one read (runs on the writer thread here)
        left[0] -= count
        if left[0] == 0:
            done.set()

    messages = [StoredMessage(i, f"LCUnit/{i % 500}/batch", BODY, 1, properties={"user_property": [("unit", "1")]})
                for i in range(records)]
    tap = service.tap
    with serving_heap():
        cpu = time.process_time()
        started = time.perf_counter()
        for first in range(0, records, per_read):
            last = min(records, first + per_read)
            with engine.unit():
                for i in range(first, last):
                    tap(messages[i])
                engine.on_durable(partial(acknowledged, last - first))
        done.wait()
        rate = records / (time.perf_counter() - started)
        cpu_us = (time.process_time() - cpu) / records * 1e6
    commits = engine.commits
    assert sum(p.size for p in service.log.partitions().values()) == records
    service.log.close()
    engine.close()
    return {"msg/s": rate, "CPU us per entry": cpu_us, "commits": commits}


def bulk_append(directory: str, records: int) -> float:
    """``records`` publications' records appended in chunks of 5,000 (``MessageLog.append``): msg/s."""
    engine = Engine(os.path.join(directory, "relaymq.db"))
    log = MessageLog(directory, engine=engine)
    properties = {"user_property": [("unit", "1")]}
    chunks = []
    for first in range(0, records, 5000):
        chunk = []
        for i in range(first, min(records, first + 5000)):
            record = from_publication(f"LCUnit/{i % 500}/batch", BODY, 1, properties, None)
            record.partition = f"telemetry-{i % 4}"
            chunk.append(record)
        chunks.append(chunk)
    started = time.perf_counter()
    for chunk in chunks:
        log.append(chunk)
    rate = records / (time.perf_counter() - started)
    log.close()
    engine.close()
    return rate


def put_get(directory: str, seconds: float, threads: int) -> tuple[float, int]:
    """bench_qmgr.py's threads (blocking calls), in a directory of this run."""
    import bench_qmgr

    pairs, elapsed, commits = bench_qmgr.run(seconds, threads, os.path.join(directory, f"pairs-{threads}"))
    return pairs / elapsed, commits


def event_loop() -> tuple[str, Callable[[Coroutine[Any, Any, T]], T]]:
    """The loop the broker runs on (``relaymq.server.app.run``): uvloop when installed (the
    ``fast`` extra), else asyncio's; its name and how to run a coroutine on it."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is optional
        import asyncio

        return "asyncio", asyncio.run
    return f"uvloop {uvloop.__version__}", uvloop.run


@contextmanager
def serving_heap() -> Iterator[None]:
    """The garbage collector as the broker runs it once started (``relaymq.server.app.settle_heap``:
    what exists is frozen, the serving thresholds), the defaults again afterwards. With the
    defaults its collections cost 5-7 CPU us per put+get pair at 256 clients, a cost the
    broker's REST interface and pub/sub engine do not pay."""
    from relaymq.server.app import settle_heap

    thresholds = gc.get_threshold()
    settle_heap()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def put_get_async(directory: str, seconds: float, clients: int) -> tuple[float, int, float]:
    """Pairs per second, commits, and the process's CPU microseconds per pair (every thread:
    the loop's and the writer's; on a shared machine a steadier figure than the rate), on
    the broker's loop (:func:`event_loop`) with the broker's garbage collector settings
    (:func:`serving_heap`)."""
    import asyncio

    from relaymq.qmgr.aio import AsyncQueueManager

    path = os.path.join(directory, f"async-pairs-{clients}")
    os.makedirs(path, exist_ok=True)
    qm = QueueManager.open("BENCH", path, synchronous="FULL")
    qm.define_queue("Q")
    aio = AsyncQueueManager(qm)
    commits0 = qm.store.commits

    async def run() -> tuple[float, int]:
        stop = time.perf_counter() + seconds
        counts = [0] * clients

        async def client(n: int) -> None:
            message = Message()
            message.mq.md.Format = "MQSTR"
            message.mq.body = b"x" * 256
            while time.perf_counter() < stop:
                await aio.put("Q", message)
                assert await aio.get("Q") is not None
                counts[n] += 1

        started = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        return sum(counts) / (time.perf_counter() - started), sum(counts)

    with serving_heap():
        cpu = time.process_time()
        rate, pairs = event_loop()[1](run())
        cpu = time.process_time() - cpu
    assert qm.depth("Q") == 0
    commits = qm.store.commits - commits0
    qm.close()
    return rate, commits, cpu / max(pairs, 1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per put+get run")
    parser.add_argument("--records", type=int, default=200_000, help="log entries")
    parser.add_argument("--per-read", type=int, default=10, help="publications per socket read (log append)")
    parser.add_argument("--log-only", action="store_true", help="only the log append figures")
    parser.add_argument("--dir", default=None, help="where the database files go (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-engine-") as directory:
        figures = log_append(directory, args.records, args.per_read)
        print(f"log append, {args.records:,} publications, {args.per_read} per read (a unit and a PUBACK callback "
              f"per read, as the broker): {figures['msg/s']:,.0f} msg/s durable, "
              f"{figures['CPU us per entry']:.2f} CPU us per entry ({figures['commits']:,.0f} commits); "
              f"1 per read: {figures['one per read, msg/s']:,.0f} msg/s, "
              f"{figures['one per read, CPU us per entry']:.2f} CPU us per entry; "
              f"bulk MessageLog.append in chunks of 5,000: {figures['bulk append (msg/s)']:,.0f} msg/s")
        if args.log_only:
            return
        print(f"asyncio clients run on {event_loop()[0]}, the broker's loop")
        for clients in (1, 8, 64, 256):
            rate, commits, cpu_us = put_get_async(directory, args.seconds, clients)
            print(f"persistent put+get on one queue, SQLite FULL, {clients} asyncio client(s): {rate:,.0f} pairs/s "
                  f"({commits:,} commits, {cpu_us:,.0f} CPU us per pair)")
        for threads in (1, 8, 32):
            rate, commits = put_get(directory, args.seconds, threads)
            print(f"persistent put+get on one queue, SQLite FULL, {threads} thread(s): {rate:,.0f} pairs/s "
                  f"({commits:,} commits)")


if __name__ == "__main__":
    main()
