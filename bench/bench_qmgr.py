"""Benchmark (not a test): persistent put+get per second on one queue (issue 5 "Done when" 3).

Run: .venv/bin/python bench/bench_qmgr.py [seconds] [threads]
SQLite store, ``synchronous=FULL`` (an fsync per commit), 256-byte MQSTR messages. One
"pair" is a put that returns once durable plus a destructive get that returns once the
removal is durable. With one thread every operation waits for its own fsync; with several
threads the writer's group commit makes one fsync cover many operations, so the second figure
shows what the store gives a loaded broker. The queue manager file lives in a temporary
directory (the disk under /tmp decides the fsync cost).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time

from relaymq.message import Message
from relaymq.qmgr import QueueManager


def _message() -> Message:
    message = Message()
    message.mq.md.Format = "MQSTR"
    message.mq.body = b"x" * 256
    return message


def run(seconds: float, threads: int, directory: str | None = None) -> tuple[int, float, int]:
    os.makedirs(directory, exist_ok=True) if directory else None
    with tempfile.TemporaryDirectory(dir=directory) as data_dir:
        qm = QueueManager.open("BENCH", data_dir, synchronous="FULL")
        qm.define_queue("Q")
        commits0 = qm.store.commits
        stop = time.perf_counter() + seconds
        counts = [0] * threads

        def worker(n: int) -> None:
            while time.perf_counter() < stop:
                qm.put("Q", _message())
                assert qm.get("Q") is not None
                counts[n] += 1

        start = time.perf_counter()
        pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        elapsed = time.perf_counter() - start
        commits = qm.store.commits - commits0
        assert qm.depth("Q") == 0
        qm.close()
    return sum(counts), elapsed, commits


def main(seconds: float = 3.0, threads: int = 8) -> None:
    for n in (1, threads):
        pairs, elapsed, commits = run(seconds, n)
        print(f"persistent put+get, SQLite FULL, {n} thread(s): {pairs / elapsed:,.0f} pairs/s"
              f" ({pairs} pairs in {elapsed:.2f} s, {commits} commits, "
              f"{2 * pairs / max(commits, 1):.1f} operations per commit)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, int(sys.argv[2]) if len(sys.argv) > 2 else 8)
