"""The ``relaymq`` Spark data source and sink on the shared local session (issue 7 items 2-4).

Spec: issue 7 "spark.read.format("relaymq") and spark.readStream.format("relaymq"); offsets per
partition; admission control (maxRecordsPerBatch, also under Trigger.AvailableNow); new
partitions picked up; a clear failure when retention has removed offsets the query still
needs. Columns: topic or queue, partition, seq, timestamp, qos, the MQMD properties, usr as a
map, domain, body"; "Sink relaymq ... publishes to topics or puts to queues ... batch write
too"; "Flows on Spark ... with the same node code as in the broker".
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from relaymq.pipeline.log import MessageLog
from relaymq.pipeline.record import LogRecord

pytestmark = pytest.mark.slow


def fill(log: MessageLog, partition: str, count: int, start: int = 0, topic: str = "t/x") -> None:
    log.append([LogRecord(topic=topic, partition=partition, qos=1, usr={"n": str(start + i)},
                          body=f"m{start + i}".encode()) for i in range(count)])


def test_batch_read_columns_and_ranges(spark, tmp_path) -> None:
    """issue 7 columns and batch read: every committed entry once, usr as a map, explicit ranges and rules."""
    log = MessageLog(str(tmp_path))
    fill(log, "a-0", 5)
    fill(log, "a-1", 3, start=100)
    fill(log, "b-0", 2, topic="other")
    df = spark.read.format("relaymq").option("log", str(tmp_path)).option("rules", "a").load()
    for column in ("topic", "queue", "partition", "seq", "timestamp", "qos", "msg_id", "correl_id", "priority",
                   "persistence", "format", "reply_to_q", "usr", "domain", "body"):
        assert column in df.columns
    rows = df.orderBy("partition", "seq").collect()
    assert [(r.partition, r.seq, r.usr["n"]) for r in rows] == (
        [("a-0", i, str(i)) for i in range(5)] + [("a-1", i, str(100 + i)) for i in range(3)])
    assert bytes(rows[0].body) == b"m0" and rows[0].qos == 1
    ranged = (spark.read.format("relaymq").option("log", str(tmp_path))
              .option("startingOffsets", json.dumps({"a-0": 2})).option("endingOffsets", json.dumps({"a-0": 4}))
              .load().collect())
    assert sorted((r.partition, r.seq) for r in ranged) == [("a-0", 2), ("a-0", 3)]


def test_a_schema_given_to_the_reader_selects_columns(spark, tmp_path) -> None:
    """issue 16 (a job that needs six columns does not pay for 26): ``.schema(...)`` reads only
    those columns, in its order, batch and streaming; an unknown column fails naming it."""
    log = MessageLog(str(tmp_path / "log"))
    fill(log, "a-0", 5)
    fill(log, "a-1", 3, start=100)
    narrow = "body BINARY, seq BIGINT, partition STRING, usr MAP<STRING, STRING>"
    df = spark.read.format("relaymq").option("log", str(tmp_path / "log")).schema(narrow).load()
    assert df.columns == ["body", "seq", "partition", "usr"]
    assert sorted((r.partition, r.seq, bytes(r.body), r.usr["n"]) for r in df.collect()) == (
        [("a-0", i, f"m{i}".encode(), str(i)) for i in range(5)]
        + [("a-1", i, f"m{100 + i}".encode(), str(100 + i)) for i in range(3)])
    query = (spark.readStream.format("relaymq").option("log", str(tmp_path / "log")).schema("topic STRING, seq BIGINT")
             .load().writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination()
    streamed = spark.read.parquet(str(tmp_path / "out"))
    assert streamed.columns == ["topic", "seq"] and sorted(r.seq for r in streamed.collect()) == [0, 0, 1, 1, 2, 2, 3, 4]
    with pytest.raises(Exception, match="no column 'payload' in the message log"):
        spark.read.format("relaymq").option("log", str(tmp_path / "log")).schema("payload BINARY").load().collect()


def test_parquet_written_by_a_pipeline_session_keeps_timestamps_as_parquet_microseconds(spark, tmp_path) -> None:
    """issue 16 (log -> Spark -> Parquet >= 200,000 msg/s; docs/pipeline.md "Parquet
    timestamps"): a pipeline session writes the log's timestamps as Parquet's INT64
    TIMESTAMP(MICROS, UTC), not Spark's legacy INT96, and every microsecond survives."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    log = MessageLog(str(tmp_path / "log"))
    log.append([LogRecord(topic="t/x", partition="a-0", body=b"m")], now=1_700_000_000.123457)
    log.append([LogRecord(topic="t/x", partition="a-0", body=b"n")], now=1_700_000_001.000001)
    stamps = log.timestamps("a-0", 0, 2)
    (spark.read.format("relaymq").option("log", str(tmp_path / "log")).schema("seq BIGINT, timestamp TIMESTAMP")
     .load().coalesce(1).write.parquet(str(tmp_path / "out")))
    (written,) = (tmp_path / "out").glob("*.parquet")
    column = pq.ParquetFile(written).schema.column(1)
    assert (column.name, column.physical_type) == ("timestamp", "INT64")
    logical = json.loads(column.logical_type.to_json())
    assert (logical["Type"], logical["timeUnit"], logical["isAdjustedToUTC"]) == ("Timestamp", "microseconds", True)
    table = pq.read_table(written).sort_by("seq")
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [round(t * 1_000_000) for t in stamps]


def test_stream_admission_new_partitions_and_retention(spark, tmp_path) -> None:
    """issue 7: maxRecordsPerBatch under Trigger.AvailableNow; a restarted query continues from its
    checkpoint and picks up a new partition; retention past its offsets is a clear failure."""
    data, out, checkpoint = tmp_path / "log", tmp_path / "out", tmp_path / "cp"
    log = MessageLog(str(data))
    fill(log, "a-0", 10)

    def run_once() -> list[int]:
        query = (spark.readStream.format("relaymq").option("log", str(data)).option("maxRecordsPerBatch", 4).load()
                 .selectExpr("partition", "seq", "usr['n'] AS n").writeStream.format("parquet")
                 .option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    assert run_once() == [4, 4, 2]
    fill(log, "a-0", 3, start=10)
    fill(log, "a-1", 2, start=500)  # a partition that did not exist before
    sizes = run_once()
    assert sum(sizes) == 5 and max(sizes) <= 4
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.partition, r.seq) for r in rows) == (
        [("a-0", i) for i in range(13)] + [("a-1", 0), ("a-1", 1)])  # each entry exactly once
    fill(log, "a-0", 10, start=13)
    log.apply_retention("a-0", max_entries=3)  # removes entries the query has not read yet
    with pytest.raises(Exception, match="offset 13 is no longer in the log"):
        run_once()


def test_new_partitions_are_picked_up_by_a_running_query(spark, tmp_path) -> None:
    """issue 7 "new partitions picked up": a partition that gets its first entry while the query
    runs (not only across a restart) is read from its first entry, each entry once."""
    import time

    data = tmp_path / "log"
    log = MessageLog(str(data))
    fill(log, "a-0", 3)
    query = (spark.readStream.format("relaymq").option("log", str(data)).load()
             .selectExpr("partition", "seq").writeStream.format("memory").queryName("new_partitions")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="500 milliseconds").start())
    try:
        def rows() -> list[tuple[str, int]]:
            return sorted((r.partition, r.seq) for r in spark.sql("SELECT * FROM new_partitions").collect())

        def wait_rows(count: int) -> list[tuple[str, int]]:
            deadline = time.monotonic() + 120
            while len(got := rows()) < count and time.monotonic() < deadline:
                time.sleep(0.2)
            return got

        assert wait_rows(3) == [("a-0", 0), ("a-0", 1), ("a-0", 2)]
        fill(log, "a-1", 2, start=50)  # a new partition while the query runs
        fill(log, "a-0", 1, start=3)
        assert wait_rows(6) == [("a-0", 0), ("a-0", 1), ("a-0", 2), ("a-0", 3), ("a-1", 0), ("a-1", 1)]
        time.sleep(2)  # nothing comes twice
        assert len(rows()) == 6
    finally:
        query.stop()


def test_stream_sink_skips_a_replayed_batch_and_batch_write_publishes(spark, tmp_path, archive_broker_factory) -> None:
    """issue 7 sink: writeStream.format("relaymq") publishes each row once; a batch Spark runs
    again because its commit was not recorded (here: the commit file removed, as after a crash
    between the sink's commit and Spark's) is skipped by the ledger, which defaults to
    <checkpointLocation>/relaymq-ledger; df.write.format("relaymq") publishes too."""
    from pipeline_helpers import Subscriber

    broker = archive_broker_factory([{"topics": ["nothing/#"]}])
    sub = Subscriber(broker.port, "out/#")
    data, checkpoint = tmp_path / "log", tmp_path / "cp"
    log = MessageLog(str(data))
    fill(log, "a-0", 6)

    def run_once() -> list[int]:
        query = (spark.readStream.format("relaymq").option("log", str(data)).option("maxRecordsPerBatch", 4).load()
                 .selectExpr("concat('out/', usr['n']) AS topic", "body", "usr")
                 .writeStream.format("relaymq").option("broker", f"127.0.0.1:{broker.port}").option("sinkId", "t")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()
        return [p["batchId"] for p in query.recentProgress if p["numInputRows"]]

    assert run_once() == [0, 1]
    assert sorted((checkpoint / "relaymq-ledger" / "t").glob("batch-*.json")) == [
        checkpoint / "relaymq-ledger" / "t" / "batch-0.json", checkpoint / "relaymq-ledger" / "t" / "batch-1.json"]
    for name in ("1", ".1.crc"):  # Spark forgets it finished batch 1
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    assert run_once() == [1]  # ... and runs it again: the sink must not publish it twice
    assert (checkpoint / "commits" / "1").exists()
    spark.createDataFrame([("out/batch", "hello")], "topic STRING, body STRING").write.format("relaymq") \
        .option("broker", f"127.0.0.1:{broker.port}").mode("append").save()
    got = sub.settle()
    sub.close()
    assert sorted(m.topic for m in got) == sorted([f"out/{i}" for i in range(6)] + ["out/batch"])
    assert {m.payload for m in got if m.topic == "out/3"} == {b"m3"}


def test_read_over_http_with_basic_authentication(spark, tmp_path, archive_broker_factory) -> None:
    """audit item 9: the source reads the fetch endpoint of a broker with a password file
    (options username/password); without them the failure names what is missing."""
    from pipeline_helpers import publish_all, wait_for_entries
    from relaymq.auth.passwords import PasswordFile
    from relaymq.pipeline.fetch import HttpAccess

    passwords = PasswordFile()
    passwords.set("spark", "s3cret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    # with a password file the authorities are enforced: spark reads rule a's partitions (issue 15)
    (tmp_path / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "archive", "profile": "a-*", "principal": "spark", "authorities": ["read"]}]}))
    broker = archive_broker_factory([{"name": "a", "topics": ["t/#"]}], config={
        "access": {"allow_anonymous": True, "password_file": str(tmp_path / "passwords"),
                   "authorities_file": str(tmp_path / "authorities.json")}})
    publish_all(broker.port, [(f"t/{i}", f"m{i}".encode(), []) for i in range(5)])
    wait_for_entries(HttpAccess(broker.http_url, username="spark", password="s3cret"), 5)
    df = (spark.read.format("relaymq").option("log", broker.http_url)
          .option("username", "spark").option("password", "s3cret").load())
    assert sorted(bytes(r.body) for r in df.collect()) == [f"m{i}".encode() for i in range(5)]
    bodies = (spark.read.format("relaymq").option("log", broker.http_url).schema("body BINARY")
              .option("username", "spark").option("password", "s3cret").load())
    assert bodies.columns == ["body"] and sorted(bytes(r.body) for r in bodies.collect()) == sorted(
        bytes(r.body) for r in df.collect())
    with pytest.raises(Exception, match="needs HTTP basic authentication"):
        spark.read.format("relaymq").option("log", broker.http_url).load().collect()


def test_sink_puts_to_queues(spark, tmp_path) -> None:
    """issue 7 sink "puts to queues": rows with a queue column go to that queue, usr in the RFH2."""
    from relaymq.message.mqtt_mapping import usr_properties
    from relaymq.qmgr import QueueManager

    qm = QueueManager.open("QMS", str(tmp_path / "qm"))
    qm.define_queue("OUT.Q")
    qm.close()
    spark.createDataFrame([("OUT.Q", b"p1", {"k": "v"})], "queue STRING, body BINARY, usr MAP<STRING,STRING>") \
        .write.format("relaymq").option("queueManager", "QMS").option("dataDir", str(tmp_path / "qm")) \
        .mode("append").save()
    qm = QueueManager.open("QMS", str(tmp_path / "qm"))
    message = qm.get("OUT.Q")
    qm.close()
    assert message is not None and message.mq.body == b"p1"
    assert ("k", "v") in usr_properties(message)


def test_flow_nodes_run_over_a_dataframe(spark, tmp_path) -> None:
    """issue 7 "Flows on Spark": a Filter node and the telemetry flow (flows-http.md items 11-13)
    give on Spark what they give in the broker (Flow.run_sync on the same message); a rejected
    message takes the flow's failure path by default (audit item 4), or fails the task (raise),
    or is dropped (skip)."""
    from relaymq.flows.definition import load_flow
    from relaymq.message.mqtt_mapping import from_mqtt, usr_properties
    from relaymq.pipeline.sparkflows import map_node, run_flow
    from test_example import EXAMPLE_FLOW, SEED_BATCH

    log = MessageLog(str(tmp_path))
    log.append([LogRecord(topic="LCUnit/12345/batch", partition="t-0", domain="XMLNS", body=SEED_BATCH)]
               + [LogRecord(topic=f"c/{i}", partition="c-0", usr={"colour": c}, body=b"x")
                  for i, c in enumerate(["blue", "red", "blue"])]
               + [LogRecord(topic="LCUnit/9/batch", partition="bad-0", domain="XMLNS", body=b"<oops/>")])
    df = spark.read.format("relaymq").option("log", str(tmp_path)).load()
    filtered = map_node(df.where("partition = 'c-0'"), "Filter", {"expression": "usr.colour = 'blue'"})
    assert sorted((r.topic, r.terminal) for r in filtered.collect()) == [
        ("c/0", "true"), ("c/1", "false"), ("c/2", "true")]
    events = run_flow(df.where("partition = 't-0'"), EXAMPLE_FLOW).collect()
    assert [(e.topic, dict(e.usr), bytes(e.body)) for e in events] == [
        ("LCUnit/12345/StateChange", {"topic": "LCUnit/12345/StateChange", "d_tstamp": "20040417104439",
                                      "i_state": "1", "i_old_state": "0", "b_time": "20040417103118"},
         b"Changing state from 'Starting' to 'Payload' because 'The startup routine is complete'"),
        ("LCUnit/12345/Heartbeat", {"topic": "LCUnit/12345/Heartbeat", "d_tstamp": "20040417105126",
                                    "i_state": "1", "b_time": "20040417103118"}, b""),
    ]
    # a batch the flow rejects takes its failure path (TELEMETRY.ERRORS) instead of failing the job
    both = run_flow(df.where("partition IN ('t-0', 'bad-0')"), EXAMPLE_FLOW).collect()
    assert sorted((r.partition, r.topic or "", r.queue or "") for r in both) == [
        ("bad-0", "", "TELEMETRY.ERRORS"), ("t-0", "LCUnit/12345/Heartbeat", ""), ("t-0", "LCUnit/12345/StateChange", "")]
    with pytest.raises(Exception, match="not a telemetry batch"):
        run_flow(df.where("partition = 'bad-0'"), EXAMPLE_FLOW, on_error="raise").collect()
    assert run_flow(df.where("partition = 'bad-0'"), EXAMPLE_FLOW, on_error="skip").count() == 0
    # the broker's own way: Flow.run_sync on the message the telemetry input builds
    ports = load_flow(EXAMPLE_FLOW).run_sync(from_mqtt("LCUnit/12345/batch", SEED_BATCH, 0, domain="XMLNS"))
    assert [(t, dict(usr_properties(m)), m.mq.body) for t, m, *_ in ports.publications] == [
        (e.topic, dict(e.usr), bytes(e.body)) for e in events]


def _listening(pid: int) -> list[tuple[str, int]]:
    """The TCP addresses process ``pid`` listens on (its sockets' inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
            found.append((socket.inet_ntop(family, raw), int(port, 16)))
    return found


def test_a_local_session_listens_on_the_loopback_interface_only(spark) -> None:
    """docs/pipeline.md: a local master binds Spark's driver to 127.0.0.1. Without it Spark 4
    bound its RPC and block manager ports to the machine's network address whenever the host
    name resolves to 127.0.0.1 (seen: '::ffff:192.0.2.2'), opening a local job to the network."""
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == conf.get("spark.driver.bindAddress") == "127.0.0.1"
    addresses = _listening(spark.sparkContext._gateway.proc.pid)
    assert len(addresses) >= 2, addresses  # the driver's RPC and block manager at least
    assert all(ip in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for ip, _ in addresses), addresses


def test_a_local_sessions_python_workers_import_the_installed_pyspark(spark, tmp_path) -> None:
    """issue 16 (AvailableNow >= 200,000 msg/s; docs/pipeline.md "Running jobs"): Spark starts a
    fresh Python process for every streaming query over a Python data source, with its zip of
    pyspark first on PYTHONPATH; from the zip every start compiled pyspark again (that process
    cost 0.9-1.1 CPU-seconds a query, 0.35-0.45 on the installed package). A local session's workers, that process and the executors', import
    the installed package instead."""
    import pyspark
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class WhereReader(DataSourceStreamReader):
        def initialOffset(self) -> dict:
            return {"n": 0}

        def latestOffset(self) -> dict:
            import pyspark as runner_pyspark  # in the query's own source runner process

            return {"n": 1, "runner": runner_pyspark.__file__}

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition(0)] if end["n"] > start["n"] else []

        def read(self, partition):  # type: ignore[no-untyped-def]
            import pyspark as executor_pyspark

            yield (executor_pyspark.__file__,)

        def commit(self, end: dict) -> None:
            return None

    class Where(DataSource):
        @classmethod
        def name(cls) -> str:
            return "relaymq_test_pyspark_file"

        def schema(self) -> str:
            return "file STRING"

        def streamReader(self, schema):  # type: ignore[no-untyped-def]
            return WhereReader()

    spark.dataSource.register(Where)
    query = (spark.readStream.format("relaymq_test_pyspark_file").load().writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    end = query.lastProgress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    assert end["runner"] == pyspark.__file__
    assert [row.file for row in spark.read.parquet(str(tmp_path / "out")).collect()] == [pyspark.__file__]


def test_a_local_sessions_jvm_compiles_less_eagerly(spark) -> None:
    """issue 16 (log -> Spark -> Parquet >= 200,000 msg/s; docs/pipeline.md "Running jobs"): a
    local session's JVM starts with HotSpot's compile thresholds scaled (``runner.JIT_OPTIONS``),
    since with the defaults the JIT's compiler threads spent about a third of a 200,000-message
    job's CPU recompiling Spark's per-job code."""
    from relaymq.pipeline.runner import JIT_OPTIONS

    arguments = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    assert JIT_OPTIONS in [str(argument) for argument in arguments]


def test_a_local_sessions_checkpoints_are_written_without_starting_processes(spark, tmp_path) -> None:
    """issue 16 (AvailableNow >= 200,000 msg/s; docs/pipeline.md "Running jobs"): a local session
    keeps streaming checkpoints and sink logs through Hadoop's FileSystem API, whose status
    calls start no ``readlink`` process as FileContext's do; the logs are the same (a batch's
    offsets, commit and sink entry; a run with nothing new adds no batch)."""
    assert spark.conf.get("spark.sql.streaming.checkpointFileManagerClass").endswith(
        ".FileSystemBasedCheckpointFileManager")
    log = MessageLog(str(tmp_path / "log"))
    fill(log, "a-0", 5)

    def run_once() -> None:
        (spark.readStream.format("relaymq").option("log", str(tmp_path / "log")).schema("seq BIGINT").load()
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start().awaitTermination())

    run_once()
    run_once()
    assert sorted(path.name for path in (tmp_path / "cp" / "offsets").iterdir() if not path.name.startswith(".")) == ["0"]
    assert sorted(path.name for path in (tmp_path / "cp" / "commits").iterdir() if not path.name.startswith(".")) == ["0"]
    assert (tmp_path / "out" / "_spark_metadata" / "0").exists()
    assert sorted(row.seq for row in spark.read.parquet(str(tmp_path / "out")).collect()) == list(range(5))
