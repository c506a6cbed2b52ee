"""The administration queue (everyplace.md item 8; seed 004 l.630-632: "messages put to the
administration queue are processed internally ... applications cannot get messages directly
... only one message is processed at a time ... in the sequence in which they arrive"), with
the admin message format of relaymq.qmgr.admin, answered on the ReplyToQ."""

from __future__ import annotations

import json
import time

import pytest

from relaymq.message import Message
from relaymq.qmgr import QueueManager
from relaymq.qmgr.admin import ADMIN_CONFIRM_ID
from relaymq.qmgr.errors import NotAllowed

ADMIN_Q = "SYSTEM.ADMIN.QUEUE"


def request(body: object, reply_to: str = "REPLIES", user: str = "") -> Message:
    message = Message()
    message.mq.md.Format = "MQSTR"
    message.mq.md.ReplyToQ = reply_to
    message.mq.md.UserIdentifier = user
    message.mq.body = (body if isinstance(body, bytes) else json.dumps(body).encode())
    return message


def replies(qm: QueueManager, count: int) -> list[dict]:
    out = []
    for _ in range(count):
        reply = qm.get("REPLIES", wait=10)
        assert reply is not None, f"only {len(out)} of {count} replies"
        out.append((json.loads(reply.mq.body), reply.mq.md.CorrelId))
    return out


def confirmed(qm: QueueManager, count: int) -> None:
    """Wait until the processor has confirmed ``count`` admin messages. It confirms each one
    just after putting its answer (a crash in between answers it again), so a test that has
    read the answer may still find its request on the queue for a moment."""
    deadline = time.monotonic() + 10
    while qm.admin.processed < count:
        assert time.monotonic() < deadline, f"{qm.admin.processed} of {count} admin messages confirmed"
        time.sleep(0.01)


def test_admin_messages_are_processed_in_order_and_answered(tmp_path) -> None:
    """define, inquire, update, delete, inquire of a deleted queue and inquire_all: each put
    is processed one at a time in arrival order; each reply carries rc, the reason code on
    failure, and CorrelId = the request's MsgId."""
    with QueueManager.open("QMA", str(tmp_path), synchronous="NORMAL") as qm:
        qm.define_queue("REPLIES")
        sent = [qm.put(ADMIN_Q, request(body)) for body in (
            {"action": "define", "name": "ORDERS", "params": {"max_depth": 5, "aliases": ["ORD"]}},
            {"action": "inquire", "name": "ORD"},
            {"action": "update", "name": "ORDERS", "params": {"max_depth": 9}},
            {"action": "define", "name": "ORDERS"},
            {"action": "delete", "name": "ORDERS"},
            {"action": "inquire", "name": "ORDERS"},
            {"action": "define", "name": "TO.QM2", "type": "remote", "qmgr": "QM2", "params": {"mode": "async"}},
            {"action": "inquire_all"},
            {"action": "inquire", "resource": "qmgr"},
        )]
        got = replies(qm, len(sent))
        assert [correl for _, correl in got] == sent
        bodies = [body for body, _ in got]
        assert [b["rc"] for b in bodies] == [0, 0, 0, 1, 0, 1, 0, 0, 0]
        assert bodies[0]["result"]["max_depth"] == 5 and bodies[0]["result"]["depth"] == 0
        assert bodies[1]["result"]["name"] == "ORDERS"
        assert bodies[2]["result"]["max_depth"] == 9
        assert (bodies[3]["reason"], bodies[3]["reasonName"]) == (2100, "MQRC_OBJECT_ALREADY_EXISTS")
        assert bodies[5]["reason"] == 2085
        assert bodies[6]["result"]["owner"] == "QM2" and bodies[6]["result"]["mode"] == "async"
        assert {"TO.QM2", "REPLIES", ADMIN_Q} <= {q["name"] for q in bodies[7]["result"]}
        assert bodies[8]["result"] == {"name": "QMA", "state": "running", "queues": len(qm.definitions())}
        confirmed(qm, len(sent))
        assert qm.depth(ADMIN_Q) == 0 and qm.admin.processed == len(sent)


def test_applications_cannot_take_admin_messages_and_bad_requests_are_answered() -> None:
    """Item 8 / item 10: get, browse, delete and listeners are refused on the admin queue;
    a body that is not a JSON request or an unknown action is answered rc 1 with a reason."""
    with QueueManager.open("QMB", None) as qm:
        qm.define_queue("REPLIES")
        for call in (lambda: qm.get(ADMIN_Q), lambda: qm.browse(ADMIN_Q), lambda: qm.delete(ADMIN_Q, "x:1:1"),
                     lambda: qm.add_listener(ADMIN_Q, print)):
            with pytest.raises(NotAllowed):
                call()
        qm.put(ADMIN_Q, request(b"define ORDERS please"))
        qm.put(ADMIN_Q, request({"action": "explode", "name": "X"}))
        qm.put(ADMIN_Q, request({"action": "define", "name": "X", "params": {"max_depth": "lots"}}))
        (a, _), (b, _), (c, _) = replies(qm, 3)
        assert (a["rc"], a["reason"]) == (1, 2110)
        assert (b["rc"], b["reason"]) == (1, 2046) and "explode" in b["message"]
        assert (c["rc"], c["reason"]) == (1, 3306)


def test_only_administrators_are_obeyed() -> None:
    """With an administrators list (the broker's [access] administrators), a request whose
    MQMD.UserIdentifier is not in it is answered 2035 and not carried out."""
    with QueueManager("QMC", administrators=("admin",)) as qm:
        qm.define_queue("REPLIES")
        qm.put(ADMIN_Q, request({"action": "define", "name": "SNEAKY"}, user="mallory"))
        qm.put(ADMIN_Q, request({"action": "define", "name": "PROPER"}, user="admin"))
        (refused, _), (done, _) = replies(qm, 2)
        assert (refused["rc"], refused["reason"]) == (1, 2035)
        assert done["rc"] == 0
        assert "SNEAKY" not in qm.queue_names() and "PROPER" in qm.queue_names()


def test_a_message_being_processed_at_a_crash_is_processed_at_the_next_start(tmp_path) -> None:
    """Processing is a two-phase get: a message taken but not confirmed when the process
    stopped (here: taken by hand with the processor's confirm id, processing switched off) is
    made visible again at the next open and processed then."""
    with QueueManager.open("QMD", str(tmp_path), synchronous="NORMAL", admin_processing=False) as qm:
        qm.define_queue("REPLIES")
        qm.put(ADMIN_Q, request({"action": "define", "name": "LATE"}))
        taken = qm.get_envelope(ADMIN_Q, confirm_id=ADMIN_CONFIRM_ID, _admin=True)
        assert taken is not None and qm.depth(ADMIN_Q) == 1
    with QueueManager.open("QMD", str(tmp_path), synchronous="NORMAL") as qm:
        ((answer, _),) = replies(qm, 1)
        confirmed(qm, 1)
        assert answer["rc"] == 0 and "LATE" in qm.queue_names() and qm.depth(ADMIN_Q) == 0


def test_no_administrators_means_no_admin_message_is_obeyed() -> None:
    """Item 8 with an empty administrators list (the broker's default: [access]
    administrators not set): every admin message is answered 2035 with the reason, nothing
    is changed - also for a sender who claims a likely name."""
    with QueueManager("QME", administrators=()) as qm:
        qm.define_queue("REPLIES")
        qm.put(ADMIN_Q, request({"action": "define", "name": "SNEAKY"}, user="admin"))
        qm.put(ADMIN_Q, request({"action": "inquire", "resource": "qmgr"}))
        (first, _), (second, _) = replies(qm, 2)
        for answer in (first, second):
            assert (answer["rc"], answer["reason"], answer["reasonName"]) == (1, 2035, "MQRC_NOT_AUTHORIZED")
            assert "no administrators are configured" in answer["message"]
        assert "SNEAKY" not in qm.queue_names()


def test_broker_without_administrators_refuses_admin_messages_over_rest(tmp_path) -> None:
    """Item 8 in the broker (docs/queues.md "Who is obeyed"): no [access] administrators, so an
    admin message put over REST (anonymous: the broker has no password file) is answered 2035
    and defines nothing, while the REST admin endpoint - the trusted path, behind the admin
    guard - still defines queues."""
    from .test_rest_api import BASE, Rest, _start

    broker, port = _start(tmp_path, queues='[[qmgr.queue]]\nname = "ADMIN.REPLIES"\n')
    rest = Rest(broker, port)
    try:
        status, _, _ = rest.put(ADMIN_Q, json.dumps({"action": "define", "name": "SNEAKY"}),
                                {"ibm-mq-md-replyTo": "ADMIN.REPLIES"})
        assert status == 201
        status, _, body = rest.get("ADMIN.REPLIES", "?wait=10000")
        assert status == 200
        answer = json.loads(body)
        assert (answer["rc"], answer["reason"]) == (1, 2035) and "no administrators" in answer["message"]
        assert rest.call("GET", f"{BASE}/admin/qmgr/QM1/queue/SNEAKY")[0] == 404
        status, _, _ = rest.call("POST", f"{BASE}/admin/qmgr/QM1/queue", json.dumps({"name": "PROPER"}).encode(),
                                 {"Content-Type": "application/json", **dict(broker.admin_headers())})
        assert status == 201
    finally:
        broker.cleanup()
