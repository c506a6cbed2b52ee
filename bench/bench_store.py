"""How many QoS 1 writes a second the storage engines make durable, and with how many commits.

Three ways of asking for durability, for SQLite with synchronous FULL and NORMAL (and the memory
engine for reference):

* ``one-by-one``: put_message + put_delivery, on_durable, wait for it, next (one publisher with
  one message in flight: the worst case, one commit per message);
* ``pipelined``: N messages, each with its own on_durable, submitted without waiting (many
  publishers: group commit batches them by itself);
* ``one-batch``: N messages submitted, then a single on_durable;
* ``acked-early``: as pipelined, but the subscriber's PUBACK (delete_delivery + delete_message)
  arrives before the batch commits, so coalescing keeps most rows out of the database.

Run: ``.venv/bin/python bench/bench_store.py [--messages 10000] [--dir DIR]``. The directory
must be on the disk you care about (a tmpfs makes fsync free and the figures meaningless).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable

from relaymq.store.base import DeliveryRecord, Store, StoredMessage
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore

PAYLOAD = b"x" * 100


def run_now(callback: Callable[[], None]) -> None:
    callback()


def submit(store: Store, msg_id: int) -> None:
    store.put_message(StoredMessage(msg_id, "bench/topic", PAYLOAD, 1, created_at=time.time()))
    store.put_delivery(DeliveryRecord("subscriber", msg_id, msg_id, 1))


def one_by_one(store: Store, count: int) -> None:
    done = threading.Event()
    for msg_id in range(1, count + 1):
        submit(store, msg_id)
        done.clear()
        store.on_durable(done.set)
        done.wait()


def pipelined(store: Store, count: int) -> None:
    acked = [0]
    all_done = threading.Event()

    def ack() -> None:
        acked[0] += 1
        if acked[0] == count:
            all_done.set()

    for msg_id in range(1, count + 1):
        submit(store, msg_id)
        store.on_durable(ack)
    all_done.wait()


def acked_early(store: Store, count: int) -> None:
    done = threading.Event()
    for msg_id in range(1, count + 1):
        submit(store, msg_id)
        store.on_durable(done.set if msg_id == count else _nothing)
        store.delete_delivery("subscriber", msg_id)
        store.delete_message(msg_id)
    done.wait()


def _nothing() -> None:
    pass


def one_batch(store: Store, count: int) -> None:
    done = threading.Event()
    for msg_id in range(1, count + 1):
        submit(store, msg_id)
    store.on_durable(done.set)
    done.wait()


SCENARIOS: dict[str, Callable[[Store, int], None]] = {
    "one-by-one": one_by_one,
    "pipelined": pipelined,
    "one-batch": one_batch,
    "acked-early": acked_early,
}


def measure(engine: str, scenario: str, count: int, directory: str) -> tuple[float, int | None]:
    """(messages per second, commits) for one engine and scenario on a fresh store."""
    path = os.path.join(directory, f"{engine}-{scenario}.db")
    store: Store
    if engine == "memory":
        store = MemoryStore(run_now)
    else:
        store = SQLiteStore(path, run_now, synchronous=engine.split("-")[1])
    try:
        start = time.perf_counter()
        SCENARIOS[scenario](store, count)
        elapsed = time.perf_counter() - start
        commits = store.commit_count if isinstance(store, SQLiteStore) else None
    finally:
        store.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return count / elapsed, commits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000, help="messages per batched scenario")
    parser.add_argument("--one-by-one", type=int, default=1_000, help="messages for the one-by-one scenario")
    parser.add_argument("--dir", default=None, help="where to put the databases (default: a temp dir under .)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir or ".", prefix="bench-store-") as directory:
        print(f"{'engine':<16}{'scenario':<12}{'messages':>9}{'msg/s':>12}{'commits':>9}")
        for engine in ("sqlite-FULL", "sqlite-NORMAL", "memory"):
            for scenario in SCENARIOS:
                count = args.one_by_one if scenario == "one-by-one" else args.messages
                rate, commits = measure(engine, scenario, count, directory)
                shown = "-" if commits is None else str(commits)
                print(f"{engine:<16}{scenario:<12}{count:>9}{rate:>12,.0f}{shown:>9}", flush=True)
    print("one message = put_message + put_delivery; commits = transactions = fsyncs of the WAL with FULL")


if __name__ == "__main__":
    main()
