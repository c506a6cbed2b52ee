"""relaymq.store.sqlite_file: the one way relaymq opens its SQLite files (broker store, queue
manager store, message log).

Found in CI-like runs: a broker stopped while its queue manager store was being created left a
file with tables but no application id, and the next start refused it as "not a relaymq
queue manager store". Creation is now one transaction; these tests hold it to that.
Spec README decision 4 (what an acknowledgement promises is durable) needs a store that
always opens again after an interrupted start.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from relaymq.pipeline.log import LogError, MessageLog
from relaymq.qmgr.errors import StoreFailed
from relaymq.qmgr.sqlite_store import SqliteQueueStore
from relaymq.store.base import StoreError
from relaymq.store.sqlite import SQLiteStore
from relaymq.store.sqlite_file import DatabaseFileError, open_database

SCHEMA = {1: ("CREATE TABLE a (x)", "CREATE TABLE b (y)")}


def _open(path: Path, migrations=SCHEMA, app_id: int = 0x1234, version: int = 1) -> sqlite3.Connection:
    return open_database(str(path), application_id=app_id, schema_version=version, migrations=migrations,
                         synchronous="FULL", what="test file")


def test_new_file_gets_schema_and_marks(tmp_path: Path) -> None:
    conn = _open(tmp_path / "f.db")
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x1234
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    _open(tmp_path / "f.db").close()  # and it opens again


def test_interrupted_creation_leaves_nothing_behind(tmp_path: Path) -> None:
    """A failure half-way through the schema rolls back all of it: the next open starts clean."""
    broken = {1: ("CREATE TABLE a (x)", "CREATE TABLE oops (")}
    with pytest.raises(DatabaseFileError):
        _open(tmp_path / "f.db", migrations=broken)
    conn = sqlite3.connect(tmp_path / "f.db")
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0
    conn.close()
    _open(tmp_path / "f.db").close()


def test_foreign_and_newer_files_are_refused(tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(DatabaseFileError, match="not a test file"):
        _open(tmp_path / "other.db")
    _open(tmp_path / "new.db", version=1).close()
    with pytest.raises(DatabaseFileError, match="newer than this relaymq knows"):
        _open(tmp_path / "new.db", migrations={}, version=0)


@pytest.mark.parametrize("kind", ["broker", "qmgr", "log"])
def test_each_store_refuses_another_ones_file(tmp_path: Path, kind: str) -> None:
    """Each kind of file carries its own mark, so pointing one at another's file is an error."""
    SqliteQueueStore(str(tmp_path / "qm.db")).close()
    foreign = tmp_path / "qm.db"
    if kind == "broker":
        with pytest.raises(StoreError, match="not a relaymq store"):
            SQLiteStore(str(foreign), lambda callback: callback())
    elif kind == "qmgr":
        store = SQLiteStore(str(tmp_path / "broker.db"), lambda callback: callback())
        store.close()
        with pytest.raises(StoreFailed, match="not a relaymq queue manager store"):
            SqliteQueueStore(str(tmp_path / "broker.db"))
    else:
        log_dir = tmp_path / "log"
        log_dir.mkdir()
        (log_dir / "archive.sqlite3").write_bytes(foreign.read_bytes())
        with pytest.raises(LogError, match="not a relaymq message log"):
            MessageLog(str(log_dir))


def test_a_version_1_store_is_migrated_and_keeps_its_rows(tmp_path) -> None:
    """A store written before schema version 2 opens: its sessions and subscriptions are kept,
    and gain the new columns empty (no content filter, no delayed will)."""
    import sqlite3

    from relaymq.store.base import SessionRecord, SubscriptionRecord
    from relaymq.store.sqlite import _MIGRATIONS, APPLICATION_ID, SQLiteStore

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    for statement in _MIGRATIONS[1]:
        conn.execute(statement)
    conn.execute("INSERT INTO sessions VALUES ('old', 4, 4294967295, 1700000000.0, 'u')")
    conn.execute("INSERT INTO subscriptions VALUES ('old', 'a/#', 1, 0, 0, 0, NULL)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store = SQLiteStore(str(path), notify=lambda fn: fn())
    try:
        snap = store.load()
        assert snap.sessions == {"old": SessionRecord("old", 4, 4294967295, 1700000000.0, "u")}
        assert snap.subscriptions == [SubscriptionRecord("old", "a/#", 1)]
    finally:
        store.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == 2
