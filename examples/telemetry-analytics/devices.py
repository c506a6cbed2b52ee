"""Simulated LCUnit devices: telemetry batches in the seed's XML format (flows-http.md items
11-13), published over MQTT to ``LCUnit/<id>/batch`` where the archive rule picks them up.

Each unit sends one batch per 15 minutes of (simulated) device time, holding the events of
those 15 minutes: a heartbeat every ``heartbeat_minutes`` (plus 0-2 minutes of jitter) and, now
and then, a state change. A batch is sent when its 15 minutes are over, so its events are up
to 15 minutes old when it arrives (the job's allowed lateness). Units listed in ``silent``
stop sending from batch ``silent_after`` on, or, with ``resume_at``, until that batch: the
analytics job should raise an alert for each such silence longer than 30 minutes.

    python devices.py --port 1883 --units 50 --batches 8 --silent 7,13 --silent-after 3 [--resume-at 6]

Everything here is deterministic (a seeded random generator), so tests can compute the
expected analytics from the same function.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

START = datetime(2004, 4, 17, 10, 0, 0)
BATCH_MINUTES = 15
STATES = ["Starting", "Payload", "Idle", "Maintenance"]


@dataclass(frozen=True)
class Event:
    unit: int
    kind: str  # "StateChange" or "Heartbeat"
    time: datetime
    state: int
    old_state: int | None = None


def stamp(when: datetime) -> str:
    """The seed's d_tstamp format: yyyyMMddHHmmss."""
    return when.strftime("%Y%m%d%H%M%S")


def unit_events(unit: int, batch: int, heartbeat_minutes: int = 5, seed: int = 7) -> list[Event]:
    """The events of one unit's batch ``batch`` (0-based), in time order, all inside the batch's
    15 minutes (a batch never holds an event from after it was sent)."""
    rng = random.Random(seed * 1_000_003 + unit * 1009 + batch)
    begin = START + timedelta(minutes=BATCH_MINUTES * batch)
    end = begin + timedelta(minutes=BATCH_MINUTES)
    events: list[Event] = []
    state = (unit + batch) % len(STATES)
    offset = rng.randint(0, 59)
    minute = 0
    while minute < BATCH_MINUTES:
        events.append(Event(unit, "Heartbeat", begin + timedelta(minutes=minute, seconds=offset), state))
        change_at = begin + timedelta(minutes=minute, seconds=offset + 30)
        if rng.random() < 0.4 and change_at < end:
            new_state = (state + 1) % len(STATES)
            events.append(Event(unit, "StateChange", change_at, new_state, state))
            state = new_state
        minute += heartbeat_minutes + rng.choice([0, 0, 1, 2])
    return events


def batch_xml(unit: int, batch: int, events: list[Event]) -> bytes:
    """One device batch in the seed's XML telemetry format."""
    sent = START + timedelta(minutes=BATCH_MINUTES * (batch + 1))
    parts = [f'<events d_tstamp="{stamp(sent)}">']
    for e in events:
        topic = f"LCUnit/{e.unit}/{e.kind}"
        if e.kind == "StateChange":
            text = f"Changing state from '{STATES[e.old_state or 0]}' to '{STATES[e.state]}'"
            parts.append(f'<StateChange topic="{topic}" d_tstamp="{stamp(e.time)}" i_state="{e.state}" '
                         f'i_old_state="{e.old_state}"><![CDATA[{text}]]></StateChange>')
        else:
            parts.append(f'<Heartbeat topic="{topic}" d_tstamp="{stamp(e.time)}" i_state="{e.state}">'
                         f'<d_tstamp>{stamp(e.time)}</d_tstamp><i_state>{e.state}</i_state></Heartbeat>')
    parts.append("</events>")
    return "\n".join(parts).encode("utf-8")


def schedule(units: int, batches: int, silent: set[int] = frozenset(), silent_after: int = 0,
             heartbeat_minutes: int = 5, resume_at: int | None = None) -> list[tuple[int, int, list[Event]]]:
    """(unit, batch, events) in sending order: batch by batch, every unit still talking. Units
    in ``silent`` send nothing from batch ``silent_after`` on (until ``resume_at``, if given)."""
    plan = []
    for batch in range(batches):
        for unit in range(1, units + 1):
            if unit in silent and batch >= silent_after and (resume_at is None or batch < resume_at):
                continue
            plan.append((unit, batch, unit_events(unit, batch, heartbeat_minutes)))
    return plan


def publish(host: str, port: int, plan: list[tuple[int, int, list[Event]]], qos: int = 1) -> int:
    """Publish every batch of the plan to LCUnit/<id>/batch; returns how many."""
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="lcunit-simulator", protocol=mqtt.MQTTv5)
    client.connect(host, port)
    client.loop_start()
    infos = [client.publish(f"LCUnit/{unit}/batch", batch_xml(unit, batch, events), qos=qos)
             for unit, batch, events in plan]
    for info in infos:
        info.wait_for_publish(60)
    client.disconnect()
    client.loop_stop()
    return len(infos)


def main() -> None:
    parser = argparse.ArgumentParser(description="publish simulated LCUnit telemetry batches")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    parser.add_argument("--units", type=int, default=50)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--silent", default="7", help="comma-separated units that fall silent")
    parser.add_argument("--silent-after", type=int, default=3, help="batch from which they are silent")
    parser.add_argument("--resume-at", type=int, default=None, help="batch at which they talk again (default: never)")
    parser.add_argument("--from-batch", type=int, default=0,
                        help="send batches from this one on (continue an earlier run: --from-batch 8 --batches 12)")
    args = parser.parse_args()
    silent = {int(u) for u in args.silent.split(",") if u.strip()}
    plan = [item for item in schedule(args.units, args.batches, silent, args.silent_after, resume_at=args.resume_at)
            if item[1] >= args.from_batch]
    print(f"published {publish(args.host, args.port, plan)} batches")


if __name__ == "__main__":
    main()
