"""The data pipeline's figures (issue 7 "Done when" 3):

    .venv/bin/python bench/bench_pipeline.py [--records N] [--units U] [--skip-latency]

* ``log -> Spark -> Parquet``: N messages appended to a message log (SQLite, 4 partitions), then
  read by the ``relaymq`` data source on ``local[2]`` and written as Parquet, once as a batch
  job and once as a streaming query under Trigger.AvailableNow. Messages per second = N / the
  Spark job's wall time (session start excluded).
* ``alert latency``: a broker with the example's archive rule and the example job running
  (``--interval 1 second``, in this process's session). Devices report in 15-minute batches of
  device time; units 1..S fall silent one round after the other (unit u sends batches 0..u-1).
  Each round every unit still talking publishes its next batch; for each alert the latency is
  the wall time from the end of the publication of the round that makes the silence certain
  (the watermark reaches the unit's last event + 30 minutes) to the alert arriving at a
  subscriber of ``alerts/LCUnit/#``: archive commit, micro-batch trigger, split, per-unit
  state, sink. Before the next round the bench waits until both queries caught up.

Needs the ``spark`` extra (pyspark, pandas, pyarrow). Asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

LATENESS, SILENCE = timedelta(minutes=15), timedelta(minutes=30)  # the example job's
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
sys.path.insert(0, str(ROOT / "examples" / "telemetry-analytics"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def throughput(spark, records: int, workdir: Path) -> dict[str, float]:
    from relaymq.pipeline.log import MessageLog
    from relaymq.pipeline.record import LogRecord

    log = MessageLog(str(workdir / "log"))
    body = b"<events d_tstamp='20040417103118'>" + b"x" * 200 + b"</events>"
    chunk = 20_000
    started = time.perf_counter()
    for first in range(0, records, chunk):
        log.append([LogRecord(topic=f"LCUnit/{i % 500}/batch", partition=f"telemetry-{i % 4}", qos=1,
                              usr={"unit": str(i % 500)}, body=body) for i in range(first, min(records, first + chunk))])
    append_rate = records / (time.perf_counter() - started)
    log.close()
    figures = {"log append (msg/s)": append_rate}
    # warm-up: the first Spark job of a session pays for class loading and JIT compilation
    spark.read.format("relaymq").option("log", str(workdir / "log")).option("endingOffsets", json.dumps(
        {"telemetry-0": 1000})).load().write.mode("overwrite").parquet(str(workdir / "warmup.parquet"))
    started = time.perf_counter()
    (spark.read.format("relaymq").option("log", str(workdir / "log")).load()
     .write.mode("overwrite").parquet(str(workdir / "batch.parquet")))
    figures["batch read -> Parquet (msg/s)"] = records / (time.perf_counter() - started)
    started = time.perf_counter()
    query = (spark.readStream.format("relaymq").option("log", str(workdir / "log")).load()
             .writeStream.format("parquet").option("path", str(workdir / "stream.parquet"))
             .option("checkpointLocation", str(workdir / "cp")).trigger(availableNow=True).start())
    query.awaitTermination()
    figures["stream (AvailableNow) -> Parquet (msg/s)"] = records / (time.perf_counter() - started)
    assert spark.read.parquet(str(workdir / "stream.parquet")).count() == records
    return figures


def progress_total(query) -> int:
    """Entries of the log a streaming query has processed (its source's committed end offset)."""
    progress = query.lastProgress
    if not progress or not progress.get("sources"):
        return 0
    end = progress["sources"][0].get("endOffset") or {}
    if isinstance(end, str):
        end = json.loads(end)
    return sum(int(v) for v in end.values())


def alert_latency(spark, units: int, silent: int, workdir: Path) -> list[float]:
    """Latencies (s) of the alerts of ``silent`` units that fall silent one round after the
    other, while the example job runs with a 1 s trigger."""
    import devices
    from pipeline_helpers import ArchiveBroker, Subscriber, archive_toml

    broker = ArchiveBroker(archive_toml([{"name": "telemetry", "topics": ["LCUnit/+/batch"], "partitions": 2}]))
    broker.start()
    sub = Subscriber(broker.port, "alerts/#")
    job = runpy.run_path(str(ROOT / "examples" / "telemetry-analytics" / "telemetry_job.py"), run_name="job")
    args = ["--log", str(broker.data_dir), "--broker", f"127.0.0.1:{broker.port}", "--out", str(workdir / "out"),
            "--interval", "1 second"]
    last_batch = {unit: unit - 1 for unit in range(1, silent + 1)}  # unit u sends batches 0..u-1 only
    latencies: list[float] = []
    failure: list[str] = []

    def wait_until(condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def devices_side() -> None:
        """Rounds of batches: publish, time the alerts that this round makes certain, wait until
        both queries caught up (a thread: the job runs on the thread that made the session)."""
        try:
            if not wait_until(lambda: len(spark.streams.active) == 2, 120):
                failure.append("the job's queries did not start")
                return
            published_entries, newest = 0, None
            last_seen: dict[int, object] = {}
            for batch in range(silent + 4):
                plan = [(u, batch, devices.unit_events(u, batch)) for u in range(1, units + 1)
                        if batch <= last_batch.get(u, batch)]
                for unit, _b, evs in plan:
                    last_seen[unit] = max(e.time for e in evs)
                newest = max(e.time for _u, _b, evs in plan for e in evs)
                devices.publish("127.0.0.1", broker.port, plan)
                published = time.perf_counter()
                published_entries += len(plan)
                watermark = newest - LATENESS
                due = [u for u, b in last_batch.items() if b < batch and last_seen[u] + SILENCE <= watermark
                       and not any(m.topic == f"alerts/LCUnit/{u}" for m in sub.messages)]
                for unit in due:
                    topic = f"alerts/LCUnit/{unit}"
                    if not wait_until(lambda topic=topic: any(m.topic == topic for m in sub.messages), 60):
                        failure.append(f"no alert for unit {unit} after round {batch}")
                        return
                    index = next(i for i, m in enumerate(sub.messages) if m.topic == topic)
                    latencies.append(sub.arrived[index] - published)
                    print(f"  round {batch}: alert {topic} after {latencies[-1]:.2f} s", file=sys.stderr)
                if not wait_until(lambda entries=published_entries: all(progress_total(q) >= entries
                                                                    for q in spark.streams.active), 120):
                    failure.append(f"the job did not catch up with round {batch}")
                    return
        finally:
            for query in spark.streams.active:
                query.stop()

    feeder = threading.Thread(target=devices_side, daemon=True)
    feeder.start()
    try:
        job["run"](spark, args)
    finally:
        feeder.join(60)
        sub.close()
        broker.stop()
    if failure or len(latencies) != silent:
        raise RuntimeError(f"alert latency: {failure or latencies}")
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--units", type=int, default=50)
    parser.add_argument("--silent", type=int, default=5, help="units that fall silent (one alert each)")
    parser.add_argument("--skip-latency", action="store_true")
    options = parser.parse_args()
    from relaymq.pipeline.runner import build_session

    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    spark = build_session("local[2]", app_name="bench-pipeline", conf={"spark.sql.shuffle.partitions": "2"})
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        for name, value in (throughput(spark, options.records, Path(tmp)) if options.records else {}).items():
            print(f"{name:45s} {value:12,.0f}   ({options.records:,} messages, local[2])")
        if not options.skip_latency:
            latencies = sorted(alert_latency(spark, options.units, options.silent, Path(tmp)))
            print(f"{'alert end-to-end latency, median (s)':45s} {statistics.median(latencies):12.2f}   "
                  f"({len(latencies)} alerts, {options.units} units, 1 s trigger)")
            print(f"{'alert end-to-end latency, max (s)':45s} {latencies[-1]:12.2f}")
    spark.stop()
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
