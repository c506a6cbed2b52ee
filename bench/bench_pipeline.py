"""The data pipeline's figures (issue 7 "Done when" 3):

    .venv/bin/python bench/bench_pipeline.py [--records N] [--units U] [--skip-latency]

* ``log -> Spark -> Parquet``: N messages appended to a message log (SQLite, 4 partitions), then
  read by the ``relaymq`` data source on ``local[2]`` and written as Parquet, once as a batch
  job and once as a streaming query under Trigger.AvailableNow. Messages per second = N / the
  Spark job's wall time (session start excluded).
* ``alert latency``: a broker with the example's archive rule and the example job running
  (``--interval 1 second``). Devices report in 15-minute batches of device time; unit 1 falls
  silent. Each round the other units publish their next batch; the latency is the wall time
  from the publication of the round that makes unit 1's silence visible (the watermark
  passes its last event + 30 minutes) to the alert arriving at a subscriber of
  ``alerts/LCUnit/#``: archive commit, micro-batch trigger, split, state timeout, sink.

Needs the ``spark`` extra (pyspark, pandas, pyarrow). Asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def alert_latency(spark, units: int, workdir: Path) -> float:
    import devices
    from pipeline_helpers import ArchiveBroker, Subscriber, archive_toml

    broker = ArchiveBroker(archive_toml([{"name": "telemetry", "topics": ["LCUnit/+/batch"], "partitions": 2}]))
    broker.start()
    sub = Subscriber(broker.port, "alerts/#")
    job = runpy.run_path(str(ROOT / "examples" / "telemetry-analytics" / "telemetry_job.py"), run_name="job")
    args = ["--log", str(broker.data_dir), "--broker", f"127.0.0.1:{broker.port}", "--out", str(workdir / "out"),
            "--interval", "1 second"]
    result: dict[str, float] = {}

    def devices_side() -> None:
        """Publish a round of batches, wait for an alert up to 20 s, repeat (a thread: the
        job itself must run on the thread that made the session)."""
        try:
            time.sleep(15)  # let both queries start
            for batch in range(12):
                plan = [(u, batch, devices.unit_events(u, batch)) for u in range(1, units + 1) if u != 1 or batch == 0]
                devices.publish("127.0.0.1", broker.port, plan)
                published = time.perf_counter()
                deadline = published + 20
                while time.perf_counter() < deadline and not sub.messages:
                    time.sleep(0.01)
                if sub.messages:
                    result["latency"] = time.perf_counter() - published
                    print(f"  alert {sub.messages[0].topic} after round {batch}", file=sys.stderr)
                    return
        finally:
            for query in spark.streams.active:
                query.stop()

    feeder = threading.Thread(target=devices_side, daemon=True)
    feeder.start()
    try:
        job["run"](spark, args)
    except Exception as error:  # noqa: BLE001 - stopping the queries ends the job with an error
        if "latency" not in result:
            raise RuntimeError(f"the job failed: {error}") from None
    finally:
        feeder.join(60)
        sub.close()
        broker.stop()
    if "latency" not in result:
        raise RuntimeError("no alert arrived")
    return result["latency"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--units", type=int, default=50)
    parser.add_argument("--skip-latency", action="store_true")
    options = parser.parse_args()
    from relaymq.pipeline.runner import build_session

    spark = build_session("local[2]", app_name="bench-pipeline", conf={"spark.sql.shuffle.partitions": "2"})
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        for name, value in (throughput(spark, options.records, Path(tmp)) if options.records else {}).items():
            print(f"{name:45s} {value:12,.0f}   ({options.records:,} messages, local[2])")
        if not options.skip_latency:
            latency = alert_latency(spark, options.units, Path(tmp))
            print(f"{'alert end-to-end latency (s)':45s} {latency:12.2f}   ({options.units} units, 1 s trigger)")
    spark.stop()


if __name__ == "__main__":
    main()
