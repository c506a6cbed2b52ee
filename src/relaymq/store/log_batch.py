"""How the message log's entries are kept in the database file: record batches.

An entry of the log is small (a topic, a few header fields, a body of some hundred bytes), and
SQLite costs about the same per row whatever the row holds, so a log kept one row per entry is
capped by the row rate however the commits are grouped (docs/pipeline.md gives the figure,
where it describes record batches). So the log keeps the entries that one commit appends to a partition
together, as one row of ``log_batches`` (a *record batch*, as Kafka's segments hold them):

    log_batches (partition, first_seq, count, last_ts, data)

``data`` holds the batch's entries, consecutive sequence numbers from ``first_seq``: a format
byte, then the entries' ``LOG_COLUMNS`` in one of two layouts. Format 2 (what this version
writes) keeps them column by column, each in the layout Arrow uses, so the Spark reader wraps
the columns a job asks for without unpacking anything else (:mod:`relaymq.store.log_columns`).
Format 1 (earlier versions; still read) is a ``marshal`` (version 4) list of rows, each the
entry's values in order with ``usr`` as a dict of strings. (marshal's format is Python's own:
version 4 has been read unchanged by every Python since 3.4.) A later change of encoding is a
new format byte beside these, never a reinterpretation. ``last_ts`` is the
newest archive timestamp in the batch, for retention by age and for the stamp a writer
continues after. At most ``MAX_ROWS`` entries go in one batch, so reading a short range never
decodes much more than it returns.

Retention moves the partition's ``first_seq`` (table ``partitions``) and deletes the batches
wholly below it; readers skip the entries of a batch that lie below ``first_seq``.

Files of earlier versions kept one row per entry (table ``entries``); :func:`pack_entries`
turns those rows into batches (schema migration 4, and after a legacy log's import).
"""

from __future__ import annotations

import json
import marshal
import sqlite3
from collections.abc import Sequence
from typing import Any

from relaymq.store import log_columns

#: The layouts of ``data``: a marshal (version 4) list of rows in LOG_COLUMNS order (read,
#: no longer written), and columns (log_columns: what is written).
FORMAT_ROWS = b"\x01"
FORMAT = log_columns.FORMAT
MAX_ROWS = 1000
INSERT = "INSERT INTO log_batches VALUES (?, ?, ?, ?, ?)"
#: Packing rows imported from an earlier version's file: a batch already here stays (the same
#: entries imported before; a collision must not stop the engine).
_PACK = "INSERT OR IGNORE INTO log_batches VALUES (?, ?, ?, ?, ?)"
CREATE = ("CREATE TABLE IF NOT EXISTS log_batches (partition TEXT NOT NULL, first_seq INTEGER NOT NULL,"
          " count INTEGER NOT NULL, last_ts REAL NOT NULL, data BLOB NOT NULL,"
          " PRIMARY KEY (partition, first_seq)) WITHOUT ROWID")


class BatchFormatError(Exception):
    """A batch's ``data`` is not in a format this relaymq reads."""


def encode(columns: Sequence[log_columns.Column], count: int) -> bytes:
    """The ``data`` of a batch of ``count`` entries given as its stored columns."""
    return log_columns.encode(columns, count)


class RowsLayout:
    """A format-1 ``data`` opened as :class:`log_columns.Layout` opens format 2: every column
    a list of values (``("m", values)``)."""

    __slots__ = ("_columns", "count")

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.count = len(rows)
        self._columns = [list(column) for column in zip(*rows, strict=True)]

    def column(self, index: int) -> tuple[Any, ...]:
        return ("m", self._columns[index])

    def values(self, index: int) -> Sequence[Any]:
        return self._columns[index]


def layout(data: bytes) -> log_columns.Layout | RowsLayout:
    """A batch's ``data`` opened column by column, in either format."""
    if data[:1] == FORMAT:
        return log_columns.Layout(data)
    return RowsLayout(decode(data))


def decode(data: bytes) -> list[tuple[Any, ...]]:
    """The rows of a batch's ``data``."""
    if data[:1] == FORMAT:
        return log_columns.rows(data)
    if data[:1] != FORMAT_ROWS:
        raise BatchFormatError(f"message log batch in format {data[:1]!r}, which this relaymq does not read;"
                               " use a newer relaymq")
    rows = marshal.loads(memoryview(data)[1:])
    if type(rows) is not list:
        raise BatchFormatError("message log batch is not a list of rows")
    return rows


def batch_ops(partition: str, first_seq: int, columns: Sequence[Sequence[Any]], ts_index: int,
              insert: str = INSERT) -> list[tuple[str, tuple[Any, ...]]]:
    """INSERTs of the entries given as their stored ``columns`` (consecutive entries from
    ``first_seq`` of ``partition``) as batches of at most MAX_ROWS; ``ts_index`` is the
    timestamp's column."""
    ops: list[tuple[str, tuple[Any, ...]]] = []
    total = len(columns[ts_index])
    for start in range(0, total, MAX_ROWS):
        chunk = columns if total <= MAX_ROWS else [column[start:start + MAX_ROWS] for column in columns]
        count = min(MAX_ROWS, total - start)
        ops.append(batch_op(partition, first_seq + start, chunk, count, chunk[ts_index][count - 1], insert))
    return ops


def batch_op(partition: str, first_seq: int, columns: Sequence[log_columns.Column], count: int, last_ts: float,
             insert: str = INSERT) -> tuple[str, tuple[Any, ...]]:
    """The INSERT of one batch: ``count`` (at most MAX_ROWS) consecutive entries from
    ``first_seq`` of ``partition`` given as their stored ``columns``, the newest archive
    timestamp among them ``last_ts``."""
    return (insert, (partition, first_seq, count, last_ts, encode(columns, count)))


def pack_entries(conn: sqlite3.Connection, columns: Sequence[str]) -> list[tuple[str, tuple[Any, ...]]]:
    """The operations that move every row of the one-row-per-entry table ``entries`` (``columns``
    but partition and seq; ``usr`` as JSON text) into batches and empty it: runs of consecutive
    sequence numbers become batches, in order."""
    usr = columns.index("usr")
    ts_index = columns.index("timestamp")
    ops: list[tuple[str, tuple[Any, ...]]] = []
    run: list[tuple[Any, ...]] = []
    run_partition: str | None = None
    run_first = next_seq = 0
    cursor = conn.execute(f"SELECT partition, seq, {', '.join(columns)} FROM entries ORDER BY partition, seq")
    for found in cursor:
        partition, seq = found[0], found[1]
        row = list(found[2:])
        row[usr] = json.loads(row[usr]) if isinstance(row[usr], str) and row[usr] else {}
        if run and (partition != run_partition or seq != next_seq):
            ops += batch_ops(run_partition, run_first, list(zip(*run, strict=True)), ts_index, _PACK)  # type: ignore[arg-type]
            run = []
        if not run:
            run_partition, run_first = partition, seq
        run.append(tuple(row))
        next_seq = seq + 1
    if run:
        ops += batch_ops(run_partition, run_first, list(zip(*run, strict=True)), ts_index, _PACK)  # type: ignore[arg-type]
    if ops:
        ops.append(("DELETE FROM entries", ()))
    return ops

