"""Message expiry (everyplace.md item 5; seed 004 l.302-374): queue interval, per-message
override, the int32 relative / int64 absolute rule, checks on access; the clock is injected."""

from __future__ import annotations

import pytest

from relaymq.qmgr import ExpireTime, QueueManager, QueueRule, expire_time_from_field

from .helpers import body, linked_queue_managers, text_message


def test_int32_is_relative_and_int64_absolute() -> None:
    """everyplace.md item 5: int32 ExpireTime relative ms from creation, int64 absolute epoch ms."""
    rel = expire_time_from_field(60_000, "int32")
    absolute = expire_time_from_field(989_933_100_000, "int64")
    assert rel.deadline(1_000) == 61_000
    assert absolute.deadline(1_000) == 989_933_100_000
    with pytest.raises(ValueError):
        expire_time_from_field(2**31, "int32")
    with pytest.raises(ValueError):
        expire_time_from_field(5, "float")


def test_queue_expiry_removes_on_get_and_depth(qm: QueueManager, clock) -> None:
    """everyplace.md item 5: queue-level interval; checked on remove and on size inquiry."""
    qm.define_queue("Q", expiry=1000)
    qm.put("Q", text_message("a"))
    clock.advance(0.5)
    qm.put("Q", text_message("b"))
    clock.advance(0.6)
    assert qm.depth("Q") == 1
    assert body(qm.get("Q")) == "b"


def test_message_expiry_overrides_queue(qm: QueueManager, clock) -> None:
    """everyplace.md item 5: the message's ExpireTime overrides the queue's interval."""
    qm.define_queue("Q", expiry=1000)
    qm.put("Q", text_message("long"), expire_time=ExpireTime(10_000))
    qm.put("Q", text_message("short"))
    clock.advance(2)
    assert [body(m) for m in qm.browse("Q")] == ["long"]


def test_mqmd_expiry_tenths_of_second(qm: QueueManager, clock) -> None:
    """MQMD.Expiry (tenths of a second) is honoured as MQ would (formats-and-jms.md item 1)."""
    qm.define_queue("Q")
    m = text_message("x")
    m.mq.md.Expiry = 10  # one second
    qm.put("Q", m)
    clock.advance(0.9)
    assert qm.depth("Q") == 1
    clock.advance(0.2)
    assert qm.get("Q") is None


def test_expiry_rule_is_called_and_cannot_prevent(clock) -> None:
    """everyplace.md item 5 / 32: the expiry rule is called, its return and exceptions ignored."""
    seen: list[str] = []

    class Keep(QueueRule):
        def message_expired(self, definition, envelope):
            seen.append(body(envelope.message))
            raise RuntimeError("please keep it")

    import sys
    import types

    module = types.ModuleType("qmgr_test_expiry_rule")
    module.Keep = Keep  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    with QueueManager.open("QM1", None, clock=clock) as qm:
        qm.define_queue("Q", expiry=100, rule="qmgr_test_expiry_rule:Keep")
        qm.put("Q", text_message("gone"))
        clock.advance(1)
        assert qm.get("Q") is None
    assert seen == ["gone"]


def test_expired_removed_when_queue_activated(tmp_path, clock) -> None:
    """everyplace.md item 5: checked when the queue is activated (reopen)."""
    qm = QueueManager.open("QM1", str(tmp_path), clock=clock, synchronous="NORMAL")
    qm.define_queue("Q", expiry=1000)
    qm.put("Q", text_message("a"))
    qm.close()
    clock.advance(5)
    with QueueManager.open("QM1", str(tmp_path), clock=clock, synchronous="NORMAL") as again:
        assert again.browse("Q") == [] and again.depth("Q") == 0


def test_expiry_counts_down_across_hops(clock) -> None:
    """MQMD.Expiry (formats-and-jms.md item 1) counts down while a message waits for
    transmission, so the next queue manager expires it at the same moment."""
    with QueueManager.open("QMA", None, clock=clock) as qm:
        qm.define_queue("OUT", "remote", queue_manager="QMB", mode="async")
        m = text_message("x")
        m.mq.md.Expiry = 100  # ten seconds
        qm.put("OUT", m, qmgr="QMB")
        clock.advance(4)
        ((_, _, sent),) = qm.pending_transmission("QMB")
        assert sent.mq.md.Expiry == 60


def test_own_expire_time_travels_with_the_message_over_a_channel() -> None:
    """everyplace.md item 5 (seed l.302-358: expiry is checked when a message is pushed to
    a queue): a message's own ExpireTime (an int32, relative to its creation) becomes an
    absolute deadline that the PUT frame carries, so the receiving queue manager expires it
    at the same moment instead of keeping it for ever. TGT's clock is moved on instead of
    sleeping."""
    import asyncio
    import time

    skew = [0.0]
    deadlines: list[int | None] = []

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        dev.put("IN", text_message("short-lived"), qmgr="TGT", expire_time=expire_time_from_field(60_000, "int32"))
        deadlines.append(dev.pending_messages("TGT")[0].expire_at)

    async def scenario() -> None:
        async with linked_queue_managers(prepare, server_options={"clock": lambda: time.time() + skew[0]}) as pair:
            tgt, (deadline,) = pair.server, deadlines
            assert deadline is not None
            for _ in range(1000):
                if tgt.browse("IN"):
                    break
                await asyncio.sleep(0.02)
            (envelope,) = tgt.browse_envelopes("IN")
            assert tgt._by_uid[envelope.uid].expire_at == deadline
            skew[0] = deadline / 1000 - time.time() - 1.0  # a second before the deadline
            assert [body(m) for m in tgt.browse("IN")] == ["short-lived"]
            skew[0] += 1.1  # just after it
            assert tgt.browse("IN") == [] and tgt.depth("IN") == 0

    asyncio.run(scenario())


def test_depth_expires_only_what_has_expired_in_arrival_order(clock) -> None:
    """everyplace.md item 5 (seed 004 l.370: expired messages are removed on a size inquiry):
    the expired ones are found by deadline, not by walking the queue, and the queue rule hears
    of them in arrival order, each once, whatever order their deadlines are in; messages
    without an expiry stay."""
    seen: list[str] = []

    class Note(QueueRule):
        def message_expired(self, definition, envelope):
            seen.append(body(envelope.message))

    import sys
    import types

    module = types.ModuleType("qmgr_test_expiry_order_rule")
    module.Note = Note  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    with QueueManager.open("QM1", None, clock=clock) as qm:
        qm.define_queue("Q", rule="qmgr_test_expiry_order_rule:Note")
        for n in range(300):
            expiry = None if n % 3 == 0 else ExpireTime(10 * (300 - n))  # later puts expire sooner
            qm.put("Q", text_message(str(n)), expire_time=expiry)
        clock.advance(1.5)  # deadlines of 1,500 ms and less: n >= 150
        expected = [str(n) for n in range(150, 300) if n % 3]
        assert qm.depth("Q") == 300 - len(expected)
        assert seen == expected
        assert qm.depth("Q") == 300 - len(expected) and seen == expected  # nothing twice
        clock.advance(10)
        assert qm.depth("Q") == 100
        assert [body(m) for m in qm.browse("Q")] == [str(n) for n in range(0, 300, 3)]


def test_messages_got_before_they_expire_leave_no_deadline_behind(qm: QueueManager, clock) -> None:
    """The deadlines of messages got long before they expire do not pile up: a queue that
    passes 5,000 messages with an hour to live keeps a bounded record of deadlines."""
    qm.define_queue("Q", expiry=3_600_000)
    for n in range(5000):
        qm.put("Q", text_message(str(n)))
        if n % 10 == 9:
            for _ in range(10):
                assert qm.get("Q") is not None
    index = qm._index("Q", None)
    assert len(index) == 0
    assert len(index._deadlines) <= 2 * 10 + 64 + 1
    qm.put("Q", text_message("last"))
    clock.advance(3601)
    assert qm.depth("Q") == 0
