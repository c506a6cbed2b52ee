"""The sink's ledger: which micro-batches a ``relaymq`` sink has already delivered.

Why: Spark records a micro-batch as done (its commit log) only after the sink's ``commit``
returns. If the job dies in between, Spark runs the same batch id again after a restart, and a
sink that simply published again would send every alert twice. The ledger lives in the query's
checkpoint directory (the sink's ``ledger`` option; so it is as durable, and as disposable,
as the checkpoint) and
holds one file per delivered batch, written atomically (write to a temporary name, fsync,
rename) once every message of the batch was acknowledged. A batch id found there is skipped.

What is NOT covered: a crash in the middle of delivering one batch re-sends that batch's
messages that were already acknowledged (at-least-once inside the one interrupted batch).
Each message carries ``relaymq-sink-id`` = ``<sink>:<batch>:<index>`` (an MQTT 5 User
Property / RFH2 ``usr`` field) so a consumer can drop those few duplicates by id.
"""

from __future__ import annotations

import json
import os
import re
import time

_BATCH_FILE = re.compile(r"^batch-(\d+)\.json$")


class Ledger:
    """Delivered batch ids of one sink, as files ``batch-<id>.json`` under ``directory``."""

    def __init__(self, directory: str, keep: int = 1000) -> None:
        self.directory = directory
        self.keep = keep
        os.makedirs(directory, exist_ok=True)

    def _path(self, batch_id: int) -> str:
        return os.path.join(self.directory, f"batch-{batch_id}.json")

    def delivered(self, batch_id: int) -> bool:
        """Was batch ``batch_id`` already delivered completely?"""
        return os.path.exists(self._path(batch_id))

    def record(self, batch_id: int, count: int) -> None:
        """Mark batch ``batch_id`` delivered (``count`` messages); durable when this returns."""
        path = self._path(batch_id)
        temporary = f"{path}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"batch": batch_id, "messages": count, "at": time.time()}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        self._trim(batch_id)

    def batches(self) -> list[int]:
        """Delivered batch ids, ascending."""
        return sorted(int(m.group(1)) for name in os.listdir(self.directory) if (m := _BATCH_FILE.match(name)))

    def _trim(self, newest: int) -> None:
        # Spark never re-runs a batch older than its last committed one; keep a margin anyway.
        for batch_id in self.batches():
            if batch_id <= newest - self.keep:
                os.unlink(self._path(batch_id))
