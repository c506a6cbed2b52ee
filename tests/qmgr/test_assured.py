"""Assured delivery primitives (everyplace.md items 18-20 and the decision on confirms):
two-phase put keyed by UID, Resend, duplicate removal, the confirm window, and the messages
held for transmission."""

from __future__ import annotations

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.errors import DuplicateMessage, NotAllowed, UnknownUID

from .helpers import body, text_message


def test_repeated_put_of_same_uid_is_duplicate(qm: QueueManager) -> None:
    """everyplace.md item 19: a put of an already-put UID without Resend is rejected (l.5876)."""
    qm.define_queue("Q")
    qm.put("Q", text_message("a"), uid="QM0:1:1", confirm_id=1)
    with pytest.raises(DuplicateMessage) as err:
        qm.put("Q", text_message("a"), uid="QM0:1:1", confirm_id=1)
    assert err.value.reason == 3302
    assert qm.depth("Q") == 1


def test_resend_replaces_unconfirmed_copy(qm: QueueManager) -> None:
    """everyplace.md item 19: retry with Resend deletes any earlier unconfirmed copy."""
    qm.define_queue("Q")
    qm.put("Q", text_message("first try"), uid="QM0:1:1", confirm_id=1)
    qm.put("Q", text_message("resent"), uid="QM0:1:1", confirm_id=1, resend=True)
    assert qm.depth("Q") == 1
    assert qm.confirm_put("QM0:1:1") is True
    assert [body(m) for m in qm.browse("Q")] == ["resent"]


def test_put_after_confirm_is_duplicate_within_window(qm: QueueManager, clock) -> None:
    """Decision: confirms remembered for a configurable window; a resend after the confirm was
    lost is recognised (not stored twice) and a repeated confirm reports already-confirmed."""
    qm.define_queue("Q")
    qm.put("Q", text_message("once"), uid="QM0:1:1", confirm_id=1)
    assert qm.confirm_put("QM0:1:1") is True
    with pytest.raises(DuplicateMessage, match="already put and confirmed"):
        qm.put("Q", text_message("once"), uid="QM0:1:1", confirm_id=1, resend=True)
    assert qm.confirm_put("QM0:1:1") is False
    assert qm.depth("Q") == 1


def test_confirm_window_expires(clock) -> None:
    """Decision: after the window the UID is forgotten, and its confirm is an error again."""
    with QueueManager.open("QM1", None, clock=clock, confirm_window=60) as qm:
        qm.define_queue("Q")
        qm.put("Q", text_message("a"), uid="U:1", confirm_id=1)
        qm.confirm_put("U:1")
        clock.advance(61)
        qm.put("Q", text_message("b"), uid="U:2", confirm_id=1)
        qm.confirm_put("U:2")  # a later confirm sweeps the old ones
        assert not qm.is_confirmed("U:1") and qm.is_confirmed("U:2")
        with pytest.raises(UnknownUID):
            qm.confirm_put("U:1")


def test_confirm_memory_survives_restart(tmp_path, clock) -> None:
    """Decision + README decision 4: the confirm record is durable, so a sender's resend after
    the target restarted is still recognised as a duplicate."""
    with QueueManager.open("QM1", str(tmp_path), clock=clock, synchronous="NORMAL") as qm:
        qm.define_queue("Q")
        qm.put("Q", text_message("a"), uid="U:1", confirm_id=1)
        qm.confirm_put("U:1")
    with QueueManager.open("QM1", str(tmp_path), clock=clock, synchronous="NORMAL") as qm:
        assert qm.confirm_put("U:1") is False
        with pytest.raises(DuplicateMessage):
            qm.put("Q", text_message("a"), uid="U:1", confirm_id=1, resend=True)


def test_async_remote_holds_for_transmission_until_transmitted(qm: QueueManager) -> None:
    """everyplace.md items 8 and 18: an async remote queue stores locally; only confirmed
    messages are offered for transmission; removed once the remote confirmed."""
    qm.define_queue("TARGET", "remote", queue_manager="QM2", mode="async")
    heard: list[str] = []
    qm.add_transmission_listener(lambda target, fields, forced: heard.append(target))
    qm.put("TARGET", text_message("low", 1), qmgr="QM2")
    qm.put("TARGET", text_message("high", 8), qmgr="QM2")
    qm.put("TARGET", text_message("unconfirmed"), qmgr="QM2", confirm_id=4, uid="QM1:x:1")
    pending = qm.pending_transmission("QM2")
    assert [(q, body(m)) for _, q, m in pending] == [("TARGET", "high"), ("TARGET", "low")]
    assert heard == ["QM2", "QM2"]
    assert qm.pending_transmission("QM3") == []
    assert qm.transmission_targets() == ["QM2"]
    qm.transmitted(pending[0][0])
    assert [body(m) for _, _, m in qm.pending_transmission("QM2")] == ["low"]
    with pytest.raises(UnknownUID):
        qm.transmitted(pending[0][0])


def test_transmitted_refuses_local_messages(qm: QueueManager) -> None:
    """everyplace.md item 18: only messages waiting for transmission are removed by a remote
    confirm; a message on a local queue is never lost that way."""
    qm.define_queue("Q")
    qm.put("Q", text_message("a"))
    uid = qm.browse_envelopes("Q")[0].uid
    with pytest.raises(NotAllowed):
        qm.transmitted(uid)
    assert qm.depth("Q") == 1


def test_two_hop_transfer_exactly_once() -> None:
    """everyplace.md items 18-19 end to end through the primitives the channel uses: the
    sender offers, the target puts two-phase with the sender's UID, the first confirm is
    'lost' and the whole exchange repeated with Resend: exactly one copy arrives."""
    with QueueManager.open("QMA", None) as a, QueueManager.open("QMB", None) as b:
        a.define_queue("IN", "remote", queue_manager="QMB", mode="async")
        b.define_queue("IN")
        for i in range(5):
            a.put("IN", text_message(f"m{i}", i % 3), qmgr="QMB")
        for attempt in range(2):
            for uid, queue, message in a.pending_transmission("QMB"):
                try:
                    b.put(queue, message, uid=uid, confirm_id=1, resend=attempt > 0)
                except DuplicateMessage:
                    pass
                b.confirm_put(uid)
                if attempt == 1:
                    a.transmitted(uid)
        assert a.pending_transmission("QMB") == []
        assert sorted(body(m) for m in b.browse("IN")) == [f"m{i}" for i in range(5)]
