"""open_store picks the engine by name and puts the SQLite file in the data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import run_now

from relaymq.store.base import StoreError
from relaymq.store.factory import open_store
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore


def test_sqlite_creates_the_data_directory_and_file(tmp_path: Path) -> None:
    """"sqlite" keeps <data_dir>/relaymq.db, creating missing directories, and passes its
    options on (task brief: factory; spec README decision 4)."""
    data_dir = tmp_path / "a" / "b"
    store = open_store("sqlite", str(data_dir), run_now, synchronous="NORMAL", commit_delay=0.0)
    try:
        assert isinstance(store, SQLiteStore)
        assert store.path == str(data_dir / "relaymq.db")
        store.put_retained("t", 1)
        store.flush()
        assert (data_dir / "relaymq.db").is_file()
    finally:
        store.close()


def test_memory_ignores_sqlite_tuning_but_not_unknown_options(tmp_path: Path) -> None:
    """"memory" writes nothing to data_dir (its state is lost on exit, as documented); the
    SQLite tuning options are accepted so one command line serves both engines, anything else is
    a TypeError (task brief: factory; spec README decision 4 names what memory gives up)."""
    store = open_store("memory", str(tmp_path / "unused"), run_now, synchronous="FULL")
    assert isinstance(store, MemoryStore)
    assert not (tmp_path / "unused").exists()
    with pytest.raises(TypeError, match="colour"):
        open_store("memory", str(tmp_path), run_now, colour="blue")


def test_unknown_kind_is_named(tmp_path: Path) -> None:
    """An unknown engine name raises ValueError naming it (task brief: factory)."""
    with pytest.raises(ValueError, match="'leveldb'"):
        open_store("leveldb", str(tmp_path), run_now)


def test_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """A data directory that cannot be created gives StoreError naming it (spec README
    decision 4: no broker may start acknowledging without storage behind it)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with pytest.raises(StoreError, match="blocker"):
        open_store("sqlite", str(blocker / "data"), run_now)
