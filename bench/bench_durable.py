"""Broker CPU per durable QoS 1/2 message: bench/compare rows 2, 3 and 5 (issue 16).

bench/compare times these rows on the wall clock, which a loaded machine makes unreliable.
This runs each row's load (``relaymq.bench``, as bench/compare.py's ``s2``, ``s3``, ``s5``)
against a broker started as bench/compare starts it (``compare_brokers.make_broker``) and
reads the broker process's CPU time per thread (utime + stime from
``/proc/PID/task/TID/stat``) around the load: the main (event-loop) thread and the others
(the store's writer), in microseconds per message.

``--profile OUT`` runs the broker under cProfile instead (``python -m cProfile -o OUT``;
SIGTERM stops it cleanly, so the profile is written) and prints the calls per message of the
store's hot functions (``Engine.submit`` and the ``SQLiteStore`` methods): the whole run,
connects included, which a few thousand messages make negligible.

Run from the tree to measure, once per tree in alternation to compare two:

    PYTHONPATH=src .venv/bin/python bench/bench_durable.py --rows s3,s5,s2 [--profile OUT]
"""

from __future__ import annotations

import argparse
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_drain import start_broker, thread_cpu  # noqa: E402
from compare_brokers import USERNAME, make_broker  # noqa: E402

from relaymq.bench import BenchSpec  # noqa: E402
from relaymq.bench import run as run_load  # noqa: E402

HOST = "127.0.0.1"

#: bench/compare.py's rows: the load spec and the messages the subscriber receives.
ROWS = {
    "s2": dict(qos=1, inflight=100, persistent="sub", processes=1),
    "s3": dict(qos=2, inflight=100, persistent="all", processes=1),
    "s5": dict(qos=1, publishers=100, inflight=100, persistent="sub"),
}

#: Functions whose calls per message the profile reports, by (file suffix, name).
WATCHED = (("store/engine.py", "submit"), ("store/engine.py", "_apply"), ("store/engine.py", "on_durable"),
           ("store/engine.py", "_commit"), ("store/engine.py", "_hand_over"))


def load_spec(row: str, count: int) -> dict[str, object]:
    spec = dict(ROWS[row])
    # row 5's count is per publisher (x 100)
    spec["count"] = max(1, count // 100) if row == "s5" else count
    return spec


def measure(row: str, count: int, profile: str | None) -> dict[str, object]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    broker = make_broker("relaymq", workdir)
    start_broker(broker, profile)
    try:
        assert broker.proc is not None
        pid = broker.proc.pid
        cpu0 = thread_cpu(pid)
        report = run_load(BenchSpec(host=HOST, port=broker.port, username=USERNAME, **load_spec(row, count)),
                          progress=False)
        time.sleep(0.5)  # the last commits
        cpu1 = thread_cpu(pid)
    finally:
        broker.stop(timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)
    received = report.received or 1
    main = cpu1.get(pid, 0.0) - cpu0.get(pid, 0.0)
    other = sum(cpu1[t] - cpu0.get(t, 0.0) for t in cpu1 if t != pid)
    result: dict[str, object] = {
        "row": row, "received": report.received, "lost": report.lost, "dup": report.duplicates,
        "rate": round(report.receive_rate), "us_per_message": round((main + other) / received * 1e6, 1),
        "main_us": round(main / received * 1e6, 1), "writer_us": round(other / received * 1e6, 1),
    }
    if profile:
        result["calls_per_message"] = calls_per_message(profile, received)
    return result


def calls_per_message(profile: str, messages: int) -> dict[str, float]:
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for (filename, _, name), (_, calls, *_rest) in stats.items():
        wanted = any(filename.endswith(suffix) and name == fn for suffix, fn in WATCHED)
        if wanted or filename.endswith("store/sqlite.py") and (name.startswith(("put_", "delete_", "update_"))):
            out[f"{Path(filename).name}:{name}"] = round(calls / messages, 3)
    return dict(sorted(out.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="s3,s5,s2")
    parser.add_argument("--count", type=int, default=20_000, help="messages per row (row 5: in all)")
    parser.add_argument("--profile", metavar="OUT", help="run the broker under cProfile, write OUT")
    args = parser.parse_args()
    for row in args.rows.split(","):
        print(json.dumps(measure(row, args.count, args.profile)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
