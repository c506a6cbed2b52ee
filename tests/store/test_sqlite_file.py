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
from relaymq.store.engine import SCHEMA_VERSION
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


# The schemas of the files that earlier relaymq versions kept apart (issue 14 put every part in
# one database); a file written by them must open, with its data, under the one schema.
LEGACY_QMGR = (
    "CREATE TABLE queues (owner TEXT, name TEXT, definition TEXT, PRIMARY KEY (owner, name))",
    "CREATE TABLE messages (uid TEXT PRIMARY KEY, qmgr TEXT, queue TEXT, seq INTEGER,"
    " priority INTEGER, state INTEGER, confirm_id INTEGER, lock_id INTEGER, created_ms INTEGER,"
    " expire_at INTEGER, target_qmgr TEXT, target_queue TEXT, msg_id BLOB, correl_id BLOB, data BLOB)",
    "CREATE TABLE confirmed (uid TEXT PRIMARY KEY, at_ms INTEGER)",
    "CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER)",
)


def _legacy_qmgr_file(path: Path) -> None:
    """A queue manager store as relaymq wrote it before issue 14, holding one queue and message."""
    import json

    from relaymq.qmgr.definitions import make_definition

    definition = make_definition("APP.Q", "local", "QM1")
    conn = sqlite3.connect(path)
    for statement in LEGACY_QMGR:
        conn.execute(statement)
    conn.execute("INSERT INTO queues VALUES ('QM1', 'APP.Q', ?)", (json.dumps(definition.to_dict()),))
    conn.execute("INSERT INTO messages VALUES ('QM1:1:7', 'QM1', 'APP.Q', 7, 0, 0, 0, 0, 1, NULL, '', '',"
                 " x'00', x'00', ?)", (_message_bytes(b"kept"),))
    conn.execute("INSERT INTO meta VALUES ('seq', 7)")
    conn.execute(f"PRAGMA application_id = {0x524D5151}")  # "RMQQ"
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def _message_bytes(body: bytes) -> bytes:
    from relaymq.message import Message

    message = Message()
    message.mq.body = body
    return message.to_bytes()


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(StoreError, match="not a relaymq store"):
        SQLiteStore(str(tmp_path / "other.db"), lambda callback: callback())
    with pytest.raises(StoreFailed, match="not a relaymq queue manager store"):
        SqliteQueueStore(str(tmp_path / "other.db"))
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "archive.sqlite3").write_bytes((tmp_path / "other.db").read_bytes())
    with pytest.raises(LogError, match="not a relaymq message log"):
        MessageLog(str(tmp_path / "log"))


def test_every_part_opens_the_one_database(tmp_path: Path) -> None:
    """Issue 14: one schema for every part, so the broker's file holds the queue manager's and
    the log's tables too (one transaction can cover every copy of a publication)."""
    path = tmp_path / "relaymq.db"
    SQLiteStore(str(path), lambda callback: callback()).close()
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"messages", "deliveries", "qm_messages", "qm_queues", "ps_subscriptions", "partitions",
            "entries"} <= tables
    SqliteQueueStore(str(path)).close()


def test_log_table_has_the_record_columns() -> None:
    """The log's one-row-per-entry table in the engine's schema (where a legacy log is
    imported) has every stored LogRecord column (partition and seq are its key), in the order
    the record batches keep them."""
    from relaymq.pipeline.record import COLUMNS, STORED_COLUMNS
    from relaymq.store.engine import LOG_COLUMNS

    assert tuple(c for c in COLUMNS if c not in ("partition", "seq")) == LOG_COLUMNS == STORED_COLUMNS


def test_a_legacy_queue_manager_store_is_adopted_with_its_messages(tmp_path: Path) -> None:
    """A qmgr-<NAME>.db written before issue 14 opens under the one schema, messages kept."""
    from relaymq.qmgr.manager import QueueManager

    _legacy_qmgr_file(tmp_path / "qmgr-QM1.db")
    qm = QueueManager.open("QM1", str(tmp_path))
    try:
        message = qm.get("APP.Q")
        assert message is not None and message.mq.body == b"kept"
    finally:
        qm.close()
    conn = sqlite3.connect(tmp_path / "qmgr-QM1.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM qm_messages").fetchone()[0] == 0


def test_a_legacy_queue_manager_store_is_imported_into_the_brokers_database(tmp_path: Path) -> None:
    """Inside the broker the queue manager lives in relaymq.db: an earlier qmgr-<NAME>.db is
    imported once (then renamed .imported), its messages kept."""
    from relaymq.qmgr.manager import QueueManager
    from relaymq.store.engine import Engine

    _legacy_qmgr_file(tmp_path / "qmgr-QM1.db")
    engine = Engine(str(tmp_path / "relaymq.db"))
    try:
        qm = QueueManager.open("QM1", str(tmp_path), engine=engine)
        assert qm.depth("APP.Q") == 1
        qm.close()
        assert not (tmp_path / "qmgr-QM1.db").exists() and (tmp_path / "qmgr-QM1.db.imported").exists()
        qm = QueueManager.open("QM1", str(tmp_path), engine=engine)  # nothing imported twice
        message = qm.get("APP.Q")
        assert message is not None and message.mq.body == b"kept" and qm.get("APP.Q") is None
        qm.close()
    finally:
        engine.close()


def test_a_legacy_message_log_is_adopted(tmp_path: Path) -> None:
    """An archive.sqlite3 written before issue 14 ("RMQL") opens with its entries."""
    from relaymq.pipeline.log_entries import from_publication

    log_dir = tmp_path / "log"
    log_dir.mkdir()
    conn = sqlite3.connect(log_dir / "archive.sqlite3")
    from relaymq.store.engine import MIGRATIONS

    for statement in MIGRATIONS[3][-2:]:  # the log's two tables, as they were
        conn.execute(statement.replace("IF NOT EXISTS ", ""))
    conn.execute(f"PRAGMA application_id = {0x524D514C}")  # "RMQL"
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    log = MessageLog(str(log_dir))
    try:
        record = from_publication("a/b", b"x", 1, {}, None)
        record.partition = "p-0"
        assert log.append([record]) == [("p-0", 0)]
        assert [r.body for r in log.read("p-0", 0)] == [b"x"]
    finally:
        log.close()


def written_at(path: Path, version: int, *rows: str) -> None:
    """A broker database as schema ``version`` left it (its migrations applied), with ``rows``
    inserted."""
    from relaymq.store.engine import APPLICATION_ID, MIGRATIONS

    conn = sqlite3.connect(path)
    for step in (step for number in range(1, version + 1) for step in MIGRATIONS[number]):
        if callable(step):
            step(conn)
        else:
            conn.execute(step)
    for row in rows:
        conn.execute(row)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


def test_a_version_1_store_is_migrated_and_keeps_its_rows(tmp_path) -> None:
    """A store written before schema version 2 opens: its sessions and subscriptions are kept,
    and gain the new columns empty (no content filter, no delayed will)."""
    from relaymq.store.base import SessionRecord, SubscriptionRecord

    path = tmp_path / "v1.db"
    written_at(path, 1, "INSERT INTO sessions VALUES ('old', 4, 4294967295, 1700000000.0, 'u')",
               "INSERT INTO subscriptions VALUES ('old', 'a/#', 1, 0, 0, 0, NULL)")
    store = SQLiteStore(str(path), notify=lambda fn: fn())
    try:
        snap = store.load()
        assert snap.sessions == {"old": SessionRecord("old", 4, 4294967295, 1700000000.0, "u")}
        assert snap.subscriptions == [SubscriptionRecord("old", "a/#", 1)]
    finally:
        store.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_version_4_database_gains_the_flow_release_markers(tmp_path) -> None:
    """Schema 5 (issue 14, exactly once into a flow: relaymq.flows.releases): a database written
    at version 4 (main's schema before it) opens, keeps its rows and gains the empty
    ``flow_releases`` table."""
    from relaymq.store.base import SessionRecord

    path = tmp_path / "v4.db"
    written_at(path, 4, "INSERT INTO sessions (client_id, protocol_level, expiry_interval, disconnected_at,"
               " username) VALUES ('old', 4, 4294967295, 1700000000.0, 'u')")
    store = SQLiteStore(str(path), notify=lambda fn: fn())
    try:
        assert store.load().sessions == {"old": SessionRecord("old", 4, 4294967295, 1700000000.0, "u")}
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM flow_releases").fetchone()[0] == 0


def test_a_version_5_database_keeps_its_qos2_messages_awaiting_pubrel(tmp_path) -> None:
    """Schema 6 (issue 16, row 3: one row per QoS 2 publication awaiting PUBREL, not two): a
    database written at version 5 (main's schema before it) opens with each ``inbound`` row
    as the state of its message, so the publisher's PUBREL after the upgrade still releases
    it exactly once (MQTT 3.1.1 4.3.3); a message-less row (a refused publication: nothing
    to release) and the ``inbound`` table are gone, every other message is untouched."""
    from relaymq.store.base import InboundRecord, StoredMessage

    path = tmp_path / "v5.db"
    written_at(path, 5,
               "INSERT INTO messages VALUES (7, 'a/b', x'6869', 2, 0, NULL, NULL, 1700000000.0)",
               "INSERT INTO messages VALUES (8, 'a/c', x'', 1, 0, NULL, NULL, 1700000001.0)",
               "INSERT INTO inbound VALUES ('pub', 3, 7)",
               "INSERT INTO inbound VALUES ('pub', 4, NULL)")
    store = SQLiteStore(str(path), notify=lambda fn: fn())
    try:
        snap = store.load()
        assert snap.inbound == [InboundRecord("pub", 3, 7)]
        assert snap.messages == {7: StoredMessage(7, "a/b", b"hi", 2, created_at=1700000000.0),
                                 8: StoredMessage(8, "a/c", b"", 1, created_at=1700000001.0)}
        store.delete_inbounds([(7, False)])  # its PUBREL: released, the message kept
        assert store.load().inbound == []
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'inbound'").fetchall() == []
