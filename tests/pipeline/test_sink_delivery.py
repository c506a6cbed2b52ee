"""The sink's delivery and ledger without Spark: real broker, real files, a real queue manager
(issue 7 "exactly once across restarts (idempotent per batch id, tied to the checkpoint)";
audit items 3 and 9: the ledger's default place and query binding, queue puts with UIDs,
credentials and TLS for the MQTT publisher, a clear error for a queue manager in use)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")

from pipeline_helpers import Subscriber  # noqa: E402
from relaymq.auth.passwords import PasswordFile  # noqa: E402
from relaymq.pipeline.ledger import Ledger, LedgerError  # noqa: E402
from relaymq.pipeline.sink import (SINK_ID_PROPERTY, OutMessage, QueuePutter, StagedRows,  # noqa: E402
                                   deliver_batch, stage)


def test_ledger_records_batches_atomically(tmp_path) -> None:
    """ledger: a batch id is either recorded completely or not at all; old ids are trimmed."""
    ledger = Ledger(str(tmp_path / "l"), keep=3)
    assert not ledger.delivered(0)
    for batch in range(6):
        ledger.record(batch, batch * 2)
    assert ledger.delivered(5) and ledger.batches() == [3, 4, 5]
    assert not any(path.name.endswith(".tmp") for path in (tmp_path / "l").iterdir())


def checkpoint(path, query: str):
    path.mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text(json.dumps({"id": query}) + "\n")
    return path


def test_ledger_defaults_to_the_checkpoint_and_refuses_another_query(archive_broker_factory, tmp_path) -> None:
    """audit item 3 "tied to the checkpoint": without option ledger the ledger is
    <checkpointLocation>/relaymq-ledger/<sinkId> (Spark passes checkpointLocation to the sink);
    it records the checkpoint's query id, and a new checkpoint (batch ids from 0 again) with the
    old ledger is refused instead of silently skipping the new query's batches."""
    broker = archive_broker_factory([{"topics": ["nothing/#"]}])
    sub = Subscriber(broker.port, "alerts/#")
    cp = checkpoint(tmp_path / "cp", "query-A")
    options = {"broker": f"127.0.0.1:{broker.port}", "checkpointLocation": f"file:{cp}", "sinkId": "s"}
    assert deliver_batch(options, [StagedRows([OutMessage("alerts/1", None, b"a")])], 0) == 1
    assert (cp / "relaymq-ledger" / "s" / "batch-0.json").exists()
    assert json.loads((cp / "relaymq-ledger" / "s" / "query.json").read_text())["query"] == "query-A"
    assert deliver_batch(options, [StagedRows([OutMessage("alerts/1", None, b"a")])], 0) == 0
    checkpoint(tmp_path / "cp", "query-B")  # the checkpoint was replaced, the ledger kept
    with pytest.raises(LedgerError, match="belongs to streaming query query-A, but the checkpoint is query query-B"):
        deliver_batch(options, [StagedRows([OutMessage("alerts/2", None, b"b")])], 0)
    assert len(sub.wait_for(1)) == 1
    sub.close()
    with pytest.raises(LedgerError, match="local or NFS-mounted"):
        deliver_batch({"broker": "x:1", "checkpointLocation": "hdfs://nn/cp"}, [], 0)
    with pytest.raises(ValueError, match="checkpointLocation"):
        deliver_batch({"broker": "x:1"}, [], 0)


def test_stage_takes_columns_and_defaults() -> None:
    """sink input columns: topic/queue, body (str or bytes), qos, usr; option defaults."""
    staged = stage(iter([{"topic": "a/1", "body": "hi", "usr": {"k": 1}}, {"body": b"\x00", "qos": 0}]),
                   {"topic": "default/t", "qos": "1"})
    assert staged.messages == [OutMessage("a/1", None, b"hi", 1, False, {"k": "1"}),
                               OutMessage("default/t", None, b"\x00", 0, False, {})]
    with pytest.raises(ValueError, match="neither a topic nor a queue"):
        stage(iter([{"body": b"x"}]), {})


def test_a_batch_id_is_delivered_once(archive_broker_factory, tmp_path) -> None:
    """issue 7 "exactly once across restarts": the same batch id committed twice (Spark re-running
    a batch it had not recorded) publishes once; each message carries its sink id."""
    broker = archive_broker_factory([{"topics": ["nothing/#"]}])
    sub = Subscriber(broker.port, "alerts/#")
    options = {"broker": f"127.0.0.1:{broker.port}", "ledger": str(tmp_path / "ledger"), "sinkId": "s1"}
    staged = [StagedRows([OutMessage("alerts/1", None, b"a"), OutMessage("alerts/2", None, b"b")])]
    assert deliver_batch(options, staged, 7) == 2
    assert deliver_batch(options, staged, 7) == 0  # restart: the ledger says delivered
    assert deliver_batch(options, [StagedRows([OutMessage("alerts/3", None, b"c")])], 8) == 1
    got = sub.wait_for(3)
    sub.close()
    assert sorted(m.topic for m in got) == ["alerts/1", "alerts/2", "alerts/3"]
    ids = sorted(dict(m.properties.UserProperty)[SINK_ID_PROPERTY] for m in got)
    assert ids == ["s1:7:0", "s1:7:1", "s1:8:0"]


def test_queue_puts_survive_a_crash_in_the_middle_of_a_batch(tmp_path) -> None:
    """audit item 3: queue puts carry UID <sinkId>:<batch>:<index>; a batch re-run after a crash
    that came after its first put (and after a consumer took that message) puts only the rest:
    the queue manager refuses the UID it already had (everyplace.md assured put: UID, confirm)."""
    from relaymq.qmgr import QueueManager

    data = str(tmp_path / "qm")
    qm = QueueManager.open("QMS", data)
    qm.define_queue("OUT.Q")
    qm.close()
    batch = [OutMessage(None, "OUT.Q", b"first"), OutMessage(None, "OUT.Q", b"second")]
    putter = QueuePutter("QMS", data)
    putter.deliver(batch[:1], ["q:3:0"])  # the job dies here, before the ledger records batch 3
    putter.close()
    qm = QueueManager.open("QMS", data)
    assert qm.get("OUT.Q").mq.body == b"first"  # a consumer takes it meanwhile
    qm.close()
    options = {"queueManager": "QMS", "dataDir": data, "ledger": str(tmp_path / "ledger"), "sinkId": "q"}
    assert deliver_batch(options, [StagedRows(batch)], 3) == 2  # Spark re-runs batch 3
    qm = QueueManager.open("QMS", data)
    bodies = []
    while (message := qm.get("OUT.Q")) is not None:
        bodies.append(message.mq.body)
    qm.close()
    assert bodies == [b"second"]


def test_a_queue_manager_that_cannot_be_opened_is_one_clear_error(tmp_path) -> None:
    """audit item 9: the sink opens the queue manager's store directly; when that fails (the store
    is locked by a running broker, or unusable) the error says what and what to do."""
    (tmp_path / "qmgr-QMS.db").write_text("not a database")
    with pytest.raises(ConnectionError, match=r"cannot open queue manager QMS in .*no broker runs"):
        deliver_batch({"queueManager": "QMS", "dataDir": str(tmp_path)},
                      [StagedRows([OutMessage(None, "Q", b"x")])], None)


def test_publisher_authenticates_with_a_password(archive_broker_factory, tmp_path) -> None:
    """audit item 9: options username/password for a broker with a password file (no anonymous
    clients); a wrong password is one clear error naming the broker's answer."""
    passwords = PasswordFile()
    passwords.set("spark", "s3cret", cost=4)
    passwords.save(str(tmp_path / "passwords"))
    broker = archive_broker_factory([{"topics": ["nothing/#"]}], config={
        "access": {"allow_anonymous": False, "password_file": str(tmp_path / "passwords")}})
    options = {"broker": f"127.0.0.1:{broker.port}", "username": "spark", "password": "s3cret"}
    message = [StagedRows([OutMessage("alerts/1", None, b"a")])]
    assert deliver_batch(options, message, None) == 1
    with pytest.raises(ConnectionError, match="refused the connection: .*(Bad user name or password|Not authorized)"):
        deliver_batch({**options, "password": "wrong"}, message, None)
    with pytest.raises(ConnectionError, match="refused the connection"):
        deliver_batch({"broker": options["broker"]}, message, None)


def test_publisher_speaks_tls(broker_factory, tmp_path) -> None:
    """audit item 9 "TLS for MQTT": mqtts://host:port with caFile verifies the broker's certificate."""
    from interop.certs import make_certificates

    certs = make_certificates(tmp_path / "certs")
    broker = broker_factory(store="memory", config={"listener": [{
        "name": "tls", "host": "127.0.0.1", "tls_cert": str(certs.server_cert), "tls_key": str(certs.server_key)}]})
    received = Subscriber(broker.port, "alerts/#", tls=certs.server_only())
    options = {"broker": f"mqtts://127.0.0.1:{broker.port}", "caFile": str(certs.ca)}
    assert deliver_batch(options, [StagedRows([OutMessage("alerts/tls", None, b"t")])], None) == 1
    assert [m.topic for m in received.wait_for(1)] == ["alerts/tls"]
    received.close()
    with pytest.raises(ConnectionError):  # without the CA the broker's certificate is not trusted
        deliver_batch({"broker": f"mqtts://127.0.0.1:{broker.port}"}, [StagedRows([OutMessage("a", None, b"")])], None)
