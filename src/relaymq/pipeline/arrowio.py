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
from relaymq.store import log_batch

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


def columns_of(fields: Sequence[tuple[str, str, bool]]) -> tuple[str, ...] | None:
    """The columns a schema given to the reader asks for (``spark.read.format("relaymq")
    .schema("topic STRING, body BINARY")``), as (name, Spark type's simple string, nullable)
    each; None when it is the whole schema (the default). A job that needs six columns then
    pays for six, not 26: the reader builds only those, and Spark converts and writes only
    those. Raises ValueError naming what is wrong: an unknown or repeated column, a type other
    than the log's, a NOT NULL column (every column may be null: ``topic`` of a queue message)."""
    names = tuple(name for name, _, _ in fields)
    for name, kind, nullable in fields:
        if name not in _TYPES:
            raise ValueError(f"relaymq source: no column {name!r} in the message log; its columns are "
                             f"{', '.join(COLUMNS)}")
        expected = _TYPES[name][1].lower().replace(" ", "")
        if kind.lower().replace(" ", "") != expected:
            raise ValueError(f"relaymq source: column {name!r} is {_TYPES[name][1]} in the message log, not {kind}")
        if not nullable:
            raise ValueError(f"relaymq source: column {name!r} cannot be NOT NULL (the log's columns may be null)")
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"relaymq source: the schema must name each column once, got {', '.join(names) or 'none'}")
    return None if names == COLUMNS else names


def arrow_schema(columns: Sequence[str] | None = None) -> Any:
    """The pyarrow schema of a batch of log records (``columns``: only those, in that order)."""
    import pyarrow as pa

    def typ(kind: str) -> Any:
        if kind == "timestamp":
            return pa.timestamp("us", tz="UTC")
        if kind == "map":
            return pa.map_(pa.string(), pa.string())
        return getattr(pa, kind)()

    return pa.schema([pa.field(name, typ(_TYPES[name][0])) for name in (COLUMNS if columns is None else columns)])


def to_batch(records: Sequence[LogRecord]) -> Any:
    """Records as one pyarrow RecordBatch."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for record in records:
        for name in COLUMNS:
            columns[name].append(getattr(record, name))
    return _batch(columns)


def stored_batch(partition: str, runs: Iterable[Any], columns: Sequence[str] | None = None) -> Any:
    """Entries as the log stores them (``MessageLog.read_stored``: parts of stored batches,
    undecoded) as one RecordBatch of ``columns`` (None: all). Only the stored columns asked
    for are opened (``log_batch.layout``), and a column kept in Arrow's layout (format 2: the
    log's columns of one type) is wrapped as an Arrow array over the stored bytes, with no
    step per value (the batches are then joined in C++); a column kept once for the whole batch is repeated in C++; only the rest (a column
    mixing None with values, a batch written row by row by an earlier version) converts
    Python values. The timestamp is scaled in Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = arrow_schema(columns)
    kept = [(name, STORED_COLUMNS.index(name), _stored_type(schema.field(name)))
            for name in STORED_COLUMNS if name in schema.names]
    parts: dict[str, list[Any]] = {name: [] for name, _, _ in kept}
    first = count = 0
    for run in runs:
        if not count:
            first = run.start
        layout = log_batch.layout(run.data)
        for name, index, kind in kept:
            array = _column_array(layout.column(index), kind, layout.count)
            parts[name].append(array if (run.low, run.high) == (0, layout.count)
                               else array.slice(run.low, run.high - run.low))
        count += run.high - run.low
    arrays = {name: (pa.concat_arrays(parts[name]) if len(parts[name]) != 1 else parts[name][0])
              if parts[name] else pa.array([], type=kind) for name, _, kind in kept}
    if "timestamp" in arrays:
        micros = pc.round(pc.multiply(arrays["timestamp"], 1_000_000))  # exact: stamps are whole µs
        arrays["timestamp"] = micros.cast(pa.int64()).cast(schema.field("timestamp").type)
    if "partition" in schema.names:
        arrays["partition"] = pa.repeat(pa.scalar(partition, pa.string()), count)
    if "seq" in schema.names:
        arrays["seq"] = pa.array(range(first, first + count), type=pa.int64())
    return pa.RecordBatch.from_arrays([arrays[f.name] for f in schema], schema=schema)


def _stored_type(field: Any) -> Any:
    """A column's Arrow type as stored: the timestamp in seconds (float64)."""
    import pyarrow as pa

    return pa.float64() if field.name == "timestamp" else field.type


def _column_array(layout: tuple[Any, ...], kind: Any, count: int) -> Any:
    """One stored column (``log_columns.Layout.column``) as an Arrow array of type ``kind``."""
    import pyarrow as pa

    form = layout[0]
    if form == "m":
        return pa.array(layout[1], type=kind)
    if form == "c":
        value = layout[1]
        return pa.nulls(count, kind) if value is None else pa.repeat(pa.scalar(value, kind), count)
    if form == "M":
        return pa.MapArray.from_arrays(_offsets(layout[1]), _column_array(layout[2], pa.string(), -1),
                                       _column_array(layout[3], pa.string(), -1), type=kind)
    if form in ("s", "b"):
        offsets = layout[1]
        native = pa.Array.from_buffers(pa.string() if form == "s" else pa.binary(), len(offsets) // 4 - 1,
                                       [None, pa.py_buffer(offsets), pa.py_buffer(layout[2])])
    else:
        native = pa.Array.from_buffers(pa.int64() if form == "q" else pa.float64(), count,
                                       [None, pa.py_buffer(layout[1])])
    native.validate()
    return native if native.type == kind else native.cast(kind)


def _offsets(buffer: Any) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(pa.int32(), len(buffer) // 4, [None, pa.py_buffer(buffer)])


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
