"""Deploying, listing and undeploying flows at run time with ``relaymq flow``, execution
groups, errors for flows that cannot run, persistence across a restart, and a redeploy under
load that loses no message (flows-http.md item 1; issue 6)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flow_helpers import TELEMETRY, Client, FlowBroker, admin, flow_file
from harness import free_port

BATCH = (TELEMETRY / "batch.xml").read_bytes()


def cli(broker: FlowBroker, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relaymq", "flow", *args, "--url", broker.url],
                          capture_output=True, text=True, timeout=60, env=broker.admin_env())


@pytest.fixture
def broker():
    b = FlowBroker(queues=("TELEMETRY.ERRORS", "LOAD"))
    b.start()
    yield b
    b.cleanup()


def test_deploy_list_undeploy_and_restart(broker, tmp_path: Path):
    """flows-http.md item 1: deploy into an execution group without restarting the broker,
    list, survive a restart (kept under the data directory), undeploy for good."""
    port = free_port()
    path = flow_file(tmp_path, TELEMETRY / "telemetry.yaml", {"SCADAInput1": {"port": port}, "SCADAInput2": {"port": free_port()}})
    done = cli(broker, "deploy", str(path), "--group", "sensors")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("telemetry: deployed to group sensors")
    listing = cli(broker, "list")
    assert listing.returncode == 0 and listing.stdout.startswith("sensors/telemetry: 5 nodes, 2 instance(s)")
    broker.restart()
    status, answer = admin(broker, "GET", "/telemetry")
    assert status == 200 and answer["group"] == "sensors", broker.log_tail(15)
    sub = Client(broker.port, "v5").subscribe("LCUnit/#")
    device = Client(port, "v31", "dev")
    try:
        device.publish("b", BATCH)
        assert len(sub.wait_for(2)) == 2  # the restored flow runs
    finally:
        sub.close()
        device.close()
    gone = cli(broker, "undeploy", "telemetry")
    assert gone.returncode == 0 and "undeployed from group sensors" in gone.stdout
    broker.restart()
    assert cli(broker, "list").stdout.strip() == "no flows deployed"


def test_cli_errors(broker, tmp_path: Path):
    """A flow file error is exit 2 naming file/node/key; a flow the broker cannot run (its
    port taken by another flow) is exit 1 with the broker's one-line reason; an unknown flow
    cannot be undeployed."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("flow: bad\nnodes:\n  In: {type: MQInput}\n")
    result = cli(broker, "deploy", str(bad))
    assert result.returncode == 2 and f"{bad}: node 'In': key 'queue'" in result.stderr
    port = free_port()
    first = flow_file(tmp_path, TELEMETRY / "telemetry.yaml", {"SCADAInput1": {"port": port}, "SCADAInput2": {"port": free_port()}})
    assert cli(broker, "deploy", str(first)).returncode == 0
    second = flow_file(tmp_path, TELEMETRY / "telemetry.yaml", {"SCADAInput1": {"port": port}, "SCADAInput2": {"port": free_port()}},
                       flow="telemetry2")
    clash = cli(broker, "deploy", str(second))
    assert clash.returncode == 1 and f"port:{port} is used by flow 'telemetry'" in clash.stderr
    missing = cli(broker, "undeploy", "nosuchflow")
    assert missing.returncode == 1 and "no flow 'nosuchflow' is deployed" in missing.stderr
    check = subprocess.run([sys.executable, "-m", "relaymq", "flow", "check", str(first)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and check.stdout.startswith("telemetry: 5 nodes, 5 connections")


def test_redeploy_under_load_loses_no_message(broker, tmp_path: Path):
    """issue 6: redeploying flows while messages flow loses none and runs none twice. A
    device sends numbered messages to flow A (SCADAInput -> MQOutput LOAD); flow B (MQInput
    LOAD -> Publication) publishes them; both are redeployed again and again meanwhile."""
    port = free_port()
    a = (f"flow: load-a\nadditional_instances: 1\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
         "  Put: {type: MQOutput, queue: LOAD}\nconnections:\n  - In.out -> Put\n").encode()
    b = (b"flow: load-b\nadditional_instances: 2\nnodes:\n  In: {type: MQInput, queue: LOAD}\n"
         b"  Pub: {type: Publication, topic: load/out, qos: 1}\nconnections:\n  - In.out -> Pub\n")
    assert admin(broker, "POST", "", a)[0] == 201 and admin(broker, "POST", "", b)[0] == 201
    sub = Client(broker.port, "v5").subscribe("load/out", qos=1)
    device = Client(port, "v311", "dev")
    total = 300
    sent = threading.Event()

    def send() -> None:
        for i in range(total):
            device.publish("n", str(i).encode(), qos=1)
        sent.set()

    sender = threading.Thread(target=send)
    sender.start()
    redeploys = during = 0
    try:
        while not sent.is_set() or redeploys < 4:
            busy = not sent.is_set()
            for body in (a, b):
                status, answer = admin(broker, "POST", "", body)
                assert status == 200 and answer["redeployed"], answer
            redeploys += 1
            during += busy
        sender.join(60)
        got = sub.wait_for(total, timeout=60)
        numbers = sorted(int(p) for _, p, _ in got)
        assert numbers == list(range(total))
    finally:
        sender.join(60)
        sub.close()
        device.close()
    assert during >= 1  # at least one redeploy of both flows overlapped the sending
