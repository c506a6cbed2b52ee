"""Log records from publications and queue messages (issue 7 "Columns: topic or queue,
partition, seq, timestamp, qos, the MQMD properties, usr as a map, domain, body";
flows-http.md decisions: over MQTT 5 the usr folder travels as User Properties, in MQ format
as the RFH2 usr folder)."""

from __future__ import annotations

import pytest

from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.pipeline.arrowio import batches_from_ipc, records_from_batches, to_ipc
from relaymq.pipeline.log_entries import from_publication
from relaymq.pipeline.record import LogRecord, from_message


def test_publication_properties_map_to_mqmd_columns_and_usr() -> None:
    """flows-http.md decisions: MQTT 5 User Properties = usr; correlation data = CorrelId."""
    record = from_publication("LCUnit/1/Heartbeat", b"<x/>", 1, {
        "user_property": [("i_state", "1"), ("b_time", "20040417103118")],
        "correlation_data": b"abc", "content_type": "application/xml", "payload_format_indicator": 1,
        "response_topic": "replies/1"}, expiry_at=110.0, now=100.0)
    assert record.usr == {"i_state": "1", "b_time": "20040417103118"}
    assert (record.topic, record.queue, record.qos, record.persistence) == ("LCUnit/1/Heartbeat", None, 1, 1)
    assert record.correl_id == b"abc" and record.domain == "XMLNSC" and record.format == "MQSTR"
    assert record.reply_to_q == "replies/1" and record.expiry == 100


def test_publication_record_leaves_every_other_column_at_its_default() -> None:
    """issue 7 "Columns": a publication fills only the columns MQTT has (from_publication builds
    the record positionally, for speed: this holds it to the fields' order and defaults)."""
    record = from_publication("a/b", b"body", 2, {"user_property": [("k", "v")], "correlation_data": b"c",
                                                  "payload_format_indicator": 1, "response_topic": "r"})
    assert record == LogRecord(topic="a/b", qos=2, body=b"body", usr={"k": "v"}, domain="BLOB", correl_id=b"c",
                               persistence=1, expiry=-1, format="MQSTR", reply_to_q="r",
                               put_appl_name="relaymq mqtt")
    assert from_publication("t", b"", 0, None).persistence == 0


def test_queue_message_takes_mqmd_rfh2_usr_and_domain() -> None:
    """formats-and-jms.md: usr folder of the first RFH2; the domain from mcd.Msd."""
    rfh2 = MQRFH2(Format="MQSTR", CodedCharSetId=1208)
    rfh2.ensure_folder("mcd").add("Msd", "xmlnsc")
    rfh2.ensure_folder("usr").add("colour", "blue")
    md = MQMD(Format="MQHRF2", Priority=6, Persistence=1, CorrelId=b"k" * 24, ReplyToQ="REPLY.Q")
    record = from_message("ORDERS", Message(MQMessage(md=md, headers=[rfh2], body=b"<a/>")))
    assert (record.queue, record.topic, record.qos) == ("ORDERS", None, 1)
    assert record.usr == {"colour": "blue"} and record.priority == 6 and record.reply_to_q == "REPLY.Q"
    assert record.format == "MQSTR" and record.domain == "XMLNSC" and record.body == b"<a/>"


def test_arrow_ipc_round_trip() -> None:
    """issue 7 "an HTTP fetch endpoint returns a partition's range as Arrow IPC": lossless."""
    record = from_publication("t", b"\x00\x01", 0, {"user_property": [("k", "v")]}, now=1.0)
    record.partition, record.seq, record.timestamp = "t-0", 5, 1700000000.25
    assert records_from_batches(batches_from_ipc(to_ipc([record]))) == [record]


def test_queue_record_back_to_a_flow_message() -> None:
    """issue 7 "Flows on Spark ... with the same node code": a queue record becomes the MQ message
    the flow would have got (MQMD fields, RFH2 usr, body, domain), and back without loss."""
    from relaymq.pipeline.sparkflows import to_message

    rfh2 = MQRFH2(Format="MQSTR", CodedCharSetId=1208)
    rfh2.ensure_folder("usr").add("colour", "blue")
    md = MQMD(Format="MQHRF2", Priority=6, Persistence=1, CorrelId=b"k" * 24, ReplyToQ="REPLY.Q", MsgId=b"m" * 24)
    record = from_message("ORDERS", Message(MQMessage(md=md, headers=[rfh2], body=b"<a/>"), configured_domain="XMLNSC"))
    again = from_message("ORDERS", to_message(record))
    assert again == record
    assert to_message(record).body().name  # parses in its domain (XMLNSC)


def test_publication_record_to_a_flow_message_carries_topic_and_usr() -> None:
    """flows-http.md decisions: a publication enters a flow with psc.Topic and usr (flows.mqtt_mapping)."""
    from relaymq.message.mqtt_mapping import topic_of, usr_properties
    from relaymq.pipeline.sparkflows import to_message

    message = to_message(from_publication("LCUnit/1/batch", b"<events/>", 1, {"user_property": [("k", "v")]}))
    assert topic_of(message) == "LCUnit/1/batch" and usr_properties(message) == [("k", "v")]
    assert message.mq.md.Persistence == 1


def test_arrow_read_of_stored_batches_equals_the_records_read(tmp_path) -> None:
    """issue 16 (the pipeline reads stored record batches as Arrow without a Python loop per
    value): a range starting and ending inside stored batches, across several of them, reads as
    the same Arrow rows as the log's records converted one by one (timestamps to the µs, usr
    maps, queue entries without a topic, binary fields)."""
    from relaymq.pipeline.arrowio import to_batch
    from relaymq.pipeline.fetch import LocalAccess
    from relaymq.pipeline.log import MessageLog
    from relaymq.pipeline.record import LogRecord

    log = MessageLog(str(tmp_path))
    for commit in range(4):
        log.append([LogRecord(topic=None if i % 3 == 0 else f"t/{i}", queue="Q1" if i % 3 == 0 else None,
                              partition="p-0", usr={"unit": str(i), "k": "v"} if i % 2 else {},
                              correl_id=bytes([i % 256]) * 24, priority=i % 10, body=b"\x00" * i)
                    for i in range(commit * 5, commit * 5 + 5)], now=1_700_000_000.123457 + commit)
    access = LocalAccess(str(tmp_path))
    try:
        (got,) = access.read_batches("p-0", 3, 17)
        assert got.equals(to_batch(log.read("p-0", 3, 17)))
        assert got.column("seq").to_pylist() == list(range(3, 17))
        assert access.read_batches("p-0", 20, 25) == []
    finally:
        access.close()
        log.close()


def test_a_log_written_row_by_row_reads_as_before_beside_batches_kept_as_columns(tmp_path) -> None:
    """A log written by relaymq before record batches were kept column by column (format 1 of
    relaymq.store.log_batch: a marshal list of rows) stays readable after the change, batches of
    both forms in one range: the records, the Arrow read of all columns and of some, the
    timestamps, and retention by age read the old batches as they read the new."""
    import marshal
    import sqlite3

    from relaymq.pipeline.arrowio import to_batch
    from relaymq.pipeline.fetch import LocalAccess
    from relaymq.pipeline.log import MessageLog, log_path
    from relaymq.pipeline.record import LogRecord
    from relaymq.store import log_batch

    def records(first: int) -> list[LogRecord]:
        return [LogRecord(topic=None if i % 4 == 0 else f"t/{i}", queue="Q" if i % 4 == 0 else None, partition="p-0",
                          usr={"i": str(i)} if i % 2 else {}, priority=i % 10, body=bytes([i]) * i)
                for i in range(first, first + 6)]

    log = MessageLog(str(tmp_path))
    log.append(records(0), now=1_000.0)
    log.append(records(6), now=2_000.0)
    db = sqlite3.connect(log_path(str(tmp_path)))
    for first_seq, data in db.execute("SELECT first_seq, data FROM log_batches").fetchall():  # as written before
        db.execute("UPDATE log_batches SET data = ? WHERE first_seq = ?",
                   (log_batch.FORMAT_ROWS + marshal.dumps(log_batch.decode(data), 4), first_seq))
    db.commit()
    assert {row[0][:1] for row in db.execute("SELECT data FROM log_batches")} == {log_batch.FORMAT_ROWS}
    log.append(records(12), now=3_000.0)  # kept as columns
    assert db.execute("SELECT data FROM log_batches WHERE first_seq = 12").fetchone()[0][:1] == log_batch.FORMAT
    everything = log.read("p-0", 0)
    assert [(r.seq, r.topic, r.queue, r.usr, r.priority, r.body) for r in everything] == [
        (seq, r.topic, r.queue, r.usr, r.priority, r.body) for seq, r in enumerate(records(0) + records(6) + records(12))]
    access = LocalAccess(str(tmp_path))
    try:
        (got,) = access.read_batches("p-0", 3, 16)
        assert got.equals(to_batch(everything[3:16]))
        (narrow,) = access.read_batches("p-0", 3, 16, ("body", "seq", "timestamp"))
        assert narrow.equals(got.select(["body", "seq", "timestamp"]))
    finally:
        access.close()
    stamps = log.timestamps("p-0", 4, 14)
    assert stamps[0] < 1_001 and 2_000 <= stamps[5] < 2_001 and stamps[-1] >= 3_000
    assert log.apply_retention("p-0", max_age=1_500, now=3_100.0) == 6  # found inside an old batch
    assert [r.seq for r in log.read("p-0", 6, 8)] == [6, 7]
    log.close()
    db.close()


def test_stored_batches_read_as_the_columns_asked_for(tmp_path) -> None:
    """issue 16 (a job that needs six columns does not pay for 26): a read of some columns, in
    any order, is the full read's columns; names and types outside the log's are refused with
    a line naming the column."""
    import pyarrow as pa

    from relaymq.pipeline.arrowio import COLUMNS, columns_of
    from relaymq.pipeline.fetch import LocalAccess
    from relaymq.pipeline.log import MessageLog
    from relaymq.pipeline.record import LogRecord

    log = MessageLog(str(tmp_path))
    for commit in range(3):
        log.append([LogRecord(topic=f"t/{i}", partition="p-0", qos=i % 3, usr={"n": str(i)}, body=b"b" * i)
                    for i in range(commit * 7, commit * 7 + 7)])
    access = LocalAccess(str(tmp_path))
    try:
        full = pa.Table.from_batches(access.read_batches("p-0", 2, 19))
        for columns in (("body", "seq", "topic", "timestamp"), ("partition",), ("usr", "qos"), ("seq",)):
            got = pa.Table.from_batches(access.read_batches("p-0", 2, 19, columns))
            assert got.column_names == list(columns) and got.equals(full.select(list(columns)))
    finally:
        access.close()
        log.close()
    assert columns_of([("topic", "string", True), ("seq", "bigint", True)]) == ("topic", "seq")
    everything = [(name, kind, True) for name, kind in _spark_types()]
    assert [name for name, _, _ in everything] == list(COLUMNS) and columns_of(everything) is None
    for fields, message in (([("payload", "binary", True)], "no column 'payload'"),
                            ([("seq", "int", True)], "'seq' is BIGINT in the message log, not int"),
                            ([("topic", "string", False)], "'topic' cannot be NOT NULL"),
                            ([("topic", "string", True)] * 2, "each column once")):
        with pytest.raises(ValueError, match=message):
            columns_of(fields)


def _spark_types() -> list[tuple[str, str]]:
    from relaymq.pipeline.arrowio import SPARK_SCHEMA

    """(name, type as Spark's simpleString writes it) of the source's whole schema."""
    pairs = [part.strip("`").split("` ") for part in SPARK_SCHEMA.split(", `")]
    return [(name, kind.lower().replace(", ", ",")) for name, kind in pairs]
