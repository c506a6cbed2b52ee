"""The message log: order, sequence numbers per partition, visibility, retention (issue 7 item 1).

Spec: issue 7 "appended, in order, to a partitioned append-only log with a sequence number
per partition, timestamps, and a retention policy; only committed entries are visible".
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from relaymq.pipeline.log import LogError, MessageLog, RetentionError, log_path
from relaymq.pipeline.log_entries import from_publication, publication_entry
from relaymq.pipeline.record import LogRecord
from relaymq.store.base import StoredMessage


def rec(partition: str, body: bytes, **kw: object) -> LogRecord:
    return LogRecord(topic="a/b", partition=partition, body=body, **kw)  # type: ignore[arg-type]


def test_sequence_numbers_per_partition_in_order(tmp_path) -> None:
    """issue 7: a sequence number per partition, assigned in append order, no gaps."""
    log = MessageLog(str(tmp_path))
    placed = log.append([rec("x-0", b"a"), rec("x-1", b"b"), rec("x-0", b"c")])
    placed += log.append([rec("x-0", b"d")])
    assert placed == [("x-0", 0), ("x-1", 0), ("x-0", 1), ("x-0", 2)]
    assert [r.body for r in log.read("x-0", 0)] == [b"a", b"c", b"d"]
    assert [r.seq for r in log.read("x-0", 1, 3)] == [1, 2]
    info = log.partitions()["x-0"]
    assert (info.first_seq, info.next_seq) == (0, 3)


def test_record_round_trips_with_usr_and_timestamp(tmp_path) -> None:
    """issue 7 columns: usr as a map, timestamps, MQMD fields survive the log."""
    log = MessageLog(str(tmp_path))
    log.append([rec("x-0", b"\x00\xff", usr={"i_state": "1"}, correl_id=b"c" * 24, priority=7)], now=1234.5)
    (got,) = log.read("x-0", 0)
    assert got.usr == {"i_state": "1"} and got.correl_id == b"c" * 24 and got.priority == 7
    assert got.timestamp == 1234.5 and got.body == b"\x00\xff"


def test_archive_timestamps_increase_in_append_order_across_partitions(tmp_path) -> None:
    """issue 7 "timestamps" + admission control by archive time (audit item 1): every entry's
    timestamp is unique and later than the one appended before it, in any partition, even within
    one group commit or when the clock steps back; ``timestamps`` reads them in seq order."""
    log = MessageLog(str(tmp_path))
    log.append([rec("x-0", b"a"), rec("x-1", b"b"), rec("x-0", b"c")], now=1000.0)
    log.append([rec("x-1", b"d")], now=999.0)  # the clock stepped back
    log.append([rec("x-0", b"e")], now=1000.5)
    in_order = [(r.body, r.timestamp) for p in ("x-0", "x-1") for r in log.read(p, 0)]
    by_time = [body for body, _t in sorted(in_order, key=lambda item: item[1])]
    assert by_time == [b"a", b"b", b"c", b"d", b"e"]
    assert log.timestamps("x-0", 0, 3) == [1000.0, 1000.000002, 1000.5]
    assert log.timestamps("x-1", 0, 2) == [1000.000001, 1000.000003]
    log.close()  # one writer at a time (the engine's lock)
    reopened = MessageLog(str(tmp_path))  # the next writer continues after the newest entry
    reopened.append([rec("x-1", b"f")], now=1.0)
    assert reopened.timestamps("x-1", 2, 3) == [1000.500001]
    with pytest.raises(RetentionError):
        reopened.apply_retention("x-0", max_entries=1)
        reopened.timestamps("x-0", 0, 3)


def test_only_committed_entries_are_visible(tmp_path) -> None:
    """issue 7 "only committed entries are visible": a reader never sees an open transaction."""
    log = MessageLog(str(tmp_path))
    log.append([rec("x-0", b"a")])
    writer = sqlite3.connect(log_path(str(tmp_path)), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO log_batches VALUES ('x-0', 1, 1, 0, x'00')")
    writer.execute("UPDATE partitions SET next_seq=2 WHERE name='x-0'")
    reader = MessageLog(str(tmp_path), readonly=True)
    assert reader.partitions()["x-0"].next_seq == 1
    assert [r.seq for r in reader.read("x-0", 0)] == [0]
    writer.execute("ROLLBACK")
    writer.close()


def test_retention_by_count_and_age_and_the_error_after(tmp_path) -> None:
    """issue 7 retention policy; reading a removed offset is a clear RetentionError."""
    log = MessageLog(str(tmp_path))
    log.append([rec("x-0", b"old")] * 1, now=100.0)
    log.append([rec("x-0", bytes([i])) for i in range(5)], now=200.0)
    assert log.apply_retention("x-0", max_age=50, now=220.0) == 1
    assert log.partitions()["x-0"].first_seq == 1
    assert log.apply_retention("x-0", max_entries=2, now=220.0) == 3
    assert [r.seq for r in log.read("x-0", 4)] == [4, 5]
    with pytest.raises(RetentionError, match="offset 1 is no longer in the log"):
        log.read("x-0", 1)
    assert log.append([rec("x-0", b"next")]) == [("x-0", 6)]  # seqs continue after retention


def test_unknown_partition_and_missing_log(tmp_path) -> None:
    """issue 7: errors name what is missing."""
    log = MessageLog(str(tmp_path / "a"))
    with pytest.raises(LogError, match="no partition 'nope'"):
        log.read("nope", 0)
    with pytest.raises(LogError, match="no message log"):
        MessageLog(str(tmp_path / "b"), readonly=True)


def test_submissions_from_threads_commit_in_order_without_gaps(tmp_path) -> None:
    """issue 7 "never block the loop" and issue 14: ``submit`` returns at once (the storage
    engine commits); entries from several threads are numbered as they join the batch, so each
    partition is gapless and in each producer's order."""
    log = MessageLog(str(tmp_path))
    producers = [threading.Thread(target=lambda p=p: [log.submit([rec(f"x-{p % 2}", f"{p}:{i}".encode())])
                                                      for i in range(50)]) for p in range(4)]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    log.flush()
    for partition in ("x-0", "x-1"):
        entries = log.read(partition, 0)
        assert [r.seq for r in entries] == list(range(100))
        for p in (0, 1, 2, 3):
            mine = [int(r.body.split(b":")[1]) for r in entries if r.body.startswith(f"{p}:".encode())]
            assert mine in ([], list(range(50)))
    log.close()


def test_entries_submitted_in_a_unit_commit_with_it(tmp_path) -> None:
    """issue 14: an archive entry submitted inside a unit of work (the broker routing a
    publication) joins the batch only when the unit ends, with the publication's other copies:
    a commit meanwhile does not take it, and no later entry can be numbered before it."""
    log = MessageLog(str(tmp_path))
    engine = log.engine
    assert engine is not None
    with engine.unit():
        log.submit([rec("x-0", b"in the unit")])
        other = threading.Thread(target=lambda: log.append([rec("x-1", b"outside")]))
        other.start()
        other.join(30)
        assert [r.body for r in log.read("x-1", 0)] == [b"outside"]  # committed meanwhile
        assert "x-0" not in log.partitions()  # not taken before the unit ends
    log.flush()
    assert [(r.seq, r.body) for r in log.read("x-0", 0)] == [(0, b"in the unit")]
    log.close()


def test_entries_are_kept_as_record_batches_and_read_across_them(tmp_path) -> None:
    """issue 14 (log append >= 200,000 msg/s): one commit's entries of a partition are kept as
    record batches of at most MAX_ROWS (relaymq.store.log_batch), and reading, timestamps and
    retention still see one entry per sequence number (issue 7 item 1), across batch edges."""
    from relaymq.store.log_batch import MAX_ROWS

    log = MessageLog(str(tmp_path))
    count = 2 * MAX_ROWS + MAX_ROWS // 2
    log.append([rec("x-0", i.to_bytes(4, "big"), usr={"i": str(i)}) for i in range(count)], now=100.0)
    log.append([rec("x-0", b"later")], now=200.0)
    db = sqlite3.connect(log_path(str(tmp_path)))
    counts = [row[0] for row in db.execute("SELECT count FROM log_batches WHERE partition='x-0' ORDER BY first_seq")]
    assert counts == [MAX_ROWS, MAX_ROWS, MAX_ROWS // 2, 1]
    edge = log.read("x-0", MAX_ROWS - 2, MAX_ROWS + 2)
    assert [(r.seq, r.body, r.usr) for r in edge] == [
        (s, s.to_bytes(4, "big"), {"i": str(s)}) for s in range(MAX_ROWS - 2, MAX_ROWS + 2)]
    stamps = log.timestamps("x-0", count - 1, count + 1)
    assert stamps[0] < 101 and stamps[1] >= 200
    assert log.read("x-0", count, limit=5)[0].body == b"later"
    # retention inside a batch: the batches wholly below go, the rest is skipped on reading
    assert log.apply_retention("x-0", max_entries=MAX_ROWS) == count + 1 - MAX_ROWS
    first = count + 1 - MAX_ROWS
    assert log.partitions()["x-0"].first_seq == first
    assert [r.seq for r in log.read("x-0", first, first + 2)] == [first, first + 1]
    with pytest.raises(RetentionError):
        log.read("x-0", first - 1)
    assert [row[0] for row in db.execute("SELECT first_seq FROM log_batches ORDER BY first_seq")] == [
        MAX_ROWS, 2 * MAX_ROWS, count]
    assert log.apply_retention("x-0", max_age=50, now=220.0) == MAX_ROWS - 1  # all but 'later'
    assert [r.body for r in log.read("x-0", count)] == [b"later"]
    log.close()
    reopened = MessageLog(str(tmp_path))  # continues after the newest entry and stamp
    assert reopened.append([rec("x-0", b"next")], now=150.0) == [("x-0", count + 1)]
    assert reopened.timestamps("x-0", count, count + 2)[1] > stamps[1]
    reopened.close()
    db.close()


@pytest.mark.parametrize("kind", ["relaymq.db at schema 3", "archive.sqlite3 of its own"])
def test_entries_kept_one_row_each_by_earlier_versions_become_batches(tmp_path, kind: str) -> None:
    """issue 14: a log written before record batches (one row per entry, usr as JSON) is
    converted when it is opened for writing (schema migration 4), every entry kept as it was;
    a reader opening it unconverted gets a one-line error rather than an empty log."""
    from pipeline_helpers import write_row_per_entry_log
    from relaymq.store.engine import APPLICATION_ID, LEGACY_LOG_ID, MIGRATIONS, Engine

    records = [rec(f"x-{i % 2}", bytes([i]), usr={"n": str(i)}, timestamp=1000.0 + i) for i in range(7)]
    if kind == "archive.sqlite3 of its own":
        path = tmp_path / "archive.sqlite3"
        write_row_per_entry_log(path, records, LEGACY_LOG_ID)
    else:
        path = tmp_path / "relaymq.db"
        write_row_per_entry_log(path, records)
        conn = sqlite3.connect(path)
        for version in (1, 2, 3):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 3")
        conn.commit()
        conn.close()
    with pytest.raises(LogError, match="written by an earlier relaymq"):
        MessageLog(str(tmp_path), readonly=True)
    engine = Engine(str(path)) if kind.startswith("relaymq.db") else None  # as the broker opens it
    log = MessageLog(str(tmp_path), engine=engine)
    assert {name: (p.first_seq, p.next_seq) for name, p in log.partitions().items()} == {"x-0": (0, 4), "x-1": (0, 3)}
    got = log.read("x-0", 0) + log.read("x-1", 0)
    assert [(r.partition, r.seq, r.body, r.usr, r.timestamp) for r in got] == [
        (r.partition, r.seq, r.body, r.usr, r.timestamp) for r in sorted(records, key=lambda r: (r.partition, r.seq))]
    assert log.append([rec("x-1", b"new")]) == [("x-1", 3)]
    assert log.timestamps("x-1", 2, 4)[1] > 1006.0
    log.close()
    if engine is not None:
        engine.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    db.close()


def test_tap_entry_shared_by_partitions_reads_back_as_the_publication(tmp_path) -> None:
    """issue 14 (the archive tap): a routed publication submitted once to each partition its
    rules name (MessageLog.submit_entry, inside the unit of work of a socket read) is one
    entry in each, numbered in its partition, stamped when the unit's entries join the batch
    (increasing in append order across partitions, issue 7 "timestamps"), its stored form
    built at commit (record.publication_entry, its expiry counted from its archive time), and
    reads back as the publication's record (from_publication); an entry already in the stored
    form (a queue put) keeps its place among them."""
    log = MessageLog(str(tmp_path))
    engine = log.engine
    assert engine is not None
    props = {"user_property": [("i_state", "1")], "correlation_data": b"c" * 30, "payload_format_indicator": 1}
    expiry_at = time.time() + 60
    publication = StoredMessage(1, "LCUnit/7/batch", b"<events/>", 1, properties=props, expiry_at=expiry_at)
    before = time.time()
    with engine.unit():
        log.submit_entry(["a-0", "b-1"], publication)
        log.submit_entry(["a-0"], publication_entry("queue", b"put", 0, None))
        log.submit_entry(["a-0"], StoredMessage(2, "LCUnit/8/batch", bytearray(b"next"), 0))
    log.flush()
    a, b = log.read("a-0", 0), log.read("b-1", 0)
    assert [(r.seq, r.body) for r in a] == [(0, b"<events/>"), (1, b"put"), (2, b"next")]
    assert [(r.seq, r.body) for r in b] == [(0, b"<events/>")]
    first = a[0].timestamp
    assert before <= first <= time.time()
    assert [b[0].timestamp, a[1].timestamp, a[2].timestamp] == [round(first + n / 1e6, 6) for n in (1, 2, 3)]
    expected = from_publication("LCUnit/7/batch", b"<events/>", 1, props, expiry_at, now=b[0].timestamp)
    expected.partition, expected.seq, expected.timestamp = "b-1", 0, b[0].timestamp
    assert b[0] == expected
    assert (expected.usr, expected.correl_id, expected.format) == ({"i_state": "1"}, b"c" * 24, "MQSTR")
    assert 0 < expected.expiry <= 600
    log.close()


def test_a_publication_whose_properties_cannot_be_mapped_is_archived_without_them(tmp_path, caplog) -> None:
    """issue 14 (nothing acknowledged is lost): the stored form of a tapped publication is built
    on the writer thread, where an error would stop the engine; a publisher inside the broker
    may hand any value as a property, so such an entry keeps its place with its topic and
    payload, the log says why, and the log goes on."""
    log = MessageLog(str(tmp_path))
    odd = StoredMessage(1, "LCUnit/1/batch", b"body", 1, properties={"correlation_data": "not bytes"})
    log.submit_entry(["a-0"], odd)
    log.submit_entry(["a-0"], StoredMessage(2, "LCUnit/2/batch", b"after", 1))
    log.flush()
    assert [(r.seq, r.topic, r.body, r.correl_id) for r in log.read("a-0", 0)] == [
        (0, "LCUnit/1/batch", b"body", b""), (1, "LCUnit/2/batch", b"after", b"")]
    assert "could not be archived" in caplog.text
    log.close()
