"""The sink's delivery and ledger without Spark: real broker, real files (issue 7 item 3:
"exactly once across restarts (idempotent per batch id, tied to the checkpoint)")."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pipeline_helpers import Subscriber  # noqa: E402
from relaymq.pipeline.ledger import Ledger  # noqa: E402
from relaymq.pipeline.sink import SINK_ID_PROPERTY, OutMessage, StagedRows, deliver_batch, stage  # noqa: E402



def test_ledger_records_batches_atomically(tmp_path) -> None:
    """ledger: a batch id is either recorded completely or not at all; old ids are trimmed."""
    ledger = Ledger(str(tmp_path / "l"), keep=3)
    assert not ledger.delivered(0)
    for batch in range(6):
        ledger.record(batch, batch * 2)
    assert ledger.delivered(5) and ledger.batches() == [3, 4, 5]
    assert not any(path.name.endswith(".tmp") for path in (tmp_path / "l").iterdir())


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
