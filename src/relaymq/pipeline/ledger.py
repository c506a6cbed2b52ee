"""The sink's ledger: which micro-batches a ``relaymq`` sink has already delivered.

Why: Spark records a micro-batch as done (its commit log) only after the sink's ``commit``
returns. If the job dies in between, Spark runs the same batch id again after a restart, and a
sink that simply published again would send every alert twice. The ledger lives in the query's
checkpoint directory (``<checkpointLocation>/relaymq-ledger/<sinkId>`` by default; so it is as
durable, and as disposable, as the checkpoint) and holds one file per delivered batch, written
atomically (write to a temporary name, fsync, rename) once every message of the batch was
acknowledged. A batch id found there is skipped.

A ledger belongs to one streaming query: it records the query id of the checkpoint it was
first used with (``<checkpoint>/metadata``) and refuses another. Batch ids restart at 0 with a
new checkpoint, so a ledger kept from an older query would otherwise make the new query skip
its first batches without a word.

The ledger uses plain file operations (rename, fsync): the directory must be on a local or
NFS-mounted filesystem that the driver sees, even when the checkpoint itself is elsewhere
(then name a local directory with the sink's ``ledger`` option).

What the ledger alone does not cover: a crash in the middle of delivering one batch re-sends
that batch's messages that were already acknowledged. Each message carries ``relaymq-sink-id``
= ``<sink>:<batch>:<index>`` (an MQTT 5 User Property / RFH2 ``usr`` field) so a consumer can
drop those duplicates by id; puts to queues use it as the message's UID, and the queue
manager itself refuses the repeated put (see sink.QueuePutter).
"""

from __future__ import annotations

import json
import os
import re
import time

_BATCH_FILE = re.compile(r"^batch-(\d+)\.json$")
QUERY_FILE = "query.json"


class LedgerError(Exception):
    """The ledger cannot be used as asked; ``str()`` is one line for the operator."""


def query_id(checkpoint: str) -> str | None:
    """The streaming query id recorded in a checkpoint directory (None: not there yet)."""
    try:
        with open(os.path.join(checkpoint, "metadata"), encoding="utf-8") as handle:
            first = handle.readline()
    except FileNotFoundError:
        return None
    try:
        value = json.loads(first).get("id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _write_atomically(path: str, value: object) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class Ledger:
    """Delivered batch ids of one sink, as files ``batch-<id>.json`` under ``directory``."""

    def __init__(self, directory: str, keep: int = 1000) -> None:
        self.directory = directory
        self.keep = keep
        os.makedirs(directory, exist_ok=True)

    def _path(self, batch_id: int) -> str:
        return os.path.join(self.directory, f"batch-{batch_id}.json")

    def bind(self, query: str) -> None:
        """Tie the ledger to streaming query ``query`` (the first call records it); raises
        LedgerError when it already belongs to another query."""
        path = os.path.join(self.directory, QUERY_FILE)
        try:
            with open(path, encoding="utf-8") as handle:
                recorded = json.load(handle).get("query")
        except FileNotFoundError:
            _write_atomically(path, {"query": query, "at": time.time()})
            return
        if recorded != query:
            raise LedgerError(
                f"the sink ledger {self.directory} belongs to streaming query {recorded}, but the checkpoint "
                f"is query {query}: a ledger reused with a new checkpoint would skip that query's first "
                f"batches. Delete the ledger directory, or give the sink a new one (option ledger)")

    def delivered(self, batch_id: int) -> bool:
        """Was batch ``batch_id`` already delivered completely?"""
        return os.path.exists(self._path(batch_id))

    def record(self, batch_id: int, count: int) -> None:
        """Mark batch ``batch_id`` delivered (``count`` messages); durable when this returns."""
        _write_atomically(self._path(batch_id), {"batch": batch_id, "messages": count, "at": time.time()})
        self._trim(batch_id)

    def batches(self) -> list[int]:
        """Delivered batch ids, ascending."""
        return sorted(int(m.group(1)) for name in os.listdir(self.directory) if (m := _BATCH_FILE.match(name)))

    def _trim(self, newest: int) -> None:
        # Spark never re-runs a batch older than its last committed one; keep a margin anyway.
        for batch_id in self.batches():
            if batch_id <= newest - self.keep:
                os.unlink(self._path(batch_id))
