"""Spark's own ceiling for the pipeline's schema (issue 16 "Pipeline"): how many rows per second
``local[2]`` turns into Parquet when a Python data source hands it Arrow batches that cost
nothing to make (one batch of the message log's schema, built once and yielded again and
again), so no message log is read at all.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python bench/bench_spark_ceiling.py [--rows N] [--variants full,nomap,narrow]
        [--codecs snappy,lz4,zstd,uncompressed]

Variants: ``full`` is the ``relaymq`` source's schema (``arrowio.SPARK_SCHEMA``: 26 columns,
``usr`` a MAP); ``nomap`` the same with ``usr`` as a JSON string; ``narrow`` six columns (topic,
partition, seq, timestamp, qos, body). Each is written to Parquet and to Spark's ``noop``
sink (the conversion to rows without the Parquet writer), with the wall rate and the CPU per
row of the whole process tree (driver, JVM, Python workers; the figure to compare on a loaded
machine); ``--codecs`` repeats the Parquet runs
with each compression codec (``spark.sql.parquet.compression.codec``; Spark's default is snappy). What ``bench/bench_pipeline.py``
measures for the real source can be no faster than ``full -> parquet`` here. Asserts nothing
about speed. Needs the ``spark`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

PARTITIONS = 4
BATCH_ROWS = 10_000
NARROW = ("topic", "partition", "seq", "timestamp", "qos", "body")


def batch(variant: str) -> Any:
    """One Arrow batch of ``BATCH_ROWS`` log records, as the ``relaymq`` source's reader makes."""
    import pyarrow as pa

    from relaymq.pipeline.arrowio import to_batch
    from relaymq.pipeline.record import LogRecord

    body = b"<events d_tstamp='20040417103118'>" + b"x" * 200 + b"</events>"
    made = to_batch([LogRecord(topic=f"LCUnit/{i % 500}/batch", partition="telemetry-0", qos=1, seq=i,
                               usr={"unit": str(i % 500)}, body=body) for i in range(BATCH_ROWS)])
    if variant == "nomap":
        usr = pa.array([json.dumps({"unit": str(i % 500)}) for i in range(BATCH_ROWS)])
        made = made.set_column(made.schema.get_field_index("usr"), pa.field("usr", pa.string()), usr)
    elif variant == "narrow":
        made = pa.RecordBatch.from_arrays([made.column(name) for name in NARROW], names=list(NARROW))
    return made


def schema(variant: str) -> str:
    from relaymq.pipeline.arrowio import SPARK_SCHEMA

    if variant == "nomap":
        return SPARK_SCHEMA.replace("`usr` MAP<STRING, STRING>", "`usr` STRING")
    if variant == "narrow":
        return ("`topic` STRING, `partition` STRING, `seq` BIGINT, `timestamp` TIMESTAMP, `qos` INT, "
                "`body` BINARY")
    return SPARK_SCHEMA


def register(spark: Any) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Reader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.variant, self.rows = options.get("variant", "full"), int(options["rows"])

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(PARTITIONS)]

        def read(self, partition: InputPartition) -> Any:
            made = batch(self.variant)
            for _ in range(self.rows // PARTITIONS // BATCH_ROWS):
                yield made

    class Ceiling(DataSource):
        @classmethod
        def name(cls) -> str:
            return "relaymq_ceiling"

        def schema(self) -> str:
            return schema(self.options.get("variant", "full"))

        def reader(self, schema: Any) -> Reader:
            return Reader(self.options)

    spark.dataSource.register(Ceiling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_600_000, help="rows per job (a multiple of 40,000)")
    parser.add_argument("--variants", default="full,nomap,narrow")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--codecs", default="snappy", help="Parquet compression codecs to measure, comma-separated")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    from bench_pipeline import tree_cpu  # the CPU of this process tree: driver, JVM, Python workers

    spark = (SparkSession.builder.master("local[2]").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    variants = args.variants.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-ceiling-") as directory:
        def run(variant: str, sink: str, rows: int, codec: str = "snappy") -> str:
            if sink == "parquet":
                spark.conf.set("spark.sql.parquet.compression.codec", codec)
            frame = spark.read.format("relaymq_ceiling").option("variant", variant).option("rows", str(rows)).load()
            started, cpu = time.perf_counter(), tree_cpu()
            if sink == "parquet":
                frame.write.mode("overwrite").parquet(os.path.join(directory, f"{variant}.parquet"))
            else:
                frame.write.format("noop").mode("overwrite").save()
            return f"{rows / (time.perf_counter() - started):>10,.0f} rows/s {(tree_cpu() - cpu) / rows * 1e6:6.1f} µs CPU/row"

        for variant in variants:  # warm-up: class loading, JIT, the Python workers
            run(variant, "parquet", 40_000)
        for number in range(args.rounds):
            for variant in variants:
                codecs = args.codecs.split(",")[::1 if number % 2 == 0 else -1]  # odd rounds: the other order
                for sink, codec in [("parquet", codec) for codec in codecs] + [("noop", "-")]:
                    print(f"round {number}: {variant:6} -> {sink:7} {codec:12} {run(variant, sink, args.rows, codec)}",
                          flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
