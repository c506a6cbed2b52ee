"""Bringing a file that an earlier relaymq version kept apart into the broker's database, once.

Earlier versions kept the queue manager (``qmgr-<NAME>.db``) and the message log
(``<data_dir>/log/archive.sqlite3``) in files of their own. The one engine (engine.py) keeps
everything in ``relaymq.db``; at start-up a part that finds its old file copies the rows over
in one transaction of the engine's, waits for the commit, then renames the old file
``<file>.imported`` (kept for the operator to delete) and removes its WAL, SHM and lock files.
A crash before the rename leaves the old file in place and the rows imported; the next start
imports them again, which the ``INSERT OR REPLACE`` statements make harmless.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from .base import StoreError

#: One table to copy: (SELECT on the old file, INSERT OR REPLACE into relaymq.db).
Copy = tuple[str, str]


def read_legacy(path: str, copies: Sequence[Copy]) -> list[list[tuple[Any, ...]]]:
    """The rows each SELECT reads from the old file (opened read-only)."""
    try:
        old = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return [old.execute(select).fetchall() for select, _ in copies]
        finally:
            old.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot import {path!r}: {exc}") from exc


def import_legacy_file(engine: Any, path: str, copies: Sequence[Copy],
                       rows: list[list[tuple[Any, ...]]] | None = None) -> list[int]:
    """Copy the tables of ``path`` into ``engine``'s database in one commit, then rename the
    file ``.imported``; returns the number of rows of each copy. ``rows`` when already read."""
    if rows is None:
        rows = read_legacy(path, copies)
    engine.append([(insert, row) for (_, insert), table in zip(copies, rows, strict=False) for row in table])
    engine.flush()
    os.replace(path, path + ".imported")
    for suffix in ("-wal", "-shm", ".lock"):
        try:
            os.remove(path + suffix)
        except OSError:
            pass
    return [len(table) for table in rows]
