"""Unusable files are refused with the file's name; a failing writer stops acknowledging."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store_helpers import run_now

from relaymq.store.sqlite import SCHEMA_VERSION, SQLiteStore
from relaymq.store.base import StoreError

CHILD = Path(__file__).with_name("disk_full_child.py")


def test_corrupt_file_is_refused_naming_it(tmp_path: Path) -> None:
    """A file that is not an SQLite database gives StoreError naming it (task brief: errors name
    the file; spec README decision 4: never run on storage that cannot keep its promise)."""
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database, just 4 KiB of junk " * 100)
    with pytest.raises(StoreError, match="corrupt.db"):
        SQLiteStore(str(path), run_now)


def test_directory_in_place_of_the_file_is_refused_naming_it(tmp_path: Path) -> None:
    """A directory where the database file should be gives StoreError naming the path."""
    path = tmp_path / "adir.db"
    path.mkdir()
    with pytest.raises(StoreError, match="adir.db"):
        SQLiteStore(str(path), run_now)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A store written by a newer relaymq (higher user_version) is refused, naming the file and
    both versions, instead of being misread."""
    path = tmp_path / "newer.db"
    SQLiteStore(str(path), run_now).close()
    conn = sqlite3.connect(str(path))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match=rf"newer.db.*version {SCHEMA_VERSION + 1}"):
        SQLiteStore(str(path), run_now)


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    """An SQLite file of some other application is not taken over."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    with pytest.raises(StoreError, match="other.db.*not a relaymq store"):
        SQLiteStore(str(path), run_now)


def test_synchronous_off_and_negative_delay_are_refused(tmp_path: Path) -> None:
    """synchronous=OFF could corrupt the file on power loss: only FULL, EXTRA and NORMAL are
    accepted (spec README decision 4)."""
    with pytest.raises(ValueError, match="OFF"):
        SQLiteStore(str(tmp_path / "s.db"), run_now, synchronous="OFF")
    with pytest.raises(ValueError, match="commit_delay"):
        SQLiteStore(str(tmp_path / "s.db"), run_now, commit_delay=-1)


@pytest.mark.timeout(120)
def test_failed_commit_withholds_acknowledgements_and_refuses_work(tmp_path: Path) -> None:
    """When a commit fails (file size limit, as a full disk), the error is logged on
    "relaymq.store", no callback of the failed or any later batch runs, every further call raises
    StoreError, and everything that was acknowledged is in the file (spec README decision 4:
    never acknowledge what was not stored; mqtt.md item 6)."""
    path = tmp_path / "full.db"
    child = subprocess.run(
        [sys.executable, str(CHILD), str(path)], capture_output=True, text=True, timeout=100
    )
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout)
    assert result["refused"] is not None and "full.db" in result["refused"]
    assert result["failed"] != "None"
    assert all(result["after"][name] is not None for name in ("put", "on_durable", "flush", "close"))
    acked = result["acked"]
    assert acked and -1 not in acked
    assert len(acked) < result["registered"]  # the failed batch was never acknowledged
    assert "ERROR relaymq.store" in child.stderr

    store = SQLiteStore(str(path), run_now)
    try:
        stored = set(store.load().messages)
    finally:
        store.close()
    assert set(acked) <= stored
