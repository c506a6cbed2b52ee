"""The archive service in a running broker: publications tapped into the log, read back
through the HTTP fetch endpoint (Arrow IPC) and directly from the SQLite file; queue puts
archived through the queue manager's put listener (issue 7 item 1)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from pipeline_helpers import WAIT, publish_all, wait_for_entries
from relaymq.pipeline.arrowio import records_from_batches
from relaymq.pipeline.fetch import HttpAccess, LocalAccess, open_access
from relaymq.pipeline.log import LogError, RetentionError



def test_publications_are_archived_in_order_and_fetched_over_http(archive_broker_factory) -> None:
    """issue 7: archive rules choose topics; per-partition order and seq; HTTP fetch as Arrow IPC
    equals the direct SQLite read (entries and their timestamps); topics outside the rules are
    not archived."""
    broker = archive_broker_factory([{"name": "tel", "topics": ["LCUnit/#"], "partitions": 2}])
    sent = [(f"LCUnit/{i % 3}/Heartbeat", f"m{i}".encode(), [("n", str(i))]) for i in range(30)]
    publish_all(broker.port, sent + [("other/topic", b"skip", [])])
    http = HttpAccess(broker.http_url)
    parts = wait_for_entries(http, 30)
    assert set(parts) <= {"tel-0", "tel-1"}
    remote = {n: records_from_batches(http.read_batches(n, 0, p.next_seq)) for n, p in parts.items()}
    local = open_access(str(broker.data_dir))
    assert isinstance(local, LocalAccess)
    direct = {n: records_from_batches(local.read_batches(n, 0, p.next_seq)) for n, p in parts.items()}
    assert remote == direct
    for name, info in parts.items():  # admission control's timestamps, over HTTP and directly
        stamps = [round(t * 1e6) for t in http.timestamps(name, 0, info.next_seq)]
        assert stamps == [round(t * 1e6) for t in local.timestamps(name, 0, info.next_seq)]
        assert stamps == [round(r.timestamp * 1e6) for r in remote[name]]
    got = [r for records in remote.values() for r in records]
    assert sorted(r.body for r in got) == sorted(m[1] for m in sent)
    for records in remote.values():
        assert [r.seq for r in records] == list(range(len(records)))
        for topic in {r.topic for r in records}:  # per topic, publication order is kept
            numbers = [int(r.usr["n"]) for r in records if r.topic == topic]
            assert numbers == sorted(numbers)


def test_fetch_errors_are_http_statuses(archive_broker_factory) -> None:
    """issue 7 fetch endpoint: unknown partition -> 404 LogError, removed offsets -> RetentionError."""
    broker = archive_broker_factory([{"name": "r", "topics": ["t/#"], "retention_entries": 2}],
                                    retention_check_seconds=1)
    publish_all(broker.port, [("t/1", b"x", [])] * 6)
    http = HttpAccess(broker.http_url)
    wait_for_entries(http, 1)
    with pytest.raises(LogError, match="HTTP 404"):
        http.read_batches("nope-0", 0, 1)
    deadline = time.monotonic() + WAIT
    while http.partitions()["r-0"].first_seq == 0 and time.monotonic() < deadline:
        publish_all(broker.port, [("t/1", b"y", [])])  # retention runs after a commit
        time.sleep(0.2)
    with pytest.raises(RetentionError, match="partition r-0: offset 0"):
        http.read_batches("r-0", 0, 1)


def test_queue_puts_are_archived(tmp_path) -> None:
    """issue 7 "choose topics (filters) and queues": a put to an archived queue is appended with
    its MQMD fields and usr folder (qmgr put listener beside item 16's listeners of everyplace.md)."""
    from relaymq.message.headers import MQMessage
    from relaymq.message.message import Message
    from relaymq.message.mqmd import MQMD
    from relaymq.message.mqrfh2 import MQRFH2
    from relaymq.pipeline.archive_service import ArchiveService
    from relaymq.pipeline.settings import build
    from relaymq.qmgr import QueueManager

    qm = QueueManager.open("QMA", None)
    qm.define_queue("ORDERS")
    service = ArchiveService(build({"rule": [{"name": "q", "queues": ["ORDERS"]}]}, "archive", None), str(tmp_path))
    service.attach(SimpleNamespace(publication_taps=[]), {"qmgr": qm})
    rfh2 = MQRFH2(CodedCharSetId=1208)
    rfh2.ensure_folder("usr").add("colour", "red")
    msg_id = qm.put("ORDERS", Message(MQMessage(md=MQMD(Format="MQHRF2", Priority=3), headers=[rfh2], body=b"o1")))
    service.log.flush()
    (record,) = service.log.read("q-0", 0)
    assert (record.queue, record.body, record.usr, record.priority) == ("ORDERS", b"o1", {"colour": "red"}, 3)
    assert record.msg_id == msg_id
    assert qm.depth("ORDERS") == 1  # archiving copies, it does not consume
    import asyncio

    asyncio.run(service.stop())
    qm.close()


def test_a_message_taken_at_once_is_still_archived(tmp_path) -> None:
    """issue 7 "queues whose messages are appended": a getter waiting on the queue takes each
    message the moment it is put (everyplace.md item 17 waitForMessage), before any listener
    of the archive could look at the queue - a queue listener ahead of the archive holds the
    putting thread until the getter has the message. Every message is archived all the same,
    in put order: the put listener hands over the stored bytes, it does not browse."""
    import threading

    from relaymq.message.headers import MQMessage
    from relaymq.message.message import Message
    from relaymq.pipeline.archive_service import ArchiveService
    from relaymq.pipeline.settings import build
    from relaymq.qmgr import QueueManager

    qm = QueueManager.open("QMA", None)
    qm.define_queue("ORDERS")
    taken: list[bytes] = []
    took = threading.Semaphore(0)

    def consumer() -> None:
        while len(taken) < 20:
            message = qm.get("ORDERS", wait=WAIT)
            assert message is not None
            taken.append(message.mq.body)
            took.release()

    qm.add_listener("ORDERS", lambda queue: took.acquire(timeout=WAIT))  # called before the archive's
    service = ArchiveService(build({"rule": [{"name": "q", "queues": ["ORDERS"]}]}, "archive", None), str(tmp_path))
    service.attach(SimpleNamespace(publication_taps=[]), {"qmgr": qm})
    getter = threading.Thread(target=consumer, daemon=True)
    getter.start()
    sent = [f"order-{i}".encode() for i in range(20)]
    for body in sent:
        qm.put("ORDERS", Message(MQMessage(body=body)))
    getter.join(WAIT)
    assert taken == sent and qm.depth("ORDERS") == 0
    service.log.flush()
    assert [r.body for r in service.log.read("q-0", 0)] == sent
    import asyncio

    asyncio.run(service.stop())
    qm.close()


def test_queue_consumed_over_rest_is_archived(archive_broker_factory) -> None:
    """The same through a broker process and real REST clients (docs/rest.md): a consumer
    waits with DELETE ?wait= and takes each message as it arrives; the producer puts 50 with
    POST; the archive has all 50, fetched over HTTP."""
    import json
    import threading
    import urllib.request

    rules = [{"name": "orders", "queues": ["ORDERS"]}]
    broker = archive_broker_factory(rules)
    define = urllib.request.Request(f"{broker.http_url}/ibmmq/rest/v3/admin/qmgr/QM1/queue", method="POST",
                                    data=json.dumps({"name": "ORDERS"}).encode(),
                                    headers={"Content-Type": "application/json", **dict(broker.admin_headers())})
    with urllib.request.urlopen(define, timeout=WAIT) as response:
        assert response.status == 201
    broker.stop()  # the archive takes its queues at start-up: start again with ORDERS defined
    broker.start()
    url = f"{broker.http_url}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/ORDERS/message"
    taken: list[bytes] = []

    def consumer() -> None:
        while len(taken) < 50:
            request = urllib.request.Request(url + "?wait=20000", method="DELETE")
            with urllib.request.urlopen(request, timeout=WAIT + 10) as response:
                if response.status == 200:
                    taken.append(response.read())

    getter = threading.Thread(target=consumer, daemon=True)
    getter.start()
    sent = [f"order-{i}".encode() for i in range(50)]
    for body in sent:
        put = urllib.request.Request(url, method="POST", data=body, headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(put, timeout=WAIT) as response:
            assert response.status == 201
    getter.join(WAIT * 2)
    assert sorted(taken) == sorted(sent)
    http = HttpAccess(broker.http_url)
    parts = wait_for_entries(http, 50)
    records = records_from_batches(http.read_batches("orders-0", 0, parts["orders-0"].next_seq))
    assert [r.body for r in records] == sent and {r.queue for r in records} == {"ORDERS"}


def test_fetch_endpoint_behind_basic_authentication(archive_broker_factory, tmp_path) -> None:
    """audit item 9: with a password file the fetch endpoint needs HTTP basic authentication;
    HttpAccess takes username/password (or user:password@ in the URL) and says what is missing."""
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    passwords.set("spark", "s3cret", cost=4)
    passwords.set("eve", "eve-pw", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    # issue 15: the archive is an entrance of the authorisation model; spark may read rule a's
    # partitions, eve (authenticated, no grant) none
    (tmp_path / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "archive", "profile": "a-*", "principal": "spark", "authorities": ["read"]}]}))
    broker = archive_broker_factory([{"name": "a", "topics": ["t/#"]}], config={
        "access": {"allow_anonymous": False, "password_file": str(tmp_path / "passwords"),
                   "authorities_file": str(tmp_path / "authorities.json")}})
    with pytest.raises(LogError, match="needs HTTP basic authentication: give username/password"):
        HttpAccess(broker.http_url).partitions()
    with pytest.raises(LogError, match="the user given was refused"):
        HttpAccess(broker.http_url, username="spark", password="wrong").partitions()
    client = HttpAccess(broker.http_url, username="spark", password="s3cret")
    assert client.partitions() == {}
    in_url = open_access(broker.http_url.replace("http://", "http://spark:s3cret@"))
    assert isinstance(in_url, HttpAccess) and in_url.base_url == broker.http_url
    assert in_url.partitions() == {}
    publish_all(broker.port, [("t/1", b"private", [])], ("spark", "s3cret"))
    parts = wait_for_entries(client, 1)
    assert [r.body for r in records_from_batches(client.read_batches("a-0", 0, parts["a-0"].next_seq))] == [b"private"]
    eve = HttpAccess(broker.http_url, username="eve", password="eve-pw")
    assert eve.partitions() == {}  # she does not see what she may not read
    with pytest.raises(LogError, match="403"):
        eve.read_batches("a-0", 0, 1)
    with pytest.raises(LogError, match="403"):
        eve.timestamps("a-0", 0, 1)


def test_a_log_of_an_earlier_version_is_imported_at_start_up(tmp_path) -> None:
    """Issue 14 (one engine): a broker upgraded from a version that kept its log in
    ``<data_dir>/log/archive.sqlite3`` finds those entries in relaymq.db after start-up, once
    (the old file renamed .imported), and appends after them in the same partition."""
    from pipeline_helpers import ArchiveBroker, archive_toml, write_row_per_entry_log
    from relaymq.pipeline.log_entries import from_publication
    from relaymq.store.engine import LEGACY_LOG_ID

    broker = ArchiveBroker(archive_toml([{"name": "tel", "topics": ["LCUnit/#"]}]), workdir=tmp_path / "b")
    old_dir = broker.data_dir / "log"
    records = []
    for i in range(5):
        record = from_publication("LCUnit/old", f"old{i}".encode(), 1, {"user_property": [("i", str(i))]}, None)
        record.partition = "tel-0"
        record.timestamp = 1_700_000_000 + i
        records.append(record)
    # the broker's log as earlier versions kept it: a file of its own, one row per entry
    write_row_per_entry_log(old_dir / "archive.sqlite3", records, LEGACY_LOG_ID)
    try:
        broker.start()
        assert not (old_dir / "archive.sqlite3").exists() and (old_dir / "archive.sqlite3.imported").exists()
        assert "imported 1 partition(s) and 5 entries" in broker.log_tail(60)
        publish_all(broker.port, [("LCUnit/new", b"new0", [])])
        http = HttpAccess(broker.http_url)
        parts = wait_for_entries(http, 6)
        got = records_from_batches(http.read_batches("tel-0", 0, parts["tel-0"].next_seq))
        assert [(r.seq, r.body) for r in got] == [(i, f"old{i}".encode()) for i in range(5)] + [(5, b"new0")]
        assert [(r.usr, r.timestamp) for r in got[:5]] == [({"i": str(i)}, 1_700_000_000 + i) for i in range(5)]
        assert got[5].timestamp > got[4].timestamp
        broker.stop()
        broker.start()  # nothing imported twice
        assert http.partitions()["tel-0"].next_seq == 6
    finally:
        broker.stop()
