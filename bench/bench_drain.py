"""Broker CPU per drained message of a persistent session's backlog (bench/compare row 8).

Row 8 times the drain on the wall clock, which a loaded machine makes unreliable. This runs
the same scenario on relaymq alone and reads the broker process's CPU time instead
(utime + stime from ``/proc/PID/stat``, per thread from ``/proc/PID/task``) across
``scenarios.drain_session``: the main (event-loop) thread and the others (the store's writer),
in microseconds per drained message, and the store statements written per message (from
``GET /metrics``). The broker is started as bench/compare starts it
(``compare_brokers.make_broker``: SQLite, ``max_inflight = 100``, a queue that holds the whole
backlog in memory).

Run from the tree to measure, once per tree in alternation to compare two:

    PYTHONPATH=src .venv/bin/python bench/bench_drain.py [--messages 30000] [--profile OUT]

``--profile OUT`` runs the broker under cProfile (``python -m cProfile -o OUT -m relaymq
serve ...``; SIGTERM stops it cleanly, so the profile is written): the whole run, fill
included; the difference of two runs, one with ``--no-drain``, gives the calls per drained
message (``pstats``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare_brokers import USERNAME, make_broker  # noqa: E402
from harness import BrokerProcess, free_port  # noqa: E402

from relaymq.bench import scenarios  # noqa: E402

HOST = "127.0.0.1"
CLIENT_ID, TOPIC = "bench-backlog", "bench/backlog"


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process ``pid``, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def statements_written(broker: BrokerProcess, http_port: int) -> float | None:
    """``relaymq_store_statements_written_total`` from the broker's metrics, None if unread."""
    request = urllib.request.Request(f"http://{HOST}:{http_port}/metrics")
    credential = broker.admin_credentials
    if credential.exists():
        user, password = credential.read_text().strip().split(":", 1)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        text = urllib.request.urlopen(request, timeout=10).read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("relaymq_store_statements_written_total "):
            return float(line.split()[1])
    return None


def start_broker(broker: BrokerProcess, profile: str | None) -> None:
    """Start ``broker``, under cProfile writing ``profile`` when one is given (a relative
    PYTHONPATH was made absolute when the harness was imported)."""
    if profile:
        command = broker.command

        def profiled() -> list[str]:
            python, *rest = command()
            return [python, "-m", "cProfile", "-o", profile, *rest]

        broker.command = profiled  # type: ignore[method-assign]
    broker.start()


def measure(messages: int, profile: str | None, drain: bool) -> dict[str, object]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-drain-"))
    http_port = free_port(HOST)
    broker = make_broker("relaymq", workdir, config={"http": {"host": HOST, "port": http_port}})
    start_broker(broker, profile)
    try:
        assert broker.proc is not None
        pid = broker.proc.pid
        fill = scenarios.queue_backlog(HOST, broker.port, CLIENT_ID, TOPIC, messages, username=USERNAME)
        time.sleep(1.0)  # the fill's last commits
        written0, cpu0 = statements_written(broker, http_port), thread_cpu(pid)
        timing = None
        if drain:
            timing = scenarios.drain_session(HOST, broker.port, CLIENT_ID, messages, username=USERNAME)
        time.sleep(1.0)  # the drain's last deletes commit
        cpu1, written1 = thread_cpu(pid), statements_written(broker, http_port)
    finally:
        broker.stop(timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)
    main = cpu1.get(pid, 0.0) - cpu0.get(pid, 0.0)
    other = sum(cpu1[t] - cpu0.get(t, 0.0) for t in cpu1 if t != pid)
    result: dict[str, object] = {
        "messages": messages, "fill_seconds": round(fill, 2),
        "us_per_message": round((main + other) / messages * 1e6, 2),
        "main_thread_us": round(main / messages * 1e6, 2),
        "other_threads_us": round(other / messages * 1e6, 2),
    }
    if written0 is not None and written1 is not None:
        result["statements_per_message"] = round((written1 - written0) / messages, 3)
    if timing is not None:
        result.update(drain_seconds=round(timing.seconds, 2), received=timing.received,
                      unique=timing.unique)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--profile", metavar="OUT", help="run the broker under cProfile, write OUT")
    parser.add_argument("--no-drain", action="store_true", help="fill only (a profile's baseline)")
    args = parser.parse_args()
    print(json.dumps(measure(args.messages, args.profile, not args.no_drain)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
