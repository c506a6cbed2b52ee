"""Log records as Apache Arrow: the wire format of the HTTP fetch endpoint and what the Spark
reader hands to Spark (an Arrow RecordBatch becomes rows without a Python loop per value).

The schema follows ``record.COLUMNS``; ``SPARK_SCHEMA`` is the same schema in Spark's DDL, so
the data source, the endpoint and the log agree by construction. pyarrow is imported here
only: the broker runs without it, and the endpoint answers 501 when it is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from relaymq.pipeline.record import COLUMNS, STORED_COLUMNS, LogRecord

ARROW_MEDIA_TYPE = "application/vnd.apache.arrow.stream"

#: column -> (Arrow type name, Spark DDL type)
_TYPES: dict[str, tuple[str, str]] = {
    "topic": ("string", "STRING"), "queue": ("string", "STRING"), "partition": ("string", "STRING"),
    "seq": ("int64", "BIGINT"), "timestamp": ("timestamp", "TIMESTAMP"), "qos": ("int32", "INT"),
    "msg_id": ("binary", "BINARY"), "correl_id": ("binary", "BINARY"), "msg_type": ("int32", "INT"),
    "priority": ("int32", "INT"), "persistence": ("int32", "INT"), "expiry": ("int32", "INT"),
    "format": ("string", "STRING"), "ccsid": ("int32", "INT"), "encoding": ("int32", "INT"),
    "reply_to_q": ("string", "STRING"), "reply_to_qmgr": ("string", "STRING"),
    "user_identifier": ("string", "STRING"), "put_appl_name": ("string", "STRING"),
    "put_date": ("string", "STRING"), "put_time": ("string", "STRING"), "group_id": ("binary", "BINARY"),
    "msg_seq_number": ("int32", "INT"), "usr": ("map", "MAP<STRING, STRING>"), "domain": ("string", "STRING"),
    "body": ("binary", "BINARY"),
}
assert tuple(_TYPES) == COLUMNS, "arrowio._TYPES must follow record.COLUMNS"

#: The DataFrame schema of ``spark.read.format("relaymq")``.
SPARK_SCHEMA = ", ".join(f"`{name}` {spark}" for name, (_, spark) in _TYPES.items())


def arrow_schema() -> Any:
    """The pyarrow schema of a batch of log records."""
    import pyarrow as pa

    def typ(kind: str) -> Any:
        if kind == "timestamp":
            return pa.timestamp("us", tz="UTC")
        if kind == "map":
            return pa.map_(pa.string(), pa.string())
        return getattr(pa, kind)()

    return pa.schema([pa.field(name, typ(kind)) for name, (kind, _) in _TYPES.items()])


def to_batch(records: Sequence[LogRecord]) -> Any:
    """Records as one pyarrow RecordBatch."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for record in records:
        for name in COLUMNS:
            columns[name].append(getattr(record, name))
    return _batch(columns)


def stored_batch(partition: str, runs: Iterable[tuple[int, list[tuple[Any, ...]]]]) -> Any:
    """Entries as the log stores them (``MessageLog.read_runs``: runs of consecutive entries)
    as one RecordBatch. Each run's rows become Arrow in one call (a struct array built in C++),
    so there is no Python loop per entry or per value; the timestamp is scaled in Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    stored = _stored_type()
    parts: list[Any] = []
    first = count = 0
    for seq, rows in runs:
        if not parts:
            first = seq
        parts.append(pa.array(rows, type=stored))
        count += len(rows)
    joined = pa.concat_arrays(parts) if parts else pa.array([], type=stored)
    columns = dict(zip(STORED_COLUMNS, joined.flatten(), strict=True))
    micros = pc.round(pc.multiply(columns["timestamp"], 1_000_000))  # exact: stamps are whole µs
    schema = arrow_schema()
    columns["timestamp"] = micros.cast(pa.int64()).cast(schema.field("timestamp").type)
    columns["partition"] = pa.repeat(pa.scalar(partition, pa.string()), count)
    columns["seq"] = pa.array(range(first, first + count), type=pa.int64())
    return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def _stored_type() -> Any:
    """A stored row (``STORED_COLUMNS``) as an Arrow struct; the timestamp as stored (seconds)."""
    import pyarrow as pa

    return pa.struct([pa.field(f.name, pa.float64()) if f.name == "timestamp" else f
                      for f in arrow_schema() if f.name in STORED_COLUMNS])


def _batch(columns: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    schema = arrow_schema()
    columns["timestamp"] = [round(t * 1_000_000) for t in columns["timestamp"]]  # exact: stamps are whole µs
    columns["usr"] = [list(m.items()) for m in columns["usr"]]
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def to_ipc(records: Sequence[LogRecord]) -> bytes:
    """Records as an Arrow IPC stream (one batch)."""
    return batch_ipc(to_batch(records))


def batch_ipc(batch: Any) -> bytes:
    """One RecordBatch as an Arrow IPC stream: the fetch endpoint's response body."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, arrow_schema()) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def batches_from_ipc(data: bytes) -> list[Any]:
    """The RecordBatches of an Arrow IPC stream."""
    import pyarrow as pa

    return list(pa.ipc.open_stream(pa.py_buffer(data)))


def records_from_batches(batches: Iterable[Any]) -> list[LogRecord]:
    """RecordBatches back to records (tests, the sink reading Arrow input)."""
    records: list[LogRecord] = []
    for batch in batches:
        data = batch.to_pydict()
        for index in range(batch.num_rows):
            values = {name: data[name][index] for name in COLUMNS}
            values["timestamp"] = values["timestamp"].timestamp()
            values["usr"] = dict(values["usr"] or [])
            records.append(LogRecord(**values))
    return records
