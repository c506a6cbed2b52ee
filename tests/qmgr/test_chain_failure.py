"""Failure test of assured delivery through three queue managers in three processes (issue 5
"Failure behaviour"; everyplace.md items 15, 18-19, 22-23, 25; seed 004 l.2597-3136).

DEVICE (an embedded queue manager with an asynchronous remote queue IN@TARGET, connection
TARGET via SERVER) -> SERVER (a store-and-forward queue for TARGET) -> TARGET (local queue
IN). 10,000 messages with random priorities are put on the device in chunks (the next one
when half of what was sent has arrived); meanwhile processes are SIGKILLed and restarted at
random points, every process at least once and until 97% of the messages have arrived, and
a TCP proxy on each link cuts the connection when it forwards a PUT frame (mid-transfer) or a
CONFIRM frame (mid-confirm; at least one on each hop) until then. At the end every message
is on TARGET exactly once and a drain returns them in priority order, FIFO per priority (the
device's put order).

Each queue manager is a `relaymq serve` process with a generated configuration ([qmgr] queues
and connections; [broker] sqlite_synchronous = "NORMAL": in WAL mode a committed transaction
survives the process being killed, which is the failure simulated here; power loss is not).
The device's messages are put by the test on the device's store while the device is down (an
embedded application with the same store), then the device process sends them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .proxy import CuttingProxy

MESSAGES = int(os.environ.get("RELAYMQ_CHAIN_MESSAGES", "10000"))
CHUNKS = 4
KILLS_PER_CHUNK = 1
SEED = int(os.environ.get("RELAYMQ_CHAIN_SEED", str(random.randrange(1 << 30))))
FAST_RETRY = {"retry_initial_ms": 20, "retry_max_ms": 300, "timeout_ms": 5000, "batch": 200}


def define_queues(qm: Any, queues: list[dict[str, Any]]) -> None:
    from relaymq.qmgr.errors import QueueExists

    for queue in queues:
        props = dict(queue)
        name, kind = props.pop("name"), props.pop("type", "local")
        try:
            qm.define_queue(name, kind, **props)
        except QueueExists:
            pass


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _tables(name: str, tables: list[dict[str, Any]]) -> str:
    return "".join(f"[[{name}]]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in t.items()) + "\n" for t in tables)


class Node:
    """One `relaymq serve` process (MQTT, HTTP and the queue manager with its channels) on
    fixed ports and a fixed data directory, restartable; depths are read over REST."""

    def __init__(self, workdir: Path, name: str, queues: list[dict[str, Any]],
                 connections: list[dict[str, Any]], qmgr_extra: dict[str, Any] | None = None,
                 extra_toml: str = "") -> None:
        from harness import free_port

        self.name = name
        # The chains are about delivery, not about who may connect (test_channel_security):
        # peers without certificates or credentials are served unless a test says otherwise.
        qmgr_extra = {"channel_allow_anonymous": True, **(qmgr_extra or {})}
        self.port, self.http_port, self.mqtt_port = free_port(), free_port(), free_port()
        self.data_dir = workdir / name
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.queues = queues
        self.config = self.data_dir / "relaymq.toml"
        self.config.write_text(
            f'[broker]\ndata_dir = "{self.data_dir}"\nsqlite_synchronous = "NORMAL"\nsys_interval = 0\n\n'
            f'[[listener]]\nhost = "127.0.0.1"\nport = {self.mqtt_port}\n\n'
            f'[http]\nhost = "127.0.0.1"\nport = {self.http_port}\n\n'
            f'[qmgr]\nname = "{name}"\nchannel_host = "127.0.0.1"\nchannel_port = {self.port}\n'
            + "".join(f"{k} = {_toml(v)}\n" for k, v in qmgr_extra.items()) + "\n"
            + _tables("qmgr.queue", queues) + _tables("qmgr.connection", connections) + extra_toml)
        self.log = self.data_dir / "broker.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> None:
        from harness import port_accepts

        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "relaymq", "serve", "--config", str(self.config)],
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_accepts("127.0.0.1", self.port, timeout=0.2):  # the channel listener comes last
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def depths(self) -> dict[str, int]:
        """Queue name -> current depth (GET /ibmmq/rest/v3/admin/qmgr/{qmgr}/queue), {} when down.
        The timeout is generous: on a loaded machine (CI's two cores, the tests run two at a
        time) an answer can take seconds, and {} would read as "down"."""
        import urllib.request

        url = f"http://127.0.0.1:{self.http_port}/ibmmq/rest/v3/admin/qmgr/{self.name}/queue"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                queues = json.loads(response.read())["queue"]
        except (OSError, ValueError, KeyError):
            return {}
        return {q["name"]: q["status"]["currentDepth"] for q in queues if "status" in q}


def _put_chunk(device: Node, start: int, count: int, rng: random.Random) -> list[tuple[int, int]]:
    """Put messages start..start+count-1 on the device's store (the device process is down);
    returns (seq, priority) of each."""
    from relaymq.message import Message
    from relaymq.qmgr import QueueManager

    qm = QueueManager.open("DEVICE", str(device.data_dir), synchronous="NORMAL")
    try:
        define_queues(qm, device.queues)
        put = []
        for seq in range(start, start + count):
            priority = rng.randrange(10)
            message = Message()
            message.mq.md.Format = "MQSTR"
            message.mq.md.Priority = priority
            message.mq.body = f"{seq}:{priority}".encode()
            qm.put("IN", message, qmgr="TARGET")
            put.append((seq, priority))
        return put
    finally:
        qm.close()


def _wait_until(condition: Any, timeout: float, describe: Any) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(describe())
        time.sleep(0.1)


class Progress:
    """TARGET's depth over time, as seen over REST (the last known value while it is down)."""

    def __init__(self, target: Node) -> None:
        self.target = target
        self.depth = 0
        self.samples: list[tuple[float, int]] = []

    def update(self) -> int:
        depth = self.target.depths().get("IN")
        if depth is not None:
            self.depth = depth
            self.samples.append((time.monotonic(), depth))
        return self.depth

    def when(self, fraction: float) -> float | None:
        """The first moment TARGET held at least ``fraction`` of the messages."""
        return next((at for at, depth in self.samples if depth >= fraction * MESSAGES), None)


def _test_chain(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    target = Node(tmp_path, "TARGET", [{"name": "IN"}], [])
    # Per PUT or CONFIRM frame; with batches of 200 about a third of the batches are cut. The
    # first cut on each hop is a planned mid-confirm one, so each hop has one for sure.
    to_target = CuttingProxy(target.port, random.Random(SEED + 1), 0.002, plan=("confirm",)).start()
    server = Node(tmp_path, "SERVER", [{"name": "SF", "type": "store_and_forward", "target_queue_managers": ["TARGET"]}],
                  [{"name": "TARGET", "address": f"127.0.0.1:{to_target.port}", **FAST_RETRY}])
    to_server = CuttingProxy(server.port, random.Random(SEED + 2), 0.002, plan=("confirm",)).start()
    device = Node(tmp_path, "DEVICE", [{"name": "IN", "type": "remote", "queue_manager": "TARGET", "mode": "async"}],
                  [{"name": "SERVER", "address": f"127.0.0.1:{to_server.port}", **FAST_RETRY},
                   {"name": "TARGET", "via": "SERVER"}])
    nodes = [target, server, device]
    progress = Progress(target)
    sent: list[tuple[int, int]] = []
    faults: list[tuple[str, float]] = []  # (victim, fraction delivered when it was killed)
    # Kills: the first three take every process once, in a random order; then random ones
    # every 0.3-1.0 s until 97% of the messages have arrived, so faults cover the whole run.
    victims = rng.sample(nodes, len(nodes))
    per_chunk = MESSAGES // CHUNKS
    started = time.monotonic()
    try:
        target.start()
        server.start()
        for chunk in range(CHUNKS):
            # The next chunk goes in once half of what was sent has arrived; the device's
            # store is written by the test while the device process is down (a kill too).
            while chunk and progress.update() < len(sent) // 2:
                time.sleep(0.1)
            device.kill()
            faults.append((device.name, progress.depth / MESSAGES))
            count = per_chunk if chunk < CHUNKS - 1 else MESSAGES - per_chunk * (CHUNKS - 1)
            sent += _put_chunk(device, len(sent), count, rng)
            device.start()
            for _ in range(KILLS_PER_CHUNK):
                time.sleep(rng.uniform(0.3, 1.0))
                victim = victims.pop(0) if victims else rng.choice(nodes)
                faults.append((victim.name, progress.update() / MESSAGES))
                victim.kill()
                time.sleep(rng.uniform(0.0, 0.3))
                victim.start()
        while progress.update() < 0.97 * MESSAGES:
            if time.monotonic() - started > 150:
                raise AssertionError(f"not delivered (seed {SEED}): target {target.depths()}, "
                                     f"server {server.depths()}, device {device.depths()}")
            time.sleep(rng.uniform(0.3, 1.0))
            victim = victims.pop(0) if victims else rng.choice(nodes)
            faults.append((victim.name, progress.update() / MESSAGES))
            victim.kill()
            time.sleep(rng.uniform(0.0, 0.3))
            victim.start()
        faults_end = time.monotonic()
        to_target.enabled = to_server.enabled = False  # let the last messages through
        _wait_until(lambda: progress.update() == MESSAGES
                    and server.depths().get("SF") == 0 and device.depths().get("IN") == 0,
                    60, lambda: f"not delivered (seed {SEED}): target {target.depths()}, "
                                f"server {server.depths()}, device {device.depths()}")
    finally:
        for node in nodes:
            node.stop()
        to_target.close()
        to_server.close()

    from relaymq.qmgr import QueueManager

    qm = QueueManager.open("TARGET", str(target.data_dir), synchronous="NORMAL")
    try:
        drained = []
        while (message := qm.get("IN")) is not None:
            seq, priority = message.mq.body.decode().split(":")
            assert int(priority) == message.mq.md.Priority
            drained.append((int(seq), int(priority)))
    finally:
        qm.close()
    assert len(drained) == len(set(drained)) == MESSAGES, f"duplicates or losses (seed {SEED})"
    assert sorted(drained) == sorted(sent)
    expected = sorted(sent, key=lambda item: (-item[1], item[0]))
    assert drained == expected, f"order differs from priority-then-FIFO (seed {SEED})"
    kills = {node.name: node.kills for node in nodes}
    cuts = {"to_server": to_server.cuts, "to_target": to_target.cuts}
    late = progress.when(0.8)
    late_cuts = {hop: sum(1 for _, at in proxy.cut_times if late is not None and at >= late)
                 for hop, proxy in (("to_server", to_server), ("to_target", to_target))}
    print(f"seed {SEED}: kills {kills}, cuts {cuts} ({late_cuts} after 80% delivered), "
          f"kills at {[f'{name}@{fraction:.0%}' for name, fraction in faults]}, "
          f"faults for {faults_end - started:.0f} s, total {time.monotonic() - started:.0f} s")
    assert all(count >= 1 for count in kills.values()), f"every process is SIGKILLed at least once: {kills}"
    assert all(c["confirm"] >= 1 for c in cuts.values()), f"a mid-confirm cut on each hop: {cuts}"
    assert sum(c["put"] for c in cuts.values()) >= 1, f"a mid-transfer cut: {cuts}"
    # The faults span the run: kills early and after 80% was delivered, cuts late too.
    assert min(fraction for _, fraction in faults) < 0.2
    assert max(fraction for _, fraction in faults) >= 0.8, f"no kill after 80% delivered: {faults}"
    assert sum(late_cuts.values()) >= 1 or max(fraction for _, fraction in faults) >= 0.9, late_cuts


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chain_exactly_once_in_order_through_kills_and_cuts(tmp_path: Path) -> None:
    """Issue 5 failure behaviour; everyplace.md items 15, 18-19, 22-25 (seed 004
    l.2597-3136, 3143-3795): exactly once, priority then FIFO per source, through
    SIGKILLs of every process and connections cut mid-transfer and mid-confirm."""
    _test_chain(tmp_path)

