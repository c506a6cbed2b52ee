"""Node code runs on the execution group's worker threads, not on the broker's event loop
(flows-http.md item 3; seed 000 l.508: additional instances are more workers for one flow).
Real broker, real MQTT clients; the Compute nodes block on files the test controls, so the
assertions are about what happens *while* they block, never about speed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flow_helpers import WAIT, Client, FlowBroker, admin, http, queue_depth
from harness import free_port

#: Marks its start in DIR/started-<body>, then blocks until DIR/go exists.
BLOCKING = ("import os, time\n"
            "def main(c):\n"
            "    d = %r\n"
            "    open(os.path.join(d, 'started-' + c.input.mq.body.decode()), 'w').close()\n"
            "    while not os.path.exists(os.path.join(d, 'go')):\n"
            "        time.sleep(0.01)\n"
            "    return c.copy_input()\n")


def wait_for_files(folder: Path, names: list[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not all((folder / n).exists() for n in names):
        assert time.monotonic() < deadline, f"{names} not all in {sorted(p.name for p in folder.iterdir())}"
        time.sleep(0.02)


@pytest.fixture
def broker():
    b = FlowBroker(queues=("OUTQ",))
    b.start()
    yield b
    b.cleanup()


def deploy_blocking(broker: FlowBroker, folder: Path, port: int, instances: int) -> None:
    flow = (f"flow: blocking\nadditional_instances: {instances}\nnodes:\n"
            f"  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            f"  Slow: {{type: Compute, code: {json.dumps(BLOCKING % str(folder))}}}\n"
            "  Put: {type: MQOutput, queue: OUTQ}\nconnections:\n  - In.out -> Slow\n  - Slow.out -> Put\n")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer


def test_a_blocked_compute_does_not_stall_other_traffic(broker, tmp_path: Path):
    """Item 3: while a Compute node is stuck, an MQTT 5 publish/subscribe round trip on the
    broker's own port, the flow admin over HTTP and another flow all still answer; the stuck
    run then completes when released."""
    port = free_port()
    deploy_blocking(broker, tmp_path, port, 0)
    echo_port = free_port()
    echo = (f"flow: echo\nnodes:\n  In: {{type: SCADAInput, port: {echo_port}, host: 127.0.0.1}}\n"
            "  Out: {type: Publication, topic: echo/out}\nconnections:\n  - In.out -> Out\n")
    assert admin(broker, "POST", "", echo.encode())[0] == 201
    device = Client(port, "v311", "dev")
    sub = Client(broker.port, "v5").subscribe("round/trip")
    pub = Client(broker.port, "v5")
    echo_sub = Client(broker.port, "v5").subscribe("echo/out")
    echo_device = Client(echo_port, "v311", "dev2")
    try:
        device.client.publish("t", b"stuck", qos=1)
        wait_for_files(tmp_path, ["started-stuck"])
        pub.publish("round/trip", b"ping")
        assert sub.wait_for(1)[0][:2] == ("round/trip", b"ping")
        assert http("GET", f"{broker.url}/relaymq/flows/blocking", headers=broker.admin_auth(),
                    timeout=WAIT).status == 200
        echo_device.publish("x", b"through another flow")
        assert echo_sub.wait_for(1)[0][1] == b"through another flow"
        assert queue_depth(broker, "OUTQ") == 0  # the stuck run is still stuck
        (tmp_path / "go").write_text("")
        deadline = time.monotonic() + WAIT
        while queue_depth(broker, "OUTQ") != 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        (tmp_path / "go").write_text("")
        for c in (device, sub, pub, echo_sub, echo_device):
            c.close()


def test_additional_instances_run_at_the_same_time(broker, tmp_path: Path):
    """Item 3 (seed 000 l.508): with additional_instances 2 the flow has three workers: three
    messages are inside the Compute node at once (each waits for the others to have started),
    a fourth waits for a free worker."""
    port = free_port()
    deploy_blocking(broker, tmp_path, port, 2)
    device = Client(port, "v311", "dev")
    try:
        for body in (b"a", b"b", b"c", b"d"):
            device.client.publish("t", body, qos=0)
        wait_for_files(tmp_path, ["started-a", "started-b", "started-c"])
        time.sleep(0.3)
        assert not (tmp_path / "started-d").exists()  # three instances, all busy
        assert admin(broker, "GET", "/blocking")[1]["instances"] == 3
        (tmp_path / "go").write_text("")
        deadline = time.monotonic() + WAIT
        while queue_depth(broker, "OUTQ") != 4:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        (tmp_path / "go").write_text("")
        device.close()
