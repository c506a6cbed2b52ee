"""Broker CPU until a restart with a backlog accepts (bench/compare row 9), per tree, alternating.

Row 9 times on the wall clock, from the exec of ``relaymq serve`` until the restarted broker
accepts the backlogged session; a loaded machine makes that unreliable. This fills the backlog
once (``scenarios.queue_backlog``, the broker started as bench/compare starts it), stops the
broker, then starts ``relaymq serve`` from each given tree in turn (alternating the order each
round) on a fresh copy of that database, and reads the process's CPU (the sum of its threads'
``/proc/PID/task/*/schedstat`` run time, and utime + stime) the moment its MQTT port accepts.

    .venv/bin/python bench/bench_restart.py --tree /path/A --tree /path/B [--rounds 6] [--messages 100000]

``PYTHONDONTWRITEBYTECODE`` is removed from the brokers' environment: without byte-code files
every start compiles its modules again (a second of CPU that an installed broker never spends).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))
from compare_brokers import USERNAME, make_broker  # noqa: E402

from relaymq.bench import scenarios  # noqa: E402


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(schedstat run time of every thread, utime + stime) of process ``pid``, in seconds."""
    ns = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as fh:
                ns += int(fh.read().split()[0])
        except OSError:  # a thread that ended meanwhile
            pass
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return ns / 1e9, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start_once(tree: Path, filled: Path, command: list[str], port: int, work: Path) -> tuple[float, float, float]:
    """(wall, schedstat CPU, utime + stime) from the exec until the port accepts."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(filled, work)
    command = [part.replace(str(filled), str(work)) for part in command]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree / "src"), PYTHONUNBUFFERED="1")
    with (work / "run.log").open("wb") as log:
        began = time.monotonic()
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                start_new_session=True)
        try:
            while not accepts(port):
                if proc.poll() is not None:
                    raise SystemExit(f"the broker exited: {(work / 'run.log').read_text()[-2000:]}")
                time.sleep(0.002)
            wall = time.monotonic() - began
            sched, ticks = cpu_seconds(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    return wall, sched, ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        filled = workdir / "fill"
        broker = make_broker("relaymq", filled)
        broker.start()
        try:
            scenarios.queue_backlog("127.0.0.1", broker.port, "bench-restart", "bench/restart",
                                    args.messages, username=USERNAME)
        finally:
            broker.stop(timeout=300)
        command, port = broker.command(), broker.port
        results: dict[Path, list[float]] = {tree: [] for tree in args.tree}
        for round_ in range(args.rounds):
            for tree in args.tree if round_ % 2 == 0 else args.tree[::-1]:
                wall, sched, ticks = start_once(tree, filled, command, port, workdir / "run")
                results[tree].append(sched)
                print(f"{tree}: wall {wall:.3f} s, CPU {sched:.3f} s (utime+stime {ticks:.2f} s)", flush=True)
        for tree, cpus in results.items():
            print(f"{tree}: CPU median {statistics.median(cpus):.3f} s of {[round(c, 3) for c in cpus]}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
