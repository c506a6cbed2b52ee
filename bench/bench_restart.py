"""Broker CPU until a restart with a backlog accepts (bench/compare row 9), per tree, alternating.

Row 9 times on the wall clock, from the exec of ``relaymq serve`` until the restarted broker
accepts the backlogged session; a loaded machine makes that unreliable. This fills the backlog
once (``scenarios.queue_backlog``, the broker started as bench/compare starts it), stops the
broker, then starts ``relaymq serve`` from each given tree in turn (alternating the order each
round) on a fresh copy of that database, and reads the process's CPU (the sum of its threads'
``/proc/PID/task/*/schedstat`` run time, and utime + stime) the moment its MQTT port accepts.

    .venv/bin/python bench/bench_restart.py --tree /path/A --tree /path/B[=NATIVE_DIR] [--rounds 6]
        [--messages 100000] [--defaults] [--importtime]

``=NATIVE_DIR`` runs that tree with ``RELAYMQ_NATIVE_DIR`` set to it: its own compiled build
(``relaymq.native_build``), where a tree whose sources differ from the virtual environment's
build would otherwise run interpreted; without it, the environment's own setting applies.

``--messages 0`` starts on an empty data directory (the start-up itself, without a backlog);
``--defaults`` starts ``relaymq serve`` with its embedded defaults (no ``--config``: only the
ports and the data directory on the command line) instead of bench/compare's configuration.
Each start also reports the idle process's memory the moment it accepts (VmRSS, and RssAnon /
RssFile from ``smaps_rollup``: bench/compare row 6 starts from it); ``--importtime`` adds one
start per tree under ``-X importtime`` and sums its modules' own import times (microseconds).

With a backlog, each start then connects the backlogged session as row 9 does
(``scenarios.wait_for_session``) and prints the wall and CPU at its CONNACK: that is row 9's end
point, and the difference to the port's accept is what restoring the session costs.

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


#: RELAYMQ_NATIVE_DIR of each tree given one (``--tree PATH=NATIVE_DIR``).
native_dirs: dict[Path, str | None] = {}


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


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS of process ``pid`` and its RssAnon / RssFile (``smaps_rollup``), in KiB."""
    found: dict[str, int] = {}
    for name in (f"/proc/{pid}/status", f"/proc/{pid}/smaps_rollup"):
        with open(name, encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "Anonymous") and rest.strip().endswith("kB"):
                    found.setdefault(key, int(rest.split()[0]))
    return found


def import_time_us(log: str) -> tuple[int, int]:
    """(the sum of every module's own import time in microseconds, how many modules) from the
    ``-X importtime`` lines of ``log``."""
    total = count = 0
    for line in log.splitlines():
        if line.startswith("import time:") and "|" in line:
            own = line.split(":", 1)[1].split("|")[0].strip()
            if own.isdigit():
                total, count = total + int(own), count + 1
    return total, count


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def tree_and_build(arg: str) -> tuple[Path, str | None]:
    """``--tree PATH[=NATIVE_DIR]``."""
    path, _, native = arg.partition("=")
    return Path(path), native or None


def start_once(tree: Path, filled: Path, command: list[str], port: int, work: Path,
               importtime: bool = False, session: bool = False) -> tuple[float, float, float, dict[str, int], str]:
    """(wall, schedstat CPU, utime + stime, memory in KiB, the log) from the exec until the
    port accepts."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(filled, work)
    command = [part.replace(str(filled), str(work)) for part in command]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree / "src"), PYTHONUNBUFFERED="1")
    if native_dirs.get(tree):
        env["RELAYMQ_NATIVE_DIR"] = native_dirs[tree]
    if importtime:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
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
            memory = memory_kib(proc.pid)
            if session:
                scenarios.wait_for_session("127.0.0.1", port, "bench-restart", username=USERNAME)
                at_session = time.monotonic() - began, cpu_seconds(proc.pid)[0]
                print(f"  the backlogged session accepted: wall {at_session[0]:.3f} s, CPU {at_session[1]:.3f} s",
                      flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    return wall, sched, ticks, memory, (work / "run.log").read_text(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", type=tree_and_build, required=True,
                        help="a source tree, =NATIVE_DIR: with its own compiled build")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--messages", type=int, default=100_000, help="the backlog (0: an empty data directory)")
    parser.add_argument("--defaults", action="store_true", help="the embedded defaults, not bench/compare's configuration")
    parser.add_argument("--importtime", action="store_true", help="one more start per tree under -X importtime")
    args = parser.parse_args()
    native_dirs.update(args.tree)
    args.tree = [tree for tree, _ in args.tree]
    workdir = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        filled = workdir / "fill"
        broker = make_broker("relaymq", filled)
        if args.messages:
            broker.start()
            try:
                scenarios.queue_backlog("127.0.0.1", broker.port, "bench-restart", "bench/restart",
                                        args.messages, username=USERNAME)
            finally:
                broker.stop(timeout=300)
        else:
            broker.data_dir.mkdir(parents=True, exist_ok=True)
        command, port = broker.command(), broker.port
        if args.defaults:  # the ports and the data directory only; no --config, no --store
            command = [*command[:4], "--port", str(port), "--data-dir", str(broker.data_dir),
                       "--http-port", "0", "--channel-port", "0"]
        for tree in args.tree:  # byte-code files written, caches warm: not counted
            start_once(tree, filled, command, port, workdir / "run")
        results: dict[Path, list[float]] = {tree: [] for tree in args.tree}
        rss: dict[Path, list[int]] = {tree: [] for tree in args.tree}
        for round_ in range(args.rounds):
            for tree in args.tree if round_ % 2 == 0 else args.tree[::-1]:
                wall, sched, ticks, memory, _ = start_once(tree, filled, command, port, workdir / "run",
                                                           session=args.messages > 0)
                results[tree].append(sched)
                rss[tree].append(memory["VmRSS"])
                print(f"{tree}: wall {wall:.3f} s, CPU {sched:.3f} s (utime+stime {ticks:.2f} s), "
                      f"VmRSS {memory['VmRSS'] / 1024:.1f} MiB (RssAnon {memory.get('RssAnon', 0) / 1024:.1f}, "
                      f"RssFile {memory.get('RssFile', 0) / 1024:.1f})", flush=True)
        for tree, cpus in results.items():
            print(f"{tree}: CPU median {statistics.median(cpus):.3f} s of {[round(c, 3) for c in cpus]}; "
                  f"VmRSS median {statistics.median(rss[tree]) / 1024:.1f} MiB")
        if args.importtime:
            for tree in args.tree:
                log = start_once(tree, filled, command, port, workdir / "run", importtime=True)[4]
                total, count = import_time_us(log)
                print(f"{tree}: -X importtime {count} modules, {total / 1e6:.3f} s in all")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
