"""A telemetry device: sends the seed's event batch (batch.xml, seed 000 l.455-470) to a
SCADAInput port over MQIsdp v3 (MQTT protocol level 3, as the seed's devices speak), then
optionally more batches with fresh timestamps, as devices do every 15 minutes (seed 000 l.445).

    python device_simulator.py --port 1884                 # one batch: the seed's sample
    python device_simulator.py --port 1884 --count 10 --interval 2 --unit 777
    python device_simulator.py --port 1884 --file bad.xml  # send a file instead (errors)
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

SAMPLE = Path(__file__).with_name("batch.xml")

BATCH = """<?xml version="1.0" encoding="UTF-8"?>
<events d_tstamp="{now}">
  <StateChange topic="LCUnit/{unit}/StateChange" d_tstamp="{now}" i_state="1" i_old_state="0"><![CDATA[Changing state from 'Starting' to 'Payload' because 'The startup routine is complete']]></StateChange>
  <Heartbeat topic="LCUnit/{unit}/Heartbeat" d_tstamp="{now}" i_state="1"><d_tstamp>{now}</d_tstamp><i_state>1</i_state></Heartbeat>
</events>
"""


def batch(unit: str, when: float) -> bytes:
    """A two-event batch like the seed's, for ``unit`` at time ``when``."""
    return BATCH.format(unit=unit, now=time.strftime("%Y%m%d%H%M%S", time.gmtime(when))).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1884, help="the SCADAInput port (default 1884)")
    parser.add_argument("--topic", default="LCUnit/batch", help="topic the device publishes batches on")
    parser.add_argument("--count", type=int, default=1, help="batches to send (the first is the seed's sample)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between batches")
    parser.add_argument("--unit", default="12345", help="unit number in the generated batches")
    parser.add_argument("--qos", type=int, default=1, choices=(0, 1, 2))
    parser.add_argument("--file", type=Path, help="send this file's bytes as every batch instead")
    args = parser.parse_args()

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"LCUnit-{uuid.uuid4().hex[:8]}",
                         protocol=mqtt.MQTTv31)  # MQIsdp, protocol level 3
    try:
        client.connect(args.host, args.port)
    except OSError as err:
        print(f"cannot connect to {args.host}:{args.port}: {err.strerror or err} (is the broker running, "
              "with the telemetry flow deployed on that port?)", file=sys.stderr)
        return 1
    client.loop_start()
    try:
        for i in range(args.count):
            if args.file is not None:
                payload = args.file.read_bytes()
            else:
                payload = SAMPLE.read_bytes() if i == 0 else batch(args.unit, time.time())
            info = client.publish(args.topic, payload, qos=args.qos)
            info.wait_for_publish(30)
            if not info.is_published():
                print(f"batch {i + 1} not acknowledged within 30 s", file=sys.stderr)
                return 1
            print(f"sent batch {i + 1}/{args.count} ({len(payload)} bytes) to {args.host}:{args.port}")
            if i + 1 < args.count:
                time.sleep(args.interval)
    finally:
        client.disconnect()
        client.loop_stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
