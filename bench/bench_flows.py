"""Telemetry batches per second through the seed's telemetry flow (issue 6 "Done when" 2).

    .venv/bin/python bench/bench_flows.py [--batches N] [--qos 0|1|2] [--persistent-device] [--broker-only]

Two figures:

* ``engine``: the flow run in-process with no broker (``Flow.run_sync``): parse the XMLNS
  batch, split it in the Compute node, record the two publications. The ceiling of the flow
  code itself, and what the Spark pipeline gets per core.
* ``broker``: a real broker with the flow deployed; one MQIsdp v3 device publishes N batches
  to the SCADAInput port (QoS 1 by default, each acknowledged once its run has committed), an
  MQTT 5 subscriber counts the 2N publications. Batches per second = N / (time from first
  publish to last publication received), and the broker process's CPU time (user + system,
  every thread, from ``/proc/PID/stat``) over that phase per batch: the figure to compare on
  a loaded machine. The device's session is clean unless ``--persistent-device``; with it
  and ``--qos 2`` each batch also writes and deletes its release marker
  (relaymq.flows.releases: only a persistent session's publication needs one).

Asserts nothing about speed. Leaves nothing behind (the broker's work directory and the flow
file are removed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "flows"))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

from flow_helpers import TELEMETRY, FlowBroker, admin, flow_file  # noqa: E402
from harness import free_port  # noqa: E402
from relaymq.flows import load_flow  # noqa: E402
from relaymq.message.mqtt_mapping import from_mqtt  # noqa: E402

BATCH = (TELEMETRY / "batch.xml").read_bytes()


def bench_engine(batches: int) -> float:
    flow = load_flow(str(TELEMETRY / "telemetry.yaml"))
    start = time.perf_counter()
    for _ in range(batches):
        ports = flow.run_sync(from_mqtt("LCUnit/batch", BATCH, 1, domain="XMLNS"))
        assert len(ports.publications) == 2
    return batches / (time.perf_counter() - start)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid``, its ended threads included."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_broker(batches: int, qos: int, persistent: bool = False) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-flows-") as tmp_dir:
        return _bench_broker(Path(tmp_dir), batches, qos, persistent)


def _bench_broker(tmp: Path, batches: int, qos: int, persistent: bool) -> tuple[float, float]:
    port = free_port()
    with FlowBroker(queues=("TELEMETRY.ERRORS",), config={"broker": {"log_level": "warning"}, "limits": {"max_queued_messages": 1000000}}) as broker:
        path = flow_file(tmp, TELEMETRY / "telemetry.yaml", {"SCADAInput1": {"port": port},
                                                               "SCADAInput2": {"port": free_port()}})
        status, answer = admin(broker, "POST", "", path.read_bytes())
        assert status == 201, answer
        done = threading.Event()
        received = [0]

        def on_message(client, userdata, message):  # noqa: ANN001
            received[0] += 1
            if received[0] >= 2 * batches:
                done.set()

        sub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv5)
        sub.on_message = on_message
        sub.connect("127.0.0.1", broker.port)
        sub.subscribe("LCUnit/#", qos)
        sub.loop_start()
        time.sleep(0.5)
        device = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv31,
                             clean_session=not persistent)
        device.max_inflight_messages_set(100)
        device.max_queued_messages_set(0)
        device.connect("127.0.0.1", port)
        device.loop_start()
        time.sleep(0.3)
        assert broker.proc is not None
        cpu = process_cpu(broker.proc.pid)
        start = time.perf_counter()
        for _ in range(batches):
            device.publish("LCUnit/batch", BATCH, qos=qos)
        if not done.wait(120):
            raise SystemExit(f"only {received[0]} of {2 * batches} publications arrived\n{broker.log_tail(20)}")
        elapsed = time.perf_counter() - start
        cpu = process_cpu(broker.proc.pid) - cpu
        for client in (device, sub):
            client.disconnect()
            client.loop_stop()
    return batches / elapsed, cpu / batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--qos", type=int, default=1, choices=(0, 1, 2))
    parser.add_argument("--broker-only", action="store_true", help="skip the in-process figure")
    parser.add_argument("--persistent-device", action="store_true",
                        help="the device connects with clean session 0 (QoS 2: release markers)")
    args = parser.parse_args()
    if not args.broker_only:
        print(f"engine (in-process, no broker): {bench_engine(args.batches):,.0f} batches/s")
    rate, cpu = bench_broker(args.batches, args.qos, args.persistent_device)
    session = "persistent" if args.persistent_device else "clean"
    print(f"broker (MQIsdp v3 device, {session} session -> flow -> MQTT 5 subscriber, QoS {args.qos}): "
          f"{rate:,.0f} batches/s ({2 * args.batches} publications), broker CPU {cpu * 1e3:.3f} ms/batch")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
