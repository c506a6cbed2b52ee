"""Helpers shared by the storage tests: one test body runs against both engines.

``engine`` opens a store of either kind and "restarts" it: the SQLite engine is closed and a
fresh instance loads the same file (what a broker restart does); the memory engine, which keeps
nothing across a restart by design, is read back from the same instance.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from relaymq.store.base import Snapshot, Store
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore


def run_now(callback: Callable[[], None]) -> None:
    """A notify that runs the callback on the calling (writer) thread, so tests see it run."""
    callback()


class Engine:
    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.opened: list[Store] = []

    def open(self) -> Store:
        store: Store = MemoryStore() if self.kind == "memory" else SQLiteStore(str(self.path), run_now)
        self.opened.append(store)
        return store

    def restart(self, store: Store) -> Snapshot:
        """What a broker sees after a restart (memory: what it holds now)."""
        if self.kind == "memory":
            return store.load()
        store.close()
        fresh = SQLiteStore(str(self.path), run_now)
        try:
            return fresh.load()
        finally:
            fresh.close()

    def committed_msg_ids(self, store: Store) -> set[int]:
        """Message ids another reader sees: SQLite through a second connection of its own."""
        if self.kind == "memory":
            return set(store.load().messages)
        conn = sqlite3.connect(str(self.path))
        try:
            return {row[0] for row in conn.execute("SELECT msg_id FROM messages")}
        finally:
            conn.close()


@contextmanager
def writer_held(store: SQLiteStore) -> Iterator[None]:
    """Keep the writer busy handing over a callback, so everything submitted inside is one batch.

    The store must have been opened with ``run_now`` as notify: the writer then runs the blocking
    callback itself and takes nothing new until it returns.
    """
    entered, release = threading.Event(), threading.Event()

    def block() -> None:
        entered.set()
        release.wait(30)

    store.on_durable(block)
    for _ in range(600):  # wake now and then to notice a failed writer instead of hanging
        if entered.wait(0.05) or store.failed is not None:
            break
    assert store.failed is None, f"the writer failed: {store.failed!r}"
    assert entered.is_set(), "the writer never reached the blocking callback"
    try:
        yield
    finally:
        release.set()
