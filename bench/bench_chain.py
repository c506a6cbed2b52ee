"""Messages per second through the three-queue-manager chain of issue 5: DEVICE (asynchronous
remote queue, connection via SERVER) -> SERVER (store-and-forward queue) -> TARGET (local
queue), each queue manager in its own process on SQLite, assured two-phase transfer on both
hops (docs/channels.md).

The messages are put on the device's store first (not timed). The three processes then
start and open their stores; the device waits for a "go" until all of them report ready, so
process start-up is not timed either. The clock runs from the go until TARGET shows all of
them confirmed: the end-to-end channel throughput (two hops, each message put unconfirmed,
confirmed and removed at the sender: six durable writes per message per hop pair).

Run: ``.venv/bin/python bench/bench_chain.py [--messages 10000] [--batch 200]
[--synchronous FULL|NORMAL] [--size 100] [--dir DIR] [--keep]``. The work directory is made
under DIR (default: the system's temporary directory), which must be on the disk you care
about (tmpfs makes fsync free), and removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _define(qm: Any, queues: list[dict[str, Any]]) -> None:
    from relaymq.qmgr.errors import QueueExists

    for queue in queues:
        props = dict(queue)
        name, kind = props.pop("name"), props.pop("kind", "local")
        try:
            qm.define_queue(name, kind, **props)
        except QueueExists:
            pass


def run_node(config_path: str) -> None:
    """One queue manager with its channels until SIGTERM; TARGET reports its depth."""
    from relaymq.qmgr import QueueManager
    from relaymq.qmgr.channel_auth import ChannelAuthenticator
    from relaymq.qmgr.channel_service import ChannelService
    from relaymq.qmgr.channel_settings import build_connections

    config = json.loads(Path(config_path).read_text())
    qm = QueueManager.open(config["name"], config["data_dir"], synchronous=config["synchronous"])
    _define(qm, config["queues"])

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        channels = ChannelService(qm, build_connections(config["connections"], "connection", None),
                                  listen_host="127.0.0.1", listen_port=config["port"],
                                  authenticator=ChannelAuthenticator.anonymous())
        go = config.get("go")
        if go:  # the sending end: ready, then wait for the start signal (start-up is not timed)
            Path(config["ready"]).write_text("ready")
            while not Path(go).exists() and not stop.is_set():
                await asyncio.sleep(0.005)
        await channels.start()
        if not go:
            Path(config["ready"]).write_text("ready")
        report = config.get("report")
        while not stop.is_set():
            if report:
                # depth() is cheap; browse() decodes every message, so only at the end: the
                # figure counts confirmed (visible) messages only.
                depth = qm.depth("IN")
                if depth >= config["expect"]:
                    depth = len(qm.browse("IN"))
                Path(report).write_text(str(depth))
            try:
                await asyncio.wait_for(stop.wait(), 0.05)
            except TimeoutError:
                pass
        await channels.stop()

    asyncio.run(main())
    qm.close()


def _node(workdir: Path, name: str, port: int, queues: list, connections: list, synchronous: str,
          report: str | None = None, expect: int = 0, go: str | None = None) -> tuple[Path, dict[str, Any]]:
    data_dir = workdir / name
    data_dir.mkdir(parents=True, exist_ok=True)
    config = {"name": name, "data_dir": str(data_dir), "port": port, "queues": queues,
              "connections": connections, "synchronous": synchronous, "report": report,
              "expect": expect, "go": go, "ready": str(data_dir / "ready")}
    path = data_dir / "node.json"
    path.write_text(json.dumps(config))
    return path, config


def _start(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, __file__, "node", str(path)], stdin=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--size", type=int, default=100, help="body bytes per message")
    parser.add_argument("--synchronous", default="FULL", choices=("FULL", "NORMAL"))
    parser.add_argument("--dir", default=None, help="where to make the work directory")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-chain-", dir=args.dir))
    try:
        _bench(args, workdir)
    finally:
        if args.keep:
            print(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _bench(args: argparse.Namespace, workdir: Path) -> None:
    from relaymq.message import Message
    from relaymq.qmgr import QueueManager

    ports = {name: _free_port() for name in ("TARGET", "SERVER", "DEVICE")}
    link = {"batch": args.batch, "retry_initial_ms": 20, "retry_max_ms": 500}
    report = str(workdir / "target-depth")
    target = _node(workdir, "TARGET", ports["TARGET"], [{"name": "IN"}], [], args.synchronous, report,
                   args.messages)
    server = _node(workdir, "SERVER", ports["SERVER"],
                   [{"name": "SF", "kind": "store_and_forward", "target_queue_managers": ["TARGET"]}],
                   [{"name": "TARGET", "address": f"127.0.0.1:{ports['TARGET']}", **link}], args.synchronous)
    go = workdir / "go"
    device = _node(workdir, "DEVICE", ports["DEVICE"],
                   [{"name": "IN", "kind": "remote", "queue_manager": "TARGET", "mode": "async"}],
                   [{"name": "SERVER", "address": f"127.0.0.1:{ports['SERVER']}", **link},
                    {"name": "TARGET", "via": "SERVER"}], args.synchronous, go=str(go))

    qm = QueueManager.open("DEVICE", device[1]["data_dir"], synchronous=args.synchronous)
    _define(qm, device[1]["queues"])
    started = time.perf_counter()
    for seq in range(args.messages):
        message = Message()
        message.mq.md.Format = "MQSTR"
        message.mq.md.Priority = seq % 10
        message.mq.body = (b"%08d" % seq).ljust(args.size, b".")
        qm.put("IN", message, qmgr="TARGET")
    put_seconds = time.perf_counter() - started
    qm.close()

    procs: list[subprocess.Popen[bytes]] = []
    depth = 0
    try:
        deadline = time.perf_counter() + 120
        for path, config in (target, server, device):  # each listening before the next one calls it
            procs.append(_start(path))
            while not Path(config["ready"]).exists():  # started, store open, listening
                if time.perf_counter() > deadline or procs[-1].poll() is not None:
                    raise SystemExit(f"queue manager {config['name']} did not start")
                time.sleep(0.01)
        started = time.perf_counter()
        go.write_text("go")
        while depth < args.messages:
            time.sleep(0.02)
            try:
                depth = int(Path(report).read_text() or 0)
            except (OSError, ValueError):
                pass
            if time.perf_counter() - started > 600:
                raise SystemExit(f"only {depth} of {args.messages} arrived in 600 s")
        elapsed = time.perf_counter() - started
    finally:
        for proc in reversed(procs):  # the device first: nothing left trying to reach a stopped peer
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print(f"device puts: {args.messages / put_seconds:,.0f} msg/s (one at a time, synchronous={args.synchronous})")
    print(f"chain DEVICE -> SERVER -> TARGET: {args.messages} messages of {args.size} bytes in {elapsed:.2f} s"
          f" = {args.messages / elapsed:,.0f} msg/s (batch {args.batch}, synchronous={args.synchronous},"
          f" process start-up excluded)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "node":
        run_node(sys.argv[2])
    else:
        main()
