"""The data pipeline's figures (issue 7 "Done when" 3):

    .venv/bin/python bench/bench_pipeline.py [--records N] [--units U] [--skip-latency]
        [--shapes full,narrow] [--narrow schema|select] [--codec snappy|lz4|zstd|uncompressed]

* ``log -> Spark -> Parquet``: N messages appended to a message log (SQLite, 4 partitions), then
  read by the ``relaymq`` data source on ``local[2]`` and written as Parquet, once as a batch
  job and once as a streaming query under Trigger.AvailableNow, each for the full table (26
  columns) and a narrow one (NARROW: six columns, by a schema given to the reader, or with
  ``--narrow select`` by ``select`` after reading all 26, which also runs on a relaymq that
  reads every column whatever the schema). Messages per second = N / the Spark job's wall
  time (session start excluded); CPU per message = the user + system time of this process
  tree (driver, JVM, Python workers) over the job / N: on a loaded machine the figure to
  compare (two idle cores give at most 2e6 / CPU µs msg/s). Before them, ``--warmups`` untimed
  batch reads of the whole log per shape warm the JVM (its JIT goes on for a few hundred
  thousand rows).
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


#: The narrow table of the "narrow" cases: what a job keeping the messages themselves needs.
NARROW = "topic STRING, partition STRING, seq BIGINT, timestamp TIMESTAMP, qos INT, body BINARY"


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and every process under it: the driver, the
    JVM and the Python workers; workers that ended are in their parent's children's times."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    tree, grown = {os.getpid()}, True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    return sum(times.get(pid, 0) for pid in tree) / tick


def _load(reader, shape: str, narrow: str):
    """The log as a DataFrame: every column, or the six of NARROW (by a schema given to the
    reader, or ``select`` after reading all 26: how a job narrows on a relaymq without it)."""
    if shape == "narrow" and narrow == "schema":
        return reader.schema(NARROW).load()
    frame = reader.load()
    return frame.select(*[column.split()[0] for column in NARROW.split(", ")]) if shape == "narrow" else frame


def throughput(spark, records: int, workdir: Path, shapes: list[str], narrow: str,
               warmups: int = 1) -> dict[str, tuple[float, float]]:
    """name -> (msg/s, CPU µs per message of the whole process tree) for each case."""
    from relaymq.pipeline.log import MessageLog
    from relaymq.pipeline.record import LogRecord

    log = MessageLog(str(workdir / "log"))
    body = b"<events d_tstamp='20040417103118'>" + b"x" * 200 + b"</events>"
    chunk = 20_000
    started, cpu = time.perf_counter(), tree_cpu()
    for first in range(0, records, chunk):
        log.append([LogRecord(topic=f"LCUnit/{i % 500}/batch", partition=f"telemetry-{i % 4}", qos=1,
                              usr={"unit": str(i % 500)}, body=body) for i in range(first, min(records, first + chunk))])
    figures = {"log append": (records / (time.perf_counter() - started), (tree_cpu() - cpu) / records * 1e6)}
    log.close()
    source = str(workdir / "log")
    # warm-up: the first jobs of a session pay for class loading and the JVM's JIT compilation,
    # which goes on for a few hundred thousand rows (a first full read cost 1.8x the third)
    for _ in range(warmups):
        for shape in shapes:
            _load(spark.read.format("relaymq").option("log", source), shape, narrow).write.mode("overwrite").parquet(
                str(workdir / "warmup.parquet"))
    for shape in shapes:
        started, cpu = time.perf_counter(), tree_cpu()
        _load(spark.read.format("relaymq").option("log", source), shape, narrow).write.mode("overwrite").parquet(
            str(workdir / f"batch-{shape}.parquet"))
        figures[f"batch read -> Parquet, {shape}"] = (records / (time.perf_counter() - started),
                                                       (tree_cpu() - cpu) / records * 1e6)
        started, cpu = time.perf_counter(), tree_cpu()
        query = (_load(spark.readStream.format("relaymq").option("log", source), shape, narrow)
                 .writeStream.format("parquet").option("path", str(workdir / f"stream-{shape}.parquet"))
                 .option("checkpointLocation", str(workdir / f"cp-{shape}")).trigger(availableNow=True).start())
        query.awaitTermination()
        figures[f"stream (AvailableNow) -> Parquet, {shape}"] = (records / (time.perf_counter() - started),
                                                                  (tree_cpu() - cpu) / records * 1e6)
        assert spark.read.parquet(str(workdir / f"stream-{shape}.parquet")).count() == records
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
    parser.add_argument("--shapes", default="full,narrow", help="full (26 columns) and/or narrow (six)")
    parser.add_argument("--narrow", choices=("schema", "select"), default="schema",
                        help="how the narrow cases narrow: a schema given to the reader, or select after load")
    parser.add_argument("--warmups", type=int, default=1, help="untimed batch reads of the whole log per shape first")
    parser.add_argument("--codec", help="spark.sql.parquet.compression.codec (default: the session's)")
    options = parser.parse_args()
    from relaymq.pipeline.runner import build_session

    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    conf = {"spark.sql.shuffle.partitions": "2"}
    if options.codec:
        conf["spark.sql.parquet.compression.codec"] = options.codec
    spark = build_session("local[2]", app_name="bench-pipeline", conf=conf)
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        figures = throughput(spark, options.records, Path(tmp), options.shapes.split(","), options.narrow,
                             options.warmups) if options.records else {}
        for name, (rate, cpu) in figures.items():
            print(f"{name:45s} {rate:10,.0f} msg/s {cpu:7.1f} µs CPU/msg   ({options.records:,} messages, local[2])")
        if not options.skip_latency:
            latencies = sorted(alert_latency(spark, options.units, options.silent, Path(tmp)))
            print(f"{'alert end-to-end latency, median (s)':45s} {statistics.median(latencies):12.2f}   "
                  f"({len(latencies)} alerts, {options.units} units, 1 s trigger)")
            print(f"{'alert end-to-end latency, max (s)':45s} {latencies[-1]:12.2f}")
    spark.stop()
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
