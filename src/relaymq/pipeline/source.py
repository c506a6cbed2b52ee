"""The PySpark data source ``relaymq`` (Python Data Source API): batch and streaming reads of
the message log.

    spark.dataSource.register(RelayMQDataSource)      # or relaymq.pipeline.source.register(spark)
    df = spark.read.format("relaymq").option("log", "/var/lib/relaymq/data").load()
    stream = (spark.readStream.format("relaymq").option("log", "http://broker:8080")
              .option("maxRecordsPerBatch", 10000).load())

Options: ``log`` (a log directory, a broker data directory, or the broker's HTTP address),
``username``/``password`` (HTTP basic authentication of the fetch endpoint),
``rules`` (comma-separated rule names; default all partitions), ``startingOffsets``
(``earliest`` | ``latest`` | JSON), ``endingOffsets`` (batch: ``latest`` | JSON),
``maxRecordsPerBatch`` (stream admission control: the oldest entries by archive time across
partitions, so partitions advance together; honoured under Trigger.AvailableNow too),
``maxRecordsPerSplit`` (entries per Spark task, default 100000), ``failOnDataLoss``
(default true: a clear error when retention removed offsets the query still needs).

A schema given to the reader selects columns: ``spark.read.format("relaymq").schema("topic
STRING, body BINARY").load()`` reads only those (``arrowio.columns_of`` checks them), so a job
that needs a few columns does not pay for 26; without one the whole schema is read.

The decisions are in ``offsets``; this module only adapts them to Spark's interfaces. Reads
yield Arrow RecordBatches, so no per-value Python conversion happens on the executors.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from relaymq.pipeline import offsets as planning
from relaymq.pipeline.arrowio import SPARK_SCHEMA, columns_of
from relaymq.pipeline.fetch import open_access

NAME = "relaymq"
DEFAULT_SPLIT = 100_000


class RangePartition(InputPartition):
    """One Spark task: entries ``start <= seq < end`` of one log partition."""

    def __init__(self, location: str, partition: str, start: int, end: int,
                 credentials: tuple[str | None, str | None] = (None, None),
                 columns: tuple[str, ...] | None = None) -> None:
        super().__init__((partition, start, end))
        self.location, self.partition, self.start, self.end = location, partition, start, end
        self.credentials = credentials
        self.columns = columns


def _read(partition: RangePartition) -> Iterator[Any]:
    access = open_access(partition.location, *partition.credentials)
    try:
        yield from access.read_batches(partition.partition, partition.start, partition.end, partition.columns)
    finally:
        close = getattr(access, "close", None)
        if close is not None:
            close()


class _Options:
    """The options both readers share, parsed once, with errors naming the option."""

    def __init__(self, options: Mapping[str, str], schema: Any = None) -> None:
        location = options.get("log") or options.get("path")
        if not location:
            raise ValueError('relaymq source: option "log" is required (log directory or http://broker:port)')
        self.location = location
        self.credentials = (options.get("username"), options.get("password"))
        self.rules = options.get("rules")
        self.starting = options.get("startingOffsets", "earliest")
        self.ending = options.get("endingOffsets", "latest")
        self.max_records = _positive(options, "maxRecordsPerBatch")
        self.split = _positive(options, "maxRecordsPerSplit") or DEFAULT_SPLIT
        self.fail_on_data_loss = options.get("failOnDataLoss", "true").lower() != "false"
        self.columns = None if schema is None else columns_of(
            [(f.name, f.dataType.simpleString(), f.nullable) for f in schema.fields])
        self._access: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_access"] = None  # an open SQLite connection does not travel
        return state

    def access(self) -> Any:
        """The log, opened once per process (planning asks it every trigger)."""
        if self._access is None:
            self._access = open_access(self.location, *self.credentials)
        return self._access

    def available(self) -> dict[str, Any]:
        parts = self.access().partitions()
        wanted = set(planning.select_partitions(parts, self.rules))
        return {name: info for name, info in parts.items() if name in wanted}

    def ranges(self, start: dict[str, int], end: dict[str, int]) -> list[RangePartition]:
        return [RangePartition(self.location, r.partition, r.start, r.end, self.credentials, self.columns)
                for r in planning.plan_ranges(start, end, self.split)]


def _positive(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"relaymq source: option {name} must be a positive integer, got {value!r}")
    return number


class RelayMQBatchReader(DataSourceReader):
    """``spark.read.format("relaymq")``: one snapshot of the committed log."""

    def __init__(self, options: _Options) -> None:
        self.options = options

    def partitions(self) -> list[RangePartition]:
        available = self.options.available()
        start = planning.starting_offsets(self.options.starting, available)
        start = planning.check_retained(start, available, self.options.fail_on_data_loss)
        end = planning.ending_offsets(self.options.ending, available)
        end = {name: min(offset, available[name].next_seq) for name, offset in end.items() if name in available}
        return self.options.ranges(start, end)

    def read(self, partition: RangePartition) -> Iterator[Any]:  # type: ignore[override]
        return _read(partition)


class RelayMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("relaymq")``: micro-batches by offset, with admission control."""

    def __init__(self, options: _Options) -> None:
        self.options = options
        self._cap: dict[str, int] | None = None

    def initialOffset(self) -> dict:
        return planning.starting_offsets(self.options.starting, self.options.available())

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.options.max_records) if self.options.max_records else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: process what is committed now (in admitted batches), then stop."""
        self._cap = {name: info.next_seq for name, info in self.options.available().items()}

    def latestOffset(self, start: dict, limit: Any = None) -> dict:
        available = self.options.available()
        start = planning.check_retained(planning.with_new_partitions(start, available), available,
                                        self.options.fail_on_data_loss)
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return planning.admit(start, available, max_records, self._cap, self.options.access().timestamps)

    def reportLatestOffset(self) -> dict:
        return {name: info.next_seq for name, info in self.options.available().items()}

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        available = self.options.available()
        start = planning.check_retained(planning.with_new_partitions(start, available), available,
                                        self.options.fail_on_data_loss)
        return self.options.ranges(start, end)

    def read(self, partition: RangePartition) -> Iterator[Any]:  # type: ignore[override]
        return _read(partition)

    def commit(self, end: dict) -> None:
        return None


class RelayMQDataSource(DataSource):
    """The ``relaymq`` format: read the message log; write to topics or queues (see sink)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SPARK_SCHEMA

    def reader(self, schema: Any) -> RelayMQBatchReader:
        return RelayMQBatchReader(_Options(self.options, schema))

    def streamReader(self, schema: Any) -> RelayMQStreamReader:
        return RelayMQStreamReader(_Options(self.options, schema))

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from relaymq.pipeline.sink import RelayMQBatchWriter

        return RelayMQBatchWriter(self.options, schema)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from relaymq.pipeline.sink import RelayMQStreamWriter

        return RelayMQStreamWriter(self.options, schema)


def register(spark: Any) -> None:
    """Make ``format("relaymq")`` available in this Spark session."""
    spark.dataSource.register(RelayMQDataSource)
