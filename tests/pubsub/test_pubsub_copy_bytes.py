"""A live publication's copies for queue subscribers are made from bytes encoded once per
publication and MQMD Persistence, each with its own MsgId and CorrelId (issue 14: the copies
were ~38% of bench_pubsub's event loop). What a get returns of any copy must be, byte for
byte, the message its MQMD, headers and body encode to one by one (pubsub.md items 14, 15, 20,
35, 37): the copies are put on a real queue manager over SQLite and got back."""

from __future__ import annotations

import itertools

import pytest

from relaymq.message.constants import MQPER_PERSISTENCE_AS_Q_DEF, MQPER_PERSISTENT
from relaymq.message.message import Message
from relaymq.message.mqmd import put_fields
from relaymq.pubsub.delivery import Delivery
from relaymq.pubsub.model import NON_PERS, PERS, PERS_AS_PUB, PERS_AS_QUEUE, Publication, QueueSubscription, SubscriberId
from relaymq.qmgr import QueueManager

QUEUES = ("S.PERS", "S.NONPERS", "S.ASQUEUE", "S.ASPUB", "S.CORREL", "S.RFH1", "S.SHORTCORREL")


def subscriptions() -> list[QueueSubscription]:
    """One subscriber per MQMD difference a copy can have: each Persistence option, CorrelAsId
    (a CorrelId of 24 bytes and a shorter one, padded) or the broker's, MQRFH v1 (item 37: no MQRFH2)."""
    def sub(queue: str, persistence: str = PERS_AS_PUB, correl: bytes = b"", rfh1: bool = False) -> QueueSubscription:
        return QueueSubscription("plant/+/temp", "", "", SubscriberId("QM1", queue, correl), "alice",
                                 persistence=persistence, broker_correl_id=b"RMQ" + queue.encode().ljust(21, b"."),
                                 rfh1=rfh1)
    return [sub("S.PERS", PERS), sub("S.NONPERS", NON_PERS), sub("S.ASQUEUE", PERS_AS_QUEUE), sub("S.ASPUB"),
            sub("S.CORREL", correl=b"C" * 24), sub("S.RFH1", rfh1=True), sub("S.SHORTCORREL", correl=b"me-1")]


def one_by_one(delivery: Delivery, pub: Publication, subs: list[QueueSubscription], now: float) -> list[Message]:
    """Each copy's message built and encoded on its own (``copy`` without shared parts)."""
    return [delivery.copy(sub, pub, pub.expiry_tenths(now), retained_inform=False).message for sub in subs]


@pytest.mark.parametrize("pub", [
    Publication("plant/a/temp", b'{"v": 51}', usr=[("level", "7")], body_format="MQSTR", persistent=True,
                priority=5, expiry_at=1030.0, pub_time="20260101120000", seq_num="3", untyped_usr=True),
    Publication("plant/b/temp", b"\x00\x01raw", persistent=False),
    Publication("plant/c/temp", b"as the queue", priority=-1),  # MQPRI_PRIORITY_AS_Q_DEF: the queue's
], ids=["persistent-usr-expiry", "non-persistent-blob", "priority-as-queue"])
def test_a_got_copy_is_the_message_encoded_on_its_own(tmp_path, pub):
    now = 1000.0
    subs = subscriptions()
    ids = itertools.count(1)
    delivery = Delivery("QM1", lambda: next(ids).to_bytes(24, "big"), None, None)
    copies, expired = delivery.live(pub, [(sub.tree_key, sub) for sub in subs], now)
    assert expired == [] and [c.queue for c in copies] == list(QUEUES)
    ids = itertools.count(1)  # the same MsgIds again, in the same order
    alone = one_by_one(delivery, pub, subs, now)
    assert [c.message.to_bytes() for c in copies] == [m.to_bytes() for m in alone]
    # each copy made from the bytes carries the MQMD fields its put reads, as put_fields reads
    # them of its bytes (issue 14: the put takes them instead of reading them again)
    assert [c.message.stored_fields() for c in copies] == [
        None if c.queue == "S.RFH1" else put_fields(c.message.to_bytes()) for c in copies]

    qm = QueueManager.open("QM1", str(tmp_path))
    try:
        for queue in QUEUES:
            qm.define_queue(queue, default_priority=3)
        assert all(isinstance(r, bytes) for r in qm.put_all([(c.queue, c.message) for c in copies]))
        assert all(isinstance(r, bytes) for r in qm.put_all(list(zip(QUEUES, alone, strict=True))))
        got = [(qm.get(queue), qm.get(queue)) for queue in QUEUES]  # the copy, then the one made alone
    finally:
        qm.close()
    assert all(copy is not None and copy.to_bytes() == made.to_bytes() for copy, made in got)  # type: ignore[union-attr]
    plain = [copy.mq for copy, _ in got]  # type: ignore[union-attr]
    assert {m.md.Priority for m in plain} == {pub.priority if pub.priority >= 0 else 3}
    persistence = [m.md.Persistence for m in plain]
    as_pub = MQPER_PERSISTENT if pub.persistent else 0
    assert persistence == [MQPER_PERSISTENT, 0, MQPER_PERSISTENCE_AS_Q_DEF, as_pub, as_pub, as_pub, as_pub]
    assert [m.md.CorrelId for m in plain][4:] == [b"C" * 24, subs[5].broker_correl_id, b"me-1".ljust(24, b"\0")]
    assert [m.md.MsgId for m in plain] == [n.to_bytes(24, "big") for n in range(1, 8)]
    assert [type(m.headers[0]).__name__ for m in plain] == ["MQRFH2"] * 5 + ["MQRFH", "MQRFH2"]
    assert {m.body for m in plain} == {pub.body}
