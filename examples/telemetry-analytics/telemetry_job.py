"""Telemetry analytics on Spark: the relaymq example pipeline (README.md here, docs/pipeline.md).

Reads the device batches archived in the message log (rule ``telemetry``), splits each batch
into events with the telemetry flow's own Compute code (examples/telemetry-flow, run by
relaymq.pipeline.sparkflows; a batch the flow rejects takes the flow's failure path and is
not analysed), then runs two streaming queries over the events, per unit:

* ``windows`` (Parquet, through Spark's file sink): per unit and 15-minute event-time window
  ``[start, start + 15 min)``, the number of state changes, the number of heartbeats and the
  longest heartbeat gap. A gap is the time between two consecutive heartbeats of the unit; it
  belongs to the window of the heartbeat that ends it and is measured from the previous
  heartbeat even when that was in an earlier window (so a unit that was quiet for an hour
  shows a 3600 s gap in the window where it speaks again). ``longest_heartbeat_gap_s`` is null
  when no gap ends in the window (the unit's first heartbeat, or no heartbeat at all);
* ``alerts`` (the ``relaymq`` sink, to ``alerts/LCUnit/<id>``): one alert each time a unit is
  silent for 30 minutes: after an event at time L, no event of that unit in (L, L + 30 min].

Time and its reference clock. Time is event time, the ``d_tstamp`` of each event. Devices send
their events in 15-minute batches, so an event can arrive up to 15 minutes (``LATENESS``) after
the newest event of other units; the stream's watermark is the newest event time seen, minus
those 15 minutes, and everything at or before the watermark is final (Spark drops anything
older that still arrives). A window is written once the watermark reaches its end; a silence
after L is known once the watermark reaches L + 30 min - that is, when the newest event of the
whole fleet is 45 minutes past L. The alert means exactly "no event in the 30 minutes after
``last_seen``"; it is raised as soon as that is certain, not earlier.

Limits (documented in README.md): the clock is the fleet's own event time, so if every unit
stops, time stops and no alert fires (watch the broker itself for that); an event dated after
its batch was archived (more than ``CLOCK_TOLERANCE`` ahead: a device clock running fast)
would push the watermark for everyone, so it is dropped; events without a valid ``d_tstamp``
are dropped; with ``--once`` the newest windows and silences (those the watermark has not
reached) are written by a later run, when newer events have arrived.

Run it:   relaymq pipeline run telemetry_job.py -- --log ./data --broker 127.0.0.1:1883 --out ./out
or:       spark-submit --master spark://host:7077 telemetry_job.py --log http://broker:8080 ...
"""

from __future__ import annotations

import argparse
import json
import os

WINDOW_MS = 15 * 60_000
SILENCE_MS = 30 * 60_000
LATENESS = "15 minutes"
CLOCK_TOLERANCE = "5 minutes"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FLOW = os.path.join(HERE, "..", "telemetry-flow", "telemetry.yaml")

EVENTS_SCHEMA = "unit STRING, kind STRING, event_time TIMESTAMP, state INT"
WINDOWS_SCHEMA = ("unit STRING, window_start TIMESTAMP, window_end TIMESTAMP, state_changes INT, "
                  "heartbeats INT, longest_heartbeat_gap_s LONG")
ALERTS_SCHEMA = "topic STRING, body STRING, qos INT"
STATE_SCHEMA = "tracker STRING"


def parse_args(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="telemetry_job.py")
    parser.add_argument("--log", required=True, help="the message log: a data directory or http://broker:port")
    parser.add_argument("--broker", required=True, help="MQTT host:port the alerts are published to")
    parser.add_argument("--out", required=True, help="directory for Parquet output and checkpoints")
    parser.add_argument("--flow", default=DEFAULT_FLOW, help="the telemetry flow whose Compute splits batches")
    parser.add_argument("--max-records", type=int, default=0, help="maxRecordsPerBatch (0: no limit)")
    parser.add_argument("--once", action="store_true", help="process what is archived now, then stop")
    parser.add_argument("--interval", default="10 seconds", help="trigger interval when not --once")
    return parser.parse_args(args)


# -- the per-unit tracker: plain Python, run by applyInPandasWithState -------------------------
def new_tracker() -> dict:
    """What is kept per unit between micro-batches."""
    return {"pending": [], "last_beat": None, "last_event": None, "windows": {}, "alerted_for": None,
            "watermark": None, "late": 0}


def advance(tracker: dict, events: list[tuple[int, str]], watermark: int) -> tuple[list[tuple], list[int], int | None]:
    """Add ``events`` ((event time ms, kind), ...) and move the unit's tracker to ``watermark``.

    Events at or before the watermark are final (nothing older is accepted afterwards: Spark
    drops such late rows, and so does this function, counting them in ``late``), so they are
    applied in event-time order; the rest wait in ``pending``. Returns the windows now complete
    ``(start ms, state changes, heartbeats, longest gap s or None)``, the silences now certain
    (the ``last_seen`` ms of each), and the next watermark at which something can happen (for
    the state's event-time timeout), or None."""
    previous = tracker["watermark"]
    for time, kind in events:
        if previous is not None and time <= previous:
            tracker["late"] += 1
        else:
            tracker["pending"].append([int(time), str(kind)])
    tracker["watermark"] = watermark
    final = sorted(e for e in tracker["pending"] if e[0] <= watermark)
    tracker["pending"] = [e for e in tracker["pending"] if e[0] > watermark]
    windows = tracker["windows"]
    silences: list[int] = []
    for time, kind in final:
        last = tracker["last_event"]
        if last is not None and time - last > SILENCE_MS and tracker["alerted_for"] != last:
            silences.append(last)  # the unit came back after more than 30 minutes
            tracker["alerted_for"] = last
        tracker["last_event"] = time if last is None else max(last, time)
        counts = windows.setdefault(str(time - time % WINDOW_MS), [0, 0, None])
        if kind == "StateChange":
            counts[0] += 1
        elif kind == "Heartbeat":
            counts[1] += 1
            if tracker["last_beat"] is not None:
                gap = (time - tracker["last_beat"]) // 1000
                counts[2] = gap if counts[2] is None else max(counts[2], gap)
            tracker["last_beat"] = time
    last = tracker["last_event"]
    if last is not None and tracker["alerted_for"] != last and watermark >= last + SILENCE_MS:
        silences.append(last)  # every event up to the watermark is in: none after last_seen
        tracker["alerted_for"] = last
    done = sorted(int(start) for start in windows if int(start) + WINDOW_MS <= watermark)
    complete = [(start, *windows.pop(str(start))) for start in done]
    deadlines = [int(start) + WINDOW_MS for start in windows]
    deadlines += [t - t % WINDOW_MS + WINDOW_MS for t, _kind in tracker["pending"]]
    if last is not None and tracker["alerted_for"] != last:
        deadlines.append(last + SILENCE_MS)
    return complete, silences, min(deadlines, default=None)


def tracked(output: str):
    """The applyInPandasWithState function of one query: ``windows`` rows or ``alerts`` rows."""

    def track(key, frames, state):
        import pandas as pd

        (unit,) = key
        tracker = json.loads(state.get[0]) if state.exists else new_tracker()
        events: list[tuple[int, str]] = []
        if not state.hasTimedOut:
            for frame in frames:
                times = frame["event_time"].values.astype("datetime64[ms]").astype("int64")
                events.extend(zip(times.tolist(), frame["kind"].tolist()))
        watermark = state.getCurrentWatermarkMs()
        complete, silences, deadline = advance(tracker, events, watermark)
        state.update((json.dumps(tracker),))
        if deadline is not None:
            state.setTimeoutTimestamp(max(deadline - 1, watermark, 1))  # fires once watermark >= deadline
        if output == "windows" and complete:
            yield pd.DataFrame({
                "unit": [unit] * len(complete),
                "window_start": pd.to_datetime([w[0] for w in complete], unit="ms", utc=True),
                "window_end": pd.to_datetime([w[0] + WINDOW_MS for w in complete], unit="ms", utc=True),
                "state_changes": pd.array([w[1] for w in complete], dtype="Int32"),
                "heartbeats": pd.array([w[2] for w in complete], dtype="Int32"),
                "longest_heartbeat_gap_s": pd.array([w[3] for w in complete], dtype="Int64"),
            })
        elif output == "alerts" and silences:
            bodies = [json.dumps({"unit": unit, "silent_minutes": SILENCE_MS // 60_000,
                                  "last_seen": pd.Timestamp(last, unit="ms", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")})
                      for last in silences]
            yield pd.DataFrame({"topic": [f"alerts/LCUnit/{unit}"] * len(bodies), "body": bodies,
                                "qos": pd.array([1] * len(bodies), dtype="Int32")})

    return track


# -- the Spark plan ---------------------------------------------------------------------------
def events(spark, options: argparse.Namespace):
    """The archived batches split into events: unit, kind, event_time, state."""
    from pyspark.sql import functions as F

    from relaymq.pipeline.sparkflows import run_flow

    reader = spark.readStream.format("relaymq").option("log", options.log).option("rules", "telemetry")
    if options.max_records:
        reader = reader.option("maxRecordsPerBatch", options.max_records)
    batches = reader.load().withColumn("domain", F.lit("XMLNS"))
    split = run_flow(batches, options.flow, on_error="failure")  # rejected batches: TELEMETRY.ERRORS puts
    levels = F.split("topic", "/")
    evts = split.where(F.col("topic").isNotNull()).select(
        levels.getItem(1).alias("unit"),
        levels.getItem(2).alias("kind"),
        F.to_timestamp(F.col("usr")["d_tstamp"], "yyyyMMddHHmmss").alias("event_time"),
        F.col("usr")["i_state"].cast("int").alias("state"),
        F.col("timestamp").alias("archived"),
    )
    return (evts.where(F.col("event_time").isNotNull() & F.col("unit").isNotNull())
            .where(F.col("event_time") <= F.col("archived") + F.expr(f"INTERVAL {CLOCK_TOLERANCE}"))
            .drop("archived"))


def per_unit(evts, output: str, schema: str):
    from pyspark.sql.streaming.state import GroupStateTimeout

    return (evts.withWatermark("event_time", LATENESS).groupBy("unit")
            .applyInPandasWithState(tracked(output), schema, STATE_SCHEMA, "append", GroupStateTimeout.EventTimeTimeout))


def windows(evts):
    """Per unit and 15-minute window: state changes, heartbeats, longest heartbeat gap (s)."""
    return per_unit(evts, "windows", WINDOWS_SCHEMA)


def alerts(evts):
    """One alert per unit and silence of 30 minutes."""
    return per_unit(evts, "alerts", ALERTS_SCHEMA)


def run(spark, args: list[str]) -> int:
    options = parse_args(args)
    from relaymq.pipeline.fetch import open_access

    if not options.log.startswith(("http://", "https://")):
        open_access(options.log)  # a log that is not there: one line now, before any query starts
    evts = events(spark, options)
    out = os.path.abspath(options.out)
    trigger = {"availableNow": True} if options.once else {"processingTime": options.interval}
    parquet = (windows(evts).writeStream.format("parquet").outputMode("append")
               .option("path", os.path.join(out, "windows"))
               .option("checkpointLocation", os.path.join(out, "checkpoints", "windows"))
               .trigger(**trigger).queryName("windows").start())
    published = (alerts(evts).writeStream.format("relaymq").outputMode("append")
                 .option("broker", options.broker).option("sinkId", "telemetry-alerts")
                 .option("checkpointLocation", os.path.join(out, "checkpoints", "alerts"))
                 .trigger(**trigger).queryName("alerts").start())
    queries = [parquet, published]
    if options.once:
        for query in queries:
            query.awaitTermination()
        return 0
    try:  # until one of the two stops (or fails: awaitTermination raises its error)
        while not any(query.awaitTermination(0.5) for query in queries):
            pass
    finally:
        for query in queries:
            query.stop()
    return 0


if __name__ == "__main__":
    from relaymq.pipeline.runner import submit_main

    submit_main(run)
