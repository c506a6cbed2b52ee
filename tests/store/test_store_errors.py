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


def _run_child(path: Path, mode: str) -> tuple[dict, str]:
    child = subprocess.run(
        [sys.executable, str(CHILD), str(path), mode], capture_output=True, text=True, timeout=100
    )
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout), child.stderr


def _stored(path: Path) -> set[int]:
    store = SQLiteStore(str(path), run_now)
    try:
        return set(store.load().messages)
    finally:
        store.close()


@pytest.mark.timeout(120)
def test_failed_commit_withholds_acknowledgements_then_resumes_when_space_returns(tmp_path: Path) -> None:
    """When commits fail with a write error (the file size limit, as a full disk), the error is
    logged on "relaymq.store", no acknowledgement goes out, flush() raises StoreUnavailable
    rather than wait, and submissions are still taken; once space returns the store writes
    again by itself, says so, and acknowledges everything in order (issue 15 finding 9; spec
    README decision 4: never acknowledge what was not stored; mqtt.md item 6)."""
    path = tmp_path / "full.db"
    result, stderr = _run_child(path, "recover")
    assert result["unavailable"] is not None and "full.db" in result["unavailable"]
    assert result["acked_during"] == 0  # nothing acknowledged while it cannot write
    assert result["state_during"] != "None"
    assert result["acked_when_failing"] < result["failing_at"]  # the failed batch waited
    # once it writes again, every submission is acknowledged, in order, none twice
    assert result["acked"] == list(range(1, result["submitted"] + 1))
    assert result["outages"] == 1
    assert result["failed"] == "None" and result["close_error"] is None
    assert "ERROR relaymq.store" in stderr and "cannot write" in stderr
    assert "writing again" in stderr
    assert _stored(path) == set(result["acked"])


@pytest.mark.timeout(120)
def test_closing_while_commits_fail_is_a_clean_stop(tmp_path: Path) -> None:
    """Closing the store while it cannot write tries once more, then stops without an error:
    what was not stored was never acknowledged (issue 15 finding 9: a graceful stop exits 0).
    Everything acknowledged is in the file, and the file opens again."""
    path = tmp_path / "full.db"
    result, stderr = _run_child(path, "close")
    assert result["close_error"] is None
    assert result["acked_during"] == 0
    acked = result["acked"]
    assert acked and len(acked) < result["submitted"]
    assert "never sent" in stderr
    assert set(acked) <= _stored(path)
