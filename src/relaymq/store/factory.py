"""Pick a storage engine by name (``--store sqlite|memory``) so callers need not know the classes."""

from __future__ import annotations

import os
from typing import Any

from .base import Store, StoreError
from .engine import Notify
from .sqlite import SQLiteStore

DATABASE_FILE = "relaymq.db"

# Tuning that only the SQLite engine has. The memory engine accepts and ignores them, so one
# command line works with either engine; any other option is an error for both.
SQLITE_OPTIONS = frozenset({"synchronous", "commit_delay"})


def open_store(kind: str, data_dir: str, notify: Notify, **options: Any) -> Store:
    """Open the engine ``kind``: "sqlite" keeps ``<data_dir>/relaymq.db`` (creating the directory), "memory" nothing.

    Raises ValueError for an unknown kind, TypeError for an unknown option, StoreError when the
    directory or the database cannot be used.
    """
    if kind == "sqlite":
        try:
            os.makedirs(data_dir, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create data directory {data_dir!r}: {exc}") from exc
        return SQLiteStore(os.path.join(data_dir, DATABASE_FILE), notify, **options)
    if kind == "memory":
        unknown = set(options) - SQLITE_OPTIONS
        if unknown:
            raise TypeError(f"unknown store option(s): {', '.join(sorted(unknown))}")
        from .memory import MemoryStore  # only the engine asked for is imported (issue 16)

        return MemoryStore(notify)
    raise ValueError(f"unknown store kind {kind!r} (expected 'sqlite' or 'memory')")
