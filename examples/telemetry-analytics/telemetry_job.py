"""Telemetry analytics on Spark: the relaymq example pipeline (docs/pipeline.md).

Reads the device batches archived in the message log (rule ``telemetry``), splits each batch
into events with the telemetry flow's own Compute code (examples/telemetry-flow, run by
relaymq.pipeline.sparkflows), then runs two streaming queries:

* ``windows``: per unit and 15-minute event-time window, the number of state changes and the
  longest gap between consecutive heartbeats inside the window (seconds), written as Parquet
  through Spark's file sink (exactly once by its own metadata log);
* ``alerts``: a unit silent for 30 minutes of event time gets one alert published to
  ``alerts/LCUnit/<id>`` through the ``relaymq`` sink (exactly once per micro-batch).

Event time is the events' ``d_tstamp``. Batches arrive up to 15 minutes after their events,
so the watermark allows 15 minutes of lateness: a unit's silence is declared once the stream's
event time has passed its last event by 30 minutes plus that allowance.

Run it:   relaymq pipeline run telemetry_job.py -- --log ./data --broker 127.0.0.1:1883 --out ./out
or:       spark-submit --master spark://host:7077 telemetry_job.py --log http://broker:8080 ...
"""

from __future__ import annotations

import argparse
import json
import os

SILENCE_MINUTES = 30
LATENESS = "15 minutes"
WINDOW = "15 minutes"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FLOW = os.path.join(HERE, "..", "telemetry-flow", "telemetry.yaml")


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


def events(spark, options: argparse.Namespace):
    """The archived batches split into events: unit, kind, event_time, state."""
    from pyspark.sql import functions as F

    from relaymq.pipeline.sparkflows import run_flow

    reader = spark.readStream.format("relaymq").option("log", options.log).option("rules", "telemetry")
    if options.max_records:
        reader = reader.option("maxRecordsPerBatch", options.max_records)
    batches = reader.load().withColumn("domain", F.lit("XMLNS"))
    split = run_flow(batches, options.flow)
    levels = F.split("topic", "/")
    return split.select(
        levels.getItem(1).alias("unit"),
        levels.getItem(2).alias("kind"),
        F.to_timestamp(F.col("usr")["d_tstamp"], "yyyyMMddHHmmss").alias("event_time"),
        F.col("usr")["i_state"].cast("int").alias("state"),
    )


def windows(evts):
    """Per unit and 15-minute window: state changes and the longest heartbeat gap (seconds)."""
    from pyspark.sql import functions as F

    beats = F.when(F.col("kind") == "Heartbeat", F.col("event_time").cast("long"))
    grouped = (evts.withWatermark("event_time", LATENESS)
               .groupBy("unit", F.window("event_time", WINDOW))
               .agg(F.sum(F.when(F.col("kind") == "StateChange", 1).otherwise(0)).alias("state_changes"),
                    F.sort_array(F.collect_list(beats)).alias("beats")))
    gap = F.expr("aggregate(transform(sequence(1, greatest(size(beats) - 1, 0)), "
                 "i -> IF(size(beats) > 1, beats[i] - beats[i - 1], 0)), 0L, (acc, g) -> greatest(acc, g))")
    return grouped.select("unit", F.col("window.start").alias("window_start"),
                          F.col("window.end").alias("window_end"), "state_changes",
                          F.size("beats").alias("heartbeats"), gap.alias("longest_heartbeat_gap_s"))


def alerts(evts):
    """One alert per unit and silence: event-time state per unit with a timeout."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    def silence(key, frames, state):
        import pandas as pd

        (unit,) = key
        if state.hasTimedOut:
            (last_ms,) = state.get
            state.remove()
            last = pd.Timestamp(last_ms, unit="ms", tz="UTC")
            body = json.dumps({"unit": unit, "last_seen": last.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "silent_minutes": SILENCE_MINUTES})
            yield pd.DataFrame({"topic": [f"alerts/LCUnit/{unit}"], "body": [body], "qos": [1]})
            return
        last_ms = max(int(frame["event_time"].max().timestamp() * 1000) for frame in frames)
        if state.exists:
            last_ms = max(last_ms, state.get[0])
        state.update((last_ms,))
        state.setTimeoutTimestamp(last_ms + SILENCE_MINUTES * 60_000)
        yield pd.DataFrame({"topic": [], "body": [], "qos": []})

    return (evts.withWatermark("event_time", LATENESS).groupBy("unit")
            .applyInPandasWithState(silence, "topic STRING, body STRING, qos INT", "last_ms LONG",
                                    "append", GroupStateTimeout.EventTimeTimeout))


def run(spark, args: list[str]) -> int:
    options = parse_args(args)
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
                 .option("ledger", os.path.join(out, "checkpoints", "alerts", "relaymq-ledger"))
                 .trigger(**trigger).queryName("alerts").start())
    if options.once:
        parquet.awaitTermination()
        published.awaitTermination()
    else:
        spark.streams.awaitAnyTermination()
    return 0


if __name__ == "__main__":
    from relaymq.pipeline.runner import submit_main

    submit_main(run)
