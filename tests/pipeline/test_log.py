"""The message log: order, sequence numbers per partition, visibility, retention (issue 7 item 1).

Spec: issue 7 "appended, in order, to a partitioned append-only log with a sequence number
per partition, timestamps, and a retention policy; only committed entries are visible".
"""

from __future__ import annotations

import sqlite3
import threading

import pytest

from relaymq.pipeline.log import LogError, MessageLog, RetentionError, log_path
from relaymq.pipeline.record import LogRecord


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
    writer.execute("INSERT INTO entries (partition, seq, usr, body) VALUES ('x-0', 1, '{}', x'00')")
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
