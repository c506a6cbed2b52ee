"""Message operations and states of a local queue (everyplace.md items 4, 10-17)."""

from __future__ import annotations

import threading

import pytest

from relaymq.message.headers import MQMessage, encode_message
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.qmgr import QueueManager
from relaymq.qmgr.errors import ConfirmIdRequired, NoMessage, WrongLock

from .helpers import body, text_message


def test_put_get_round_trip_sets_msgid_and_queue_priority(qm: QueueManager) -> None:
    """everyplace.md item 2 (default priority from the queue, 4 unless set); seed 004 l.204, 245."""
    qm.define_queue("Q", default_priority=6)
    msg_id = qm.put("Q", text_message("hello"))
    assert len(msg_id) == 24 and msg_id != bytes(24)
    got = qm.get("Q")
    assert body(got) == "hello"
    assert got.mq.md.MsgId == msg_id
    assert got.mq.md.Priority == 6
    assert qm.get("Q") is None


def test_priority_then_fifo(qm: QueueManager) -> None:
    """everyplace.md item 15: priority descending, then arrival; seed 004 l.2155-2193."""
    qm.define_queue("Q")
    for text, prio in [("a", 1), ("b", 9), ("c", 1), ("d", 5), ("e", 9)]:
        qm.put("Q", text_message(text, prio))
    assert [body(qm.get("Q")) for _ in range(5)] == ["b", "e", "d", "a", "c"]


def test_browse_is_not_destructive_and_honours_limit(qm: QueueManager) -> None:
    """everyplace.md item 10 (browse); item 15 order."""
    qm.define_queue("Q")
    for i in range(4):
        qm.put("Q", text_message(str(i)))
    assert [body(m) for m in qm.browse("Q", limit=2)] == ["0", "1"]
    assert qm.depth("Q") == 4


def test_filters_msgid_correlid_fields_and_selector(qm: QueueManager) -> None:
    """everyplace.md item 4 (filter = every field equal, first match); formats-and-jms.md
    selectors through relaymq.selector; seed 004 l.280-300."""
    qm.define_queue("Q")
    qm.put("Q", text_message("x", 3, correl_id=b"A"))
    second = qm.put("Q", text_message("y", 7, correl_id=b"B"))
    qm.put("Q", text_message("z", 5, correl_id=b"B"))
    assert body(qm.get("Q", correl_id=b"B")) == "y"
    assert qm.get("Q", msg_id=second) is None  # already taken
    assert [body(m) for m in qm.browse("Q", selector="JMSPriority < 4")] == ["x"]
    assert [body(m) for m in qm.browse("Q", fields={"MQMD.Priority": 5})] == ["z"]
    assert qm.browse("Q", fields={"MQMD.Priority": 5, "MQMD.Format": "NOPE"}) == []


def test_get_with_confirm_id_then_confirm_get(qm: QueueManager) -> None:
    """everyplace.md item 11 (get-unconfirmed is invisible) and item 20 (confirmGet deletes)."""
    qm.define_queue("Q")
    qm.put("Q", text_message("m"))
    env = qm.get_envelope("Q", confirm_id=7)
    assert body(env.message) == "m"
    assert qm.browse("Q") == [] and qm.depth("Q") == 1
    assert qm.confirm_get(env.uid) is True
    assert qm.depth("Q") == 0
    assert qm.confirm_get(env.uid) is False  # remembered: a repeated confirm is not an error


def test_undo_after_get_restores_in_order(qm: QueueManager) -> None:
    """everyplace.md item 17: undo after get restores the message (in its arrival place)."""
    qm.define_queue("Q")
    for text in "abc":
        qm.put("Q", text_message(text))
    env = qm.get_envelope("Q", confirm_id=3)
    assert qm.undo("Q", 3) == 1
    assert [body(m) for m in qm.browse("Q")] == ["a", "b", "c"]
    assert env.uid == qm.browse_envelopes("Q")[0].uid


def test_put_unconfirmed_invisible_until_confirm_and_undo_deletes(qm: QueueManager) -> None:
    """everyplace.md items 11, 12 (visible in confirm order), 17 (undo after put deletes)."""
    qm.define_queue("Q")
    qm.put("Q", text_message("first"), confirm_id=1, uid="R:1")
    qm.put("Q", text_message("second"), confirm_id=1, uid="R:2")
    qm.put("Q", text_message("third"), confirm_id=2, uid="R:3")
    assert qm.browse("Q") == []
    assert qm.confirm_put("R:2") is True
    assert qm.confirm_put("R:1") is True
    assert [body(m) for m in qm.browse("Q")] == ["second", "first"]
    assert qm.undo("Q", 2) == 1
    assert qm.depth("Q") == 2


def test_browse_and_lock_get_delete_unlock(qm: QueueManager) -> None:
    """everyplace.md item 13: locks current matches, needs a confirm id, only the locker
    unlocks, get/delete with UID + lock id work without unlocking; seed 004 l.2051-2290."""
    qm.define_queue("Q")
    for text in "abc":
        qm.put("Q", text_message(text))
    with pytest.raises(ConfirmIdRequired):
        qm.browse_and_lock("Q", confirm_id=0)
    locked = qm.browse_and_lock("Q", confirm_id=5, limit=2)
    assert [body(e.message) for e in locked] == ["a", "b"]
    lock = locked[0].lock_id
    assert lock > 0 and {e.lock_id for e in locked} == {lock}
    assert [body(m) for m in qm.browse("Q")] == ["c"]
    qm.put("Q", text_message("d"))  # arrives later: not locked
    assert [body(m) for m in qm.browse("Q")] == ["c", "d"]
    with pytest.raises(WrongLock):
        qm.unlock("Q", locked[0].uid, lock + 1)
    with pytest.raises(WrongLock):
        qm.delete("Q", locked[0].uid, lock_id=lock + 1)
    env = qm.get_envelope("Q", uid=locked[0].uid, lock_id=lock)
    assert body(env.message) == "a"
    qm.delete("Q", locked[1].uid, lock_id=lock)
    assert qm.depth("Q") == 2


def test_undo_after_browse_and_lock_unlocks(qm: QueueManager) -> None:
    """everyplace.md item 17: undo after browseAndLock unlocks."""
    qm.define_queue("Q")
    qm.put("Q", text_message("a"))
    qm.browse_and_lock("Q", confirm_id=9)
    assert qm.browse("Q") == []
    qm.undo("Q", 9)
    assert [body(m) for m in qm.browse("Q")] == ["a"]


def test_unlock_by_locker(qm: QueueManager) -> None:
    """everyplace.md item 13: only the locker unlocks."""
    qm.define_queue("Q")
    qm.put("Q", text_message("a"))
    (env,) = qm.browse_and_lock("Q", confirm_id=1)
    qm.unlock("Q", env.uid, env.lock_id)
    assert body(qm.get("Q")) == "a"


def test_delete_exactly_one_by_uid(qm: QueueManager) -> None:
    """everyplace.md item 14: delete needs the UID and deletes exactly one message."""
    qm.define_queue("Q")
    qm.put("Q", text_message("a"))
    qm.put("Q", text_message("a"))
    uids = [e.uid for e in qm.browse_envelopes("Q")]
    qm.delete("Q", uids[1])
    assert [e.uid for e in qm.browse_envelopes("Q")] == [uids[0]]
    with pytest.raises(NoMessage):
        qm.delete("Q", uids[1])


def test_listeners_get_queue_name_and_message_events(qm: QueueManager) -> None:
    """everyplace.md item 16: listeners get queue name, UID, MsgID, CorrelID, priority."""
    qm.define_queue("Q")
    names: list[str] = []
    events = []
    qm.add_listener("Q", names.append)
    qm.add_message_listener("Q", events.append)
    msg_id = qm.put("Q", text_message("a", 8, correl_id=b"C"))
    assert names == ["Q"]
    assert events[0].msg_id == msg_id and events[0].priority == 8 and events[0].correl_id.startswith(b"C")
    assert events[0].uid == qm.browse_envelopes("Q")[0].uid
    qm.remove_listener("Q", names.append)
    qm.put("Q", text_message("b"))
    assert names == ["Q"]


def test_who_hears_of_puts_follows_listeners_as_they_come_and_go(qm: QueueManager) -> None:
    """everyplace.md item 16: a listener hears of every put made while it listens, and of none
    before or after, whether the put is ``put`` or ``put_all`` (a publication's copies); the
    queue manager keeps who hears per queue between puts (issue 14), so a listener that comes,
    goes or a queue whose definition changed must be seen at the next put."""
    qm.define_queue("Q")
    qm.define_queue("R")
    names: list[str] = []
    events = []
    qm.put("Q", text_message("nobody listens"))
    qm.put_all([("Q", text_message("nor here")), ("R", text_message("nor there"))])
    qm.add_listener("Q", names.append)
    qm.put_all([("Q", text_message("a")), ("R", text_message("b"))])
    assert names == ["Q"]
    qm.add_message_listener("R", events.append)
    qm.put_all([("Q", text_message("c")), ("R", text_message("d"))])
    assert names == ["Q", "Q"] and [e.queue for e in events] == ["R"]
    qm.alter_queue("Q", description="altered")  # a new definition: still heard of
    qm.put("Q", text_message("e"))
    assert names == ["Q", "Q", "Q"]
    qm.remove_listener("Q", names.append)
    qm.remove_message_listener("R", events.append)
    qm.put_all([("Q", text_message("f")), ("R", text_message("g"))])
    qm.put("R", text_message("h"))
    assert names == ["Q", "Q", "Q"] and len(events) == 1
    assert qm.depth("Q") == 6 and qm.depth("R") == 5


def test_unconfirmed_put_notifies_on_confirm_only(qm: QueueManager) -> None:
    """everyplace.md item 11/16: a put-unconfirmed message is invisible, so listeners hear of it
    at confirmPut."""
    qm.define_queue("Q")
    heard: list[str] = []
    qm.add_listener("Q", heard.append)
    qm.put("Q", text_message("a"), confirm_id=1, uid="X:1")
    assert heard == []
    qm.confirm_put("X:1")
    assert heard == ["Q"]


def test_put_listeners_get_the_stored_message_of_puts_only(qm: QueueManager) -> None:
    """everyplace.md item 16 (listeners) and item 11 (states): a put listener hears of a put
    once it is durable, with the stored bytes (the message is there even when a getter took
    it already); a two-phase put at confirmPut; a message made visible again (unlock, undo of
    a get) is not a new put."""
    qm.define_queue("Q")
    puts = []
    qm.add_put_listener("Q", puts.append)
    msg_id = qm.put("Q", text_message("a", 7))
    assert [(e.queue, e.msg_id, e.priority) for e in puts] == [("Q", msg_id, 7)]
    assert body(qm.get("Q")) == "a" and body(puts[0].message()) == "a"  # taken: still in the event
    qm.put("Q", text_message("b"), confirm_id=1, uid="X:1")
    assert len(puts) == 1
    qm.confirm_put("X:1")
    assert [body(e.message()) for e in puts] == ["a", "b"] and puts[1].uid == "X:1"
    (locked,) = qm.browse_and_lock("Q", confirm_id=3)
    qm.unlock("Q", locked.uid, locked.lock_id)
    qm.get("Q", confirm_id=2)
    qm.undo("Q", 2)
    assert len(puts) == 2
    qm.remove_put_listener("Q", puts.append)
    qm.put("Q", text_message("c"))
    assert len(puts) == 2


def test_get_wait_returns_message_put_by_another_thread(qm: QueueManager) -> None:
    """everyplace.md item 16: waitForMessage blocks until a message arrives (the putter is
    started only once the getter is waiting, so no timing assumption)."""
    qm.define_queue("Q")
    waiting = threading.Event()
    qm.add_listener("Q", lambda q: None)
    result: list[object] = []

    def getter() -> None:
        waiting.set()
        result.append(qm.wait_for_message("Q", wait=30.0))

    thread = threading.Thread(target=getter)
    thread.start()
    waiting.wait()
    qm.put("Q", text_message("late"))
    thread.join(30)
    assert not thread.is_alive()
    assert body(result[0].message) == "late"


def test_queue_alias_resolves_for_put_get(qm: QueueManager) -> None:
    """everyplace.md item 9: alias names resolve to the queue (late resolution before the put)."""
    qm.define_queue("REAL", aliases=["NICK"])
    qm.put("NICK", text_message("via alias"))
    assert body(qm.get("REAL")) == "via alias"
    qm.put("REAL", text_message("direct"))
    assert body(qm.get("NICK")) == "direct"


def test_system_queues_exist() -> None:
    """issue 5: SYSTEM.DEFAULT.LOCAL.QUEUE, a dead-letter queue, an admin queue and
    SYSTEM.BROKER.CONTROL.QUEUE exist on every queue manager."""
    with QueueManager.open("QM9", None) as qm:
        kinds = {d.name: d.kind for d in qm.definitions()}
    assert kinds == {"SYSTEM.DEFAULT.LOCAL.QUEUE": "local", "SYSTEM.DEAD.LETTER.QUEUE": "dead_letter",
                     "SYSTEM.ADMIN.QUEUE": "admin", "SYSTEM.BROKER.CONTROL.QUEUE": "local"}


def test_quiesce_lets_waiting_getter_finish_and_refuses_new_work() -> None:
    """everyplace.md item 28: stop with quiesce (a deadline) refuses new operations while a
    getter already waiting may still receive; immediate stop wakes it with None."""
    from relaymq.qmgr.errors import QueueManagerClosed

    qm = QueueManager.open("QM1", None)
    qm.define_queue("Q")
    waiting = threading.Event()
    result: list[object] = []

    def getter() -> None:
        waiting.set()
        result.append(qm.get("Q", wait=30.0))

    thread = threading.Thread(target=getter)
    thread.start()
    waiting.wait()
    closer = threading.Thread(target=qm.close, kwargs={"quiesce": 0.05})
    closer.start()
    closer.join(30)
    thread.join(30)
    assert result == [None] and not thread.is_alive()
    with pytest.raises(QueueManagerClosed) as err:
        qm.put("Q", text_message("late"))
    assert err.value.reason == 2162


def test_alter_queue_changes_properties_only(qm: QueueManager) -> None:
    """everyplace.md item 7: properties change at run time; name and type stay."""
    qm.define_queue("Q", max_depth=1, aliases=["OLD"])
    qm.put("Q", text_message("a"))
    altered = qm.alter_queue("Q", max_depth=5, aliases=["NEW"])
    assert (altered.max_depth, altered.aliases, altered.kind) == (5, ("NEW",), "local")
    qm.put("NEW", text_message("b"))
    assert qm.depth("Q") == 2
    from relaymq.qmgr.errors import UnknownQueue

    with pytest.raises(UnknownQueue):
        qm.put("OLD", text_message("c"))


def test_stored_message_is_a_copy(qm: QueueManager) -> None:
    """A put stores the message as it was at the put (MQ-format bytes, item 3): changing the
    caller's object afterwards, or the one a two-phase get returned, changes nothing stored."""
    qm.define_queue("Q")
    message = text_message("original")
    qm.put("Q", message)
    message.mq.body = b"changed by the caller"
    env = qm.get_envelope("Q", confirm_id=1)
    env.message.mq.body = b"changed by the getter"
    qm.undo("Q", 1)
    assert body(qm.get("Q")) == "original"


def test_a_stored_message_put_as_it_is_keeps_its_bytes_and_fields(qm: QueueManager) -> None:
    """A message made of stored bytes and not looked at (a publication's copy, issue 14) is put
    without being decoded: its bytes as they are, its MsgId, CorrelId, Priority and Expiry read
    where they are (a get by CorrelId finds it). Priority -1 and a MsgId of NONE still get the
    queue's default priority and a new MsgId (item 2), as for any other message."""
    qm.define_queue("Q", default_priority=6)
    md = MQMD(Format="MQSTR", Priority=2, MsgId=b"M" * 24, CorrelId=b"C" * 24, Expiry=600)
    data = encode_message(MQMessage(md=md, body=b"as stored"))
    assert qm.put("Q", Message.from_stored(data)) == b"M" * 24
    got = qm.get("Q", correl_id=b"C" * 24)
    assert got is not None and got.to_bytes() == data
    as_queue = encode_message(MQMessage(md=MQMD(Format="MQSTR", Priority=-1), body=b"fill me in"))
    msg_id = qm.put("Q", Message.from_stored(as_queue))
    filled = qm.get("Q")
    assert filled is not None and msg_id != bytes(24)
    assert (filled.mq.md.Priority, filled.mq.md.MsgId, filled.mq.body) == (6, msg_id, b"fill me in")
