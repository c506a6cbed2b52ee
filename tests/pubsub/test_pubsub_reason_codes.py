"""Every reason code of pubsub.md item 36 (seed 003 l.6931-7361), each produced by every
command the seed's "Issued by" column names: one table, one row per (code, command). The
engine checks subscriber queues against a real (in-memory) queue manager, so 3074 and 3076
come from real queue resolution; 3008 comes from a real failure in the broker process stack
(the change cannot be made durable)."""

from __future__ import annotations


import pytest

from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.pubsub import psc
from relaymq.pubsub import reasons as r
from relaymq.pubsub.engine import CONTROL_QUEUE
from relaymq.pubsub.service import queue_checker
from relaymq.pubsub.topicacl import AclEntry, TopicAcl
from relaymq.qmgr import QueueManager

from psc_helpers import STREAM, make_engine, send, send_message
from stack import CONTROL, Stack, run


def _registered(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice").completion == "ok"


def _registered_variable(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice", RegOpt="VariableUserId").completion == "ok"


def _shared(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinShared").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="b", RegOpt="JoinShared").completion == "ok"


def _exclusive(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinExcl").completion == "ok"


def _named(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="n1").completion == "ok"


def _two_topics(e):
    assert send(e, "RegSub", Topic=["A", "B"], reply_to="S").completion == "ok"


def _deny_all():
    acl = TopicAcl.default()
    acl.set(AclEntry("", "PublicGroup", "deny", "deny", "deny"))
    return acl


def _deny_bob_on_t():
    acl = TopicAcl.default()
    acl.set(AclEntry("T", "bob", "deny", "deny", "inherit"))
    return acl


CORREL_ZERO = dict(RegOpt="CorrelAsId", correl_id=bytes(24))
BAD_FILTER = "a = = b"

# (reason, acl, setup, command, params); the command is sent as user alice unless it says.
TABLE = [
    # 2336-2339: any command (seed 6940-7017)
    (r.RFH_COMMAND_ERROR, None, None, "Register", dict(Topic="T", queue=CONTROL_QUEUE)),
    (r.RFH_PARM_ERROR, None, None, "Publish", dict(Topic="T", Bogus="1")),
    (r.RFH_PARM_ERROR, None, None, "DeletePub", dict(Topic="T", QName="S")),
    (r.RFH_PARM_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", PubOpt="RetainPub")),
    (r.RFH_PARM_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", Bogus="1")),
    (r.RFH_PARM_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", SubIdentity="x")),
    (r.RFH_PARM_ERROR, None, None, "Publish", dict(Topic="T", SeqNum="x")),
    (r.RFH_DUPLICATE_PARM, None, None, "ReqUpdate", dict(Topic=["A", "B"], reply_to="S")),
    (r.RFH_DUPLICATE_PARM, None, None, "RegSub", dict(Topic="T", reply_to="S", SubPoint=["P", "Q"])),
    (r.RFH_DUPLICATE_PARM, None, None, "Publish", dict(Topic="T", PubTime=["2025010112000000"] * 2)),
    (r.RFH_PARM_MISSING, None, None, "Publish", dict()),
    (r.RFH_PARM_MISSING, None, None, "DeletePub", dict()),
    (r.RFH_PARM_MISSING, None, None, "RegSub", dict(reply_to="S")),
    (r.RFH_PARM_MISSING, None, None, "DeregSub", dict(reply_to="S")),
    # 3072: any command
    (r.TOPIC_ERROR, None, None, "Publish", dict(Topic="a/#")),
    (r.TOPIC_ERROR, None, None, "RegSub", dict(Topic="a//b", reply_to="S")),
    (r.TOPIC_ERROR, None, None, "DeletePub", dict(Topic="")),
    (r.TOPIC_ERROR, None, None, "DeregSub", dict(Topic="a//b", reply_to="S")),
    (r.TOPIC_ERROR, None, None, "ReqUpdate", dict(Topic="", reply_to="S")),
    # 3073: DeregSub and ReqUpdate; DeregAll with a value that deregisters nothing (7056-7070)
    (r.NOT_REGISTERED, None, None, "DeregSub", dict(Topic="T", reply_to="S")),
    (r.NOT_REGISTERED, None, _two_topics, "DeregSub", dict(Topic=["A", "NOPE"], reply_to="S", RegOpt="DeregAll")),
    (r.NOT_REGISTERED, None, _two_topics, "DeregSub", dict(reply_to="S", RegOpt="DeregAll", Filter="usr.x = 1")),
    (r.NOT_REGISTERED, None, _two_topics, "DeregSub", dict(reply_to="S", RegOpt="DeregAll", SubPoint="P")),
    (r.NOT_REGISTERED, None, None, "ReqUpdate", dict(Topic="T", reply_to="S")),
    # 3074 / 3076: DeregSub, Publish, RegSub, ReqUpdate (7082-7118), by real resolution
    (r.Q_MGR_NAME_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", QMgrName="QMX")),
    (r.Q_MGR_NAME_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", QMgrName="QMX")),
    (r.Q_MGR_NAME_ERROR, None, None, "Publish", dict(Topic="T", PubOpt="OtherSubsOnly", QName="S", QMgrName="QMX")),
    (r.Q_MGR_NAME_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", QMgrName="QMX")),
    (r.Q_NAME_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", QName="NO.SUCH.QUEUE")),
    (r.Q_NAME_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", QName="NO.SUCH.QUEUE")),
    (r.Q_NAME_ERROR, None, None, "Publish", dict(Topic="T", PubOpt="OtherSubsOnly", QName="NO.SUCH.QUEUE")),
    (r.Q_NAME_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", QName="NO.SUCH.QUEUE")),
    # 3077: ReqUpdate
    (r.NO_RETAINED_MSG, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S")),
    # 3078: the subscriber identity belongs to another user (seed 6379-6393)
    (r.DUPLICATE_IDENTITY, None, _registered, "RegSub", dict(Topic="U", reply_to="S", user_id="bob")),
    # 3079: any command on the wrong queue
    (r.INCORRECT_Q, None, None, "DeletePub", dict(Topic="T", queue=CONTROL_QUEUE)),
    (r.INCORRECT_Q, None, None, "Publish", dict(Topic="T", queue=CONTROL_QUEUE)),
    (r.INCORRECT_Q, None, None, "RegSub", dict(Topic="T", reply_to="S", queue=STREAM)),
    (r.INCORRECT_Q, None, None, "DeregSub", dict(Topic="T", reply_to="S", queue=STREAM)),
    (r.INCORRECT_Q, None, None, "ReqUpdate", dict(Topic="T", reply_to="S", queue=STREAM)),
    # 3080: DeregSub and RegSub (and ReqUpdate, whose CorrelAsId "must not be zero", 6624-6632)
    (r.CORREL_ID_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", **CORREL_ZERO)),
    (r.CORREL_ID_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", **CORREL_ZERO)),
    (r.CORREL_ID_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", **CORREL_ZERO)),
    # 3081: Publish and RegSub (7184-7200); DeletePub needs publish authority (5350-5362);
    # ReqUpdate by another user of a VariableUserId subscription needs authority (6725-6733)
    (r.NOT_AUTHORIZED, _deny_all, None, "Publish", dict(Topic="T")),
    (r.NOT_AUTHORIZED, _deny_all, None, "RegSub", dict(Topic="T", reply_to="S")),
    (r.NOT_AUTHORIZED, _deny_all, None, "DeletePub", dict(Topic="T")),
    (r.NOT_AUTHORIZED, _deny_bob_on_t, _registered_variable, "ReqUpdate",
     dict(Topic="T", reply_to="S", RegOpt="VariableUserId", user_id="bob")),
    # 3083: DeregSub and RegSub
    (r.REG_OPTIONS_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", RegOpt="Whenever")),
    (r.REG_OPTIONS_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", RegOpt="Whenever")),
    (r.REG_OPTIONS_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", RegOpt="LeaveOnly")),
    (r.REG_OPTIONS_ERROR, None, _two_topics, "DeregSub", dict(reply_to="S", RegOpt=["DeregAll", "FullResp"])),
    (r.REG_OPTIONS_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", RegOpt="PubOnReqOnly")),
    # 3084: Publish; 3087: DeletePub
    (r.PUB_OPTIONS_ERROR, None, None, "Publish", dict(Topic="T", PubOpt="Loudly")),
    (r.PUB_OPTIONS_ERROR, None, None, "Publish", dict(Topic="T", PubOpt="IsRetainedPub")),
    (r.DEL_OPTIONS_ERROR, None, None, "DeletePub", dict(Topic="T", DelOpt="Everywhere")),
    # 3150: DeregSub, RegSub, ReqUpdate
    (r.FILTER_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", Filter=BAD_FILTER)),
    (r.FILTER_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", Filter=BAD_FILTER)),
    (r.FILTER_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", Filter=BAD_FILTER)),
    # 3151: DeregSub, RegSub, ReqUpdate (a userid mismatch without VariableUserId)
    (r.WRONG_USER, None, _registered, "RegSub", dict(Topic="T", reply_to="S", user_id="bob")),
    (r.WRONG_USER, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", user_id="bob")),
    (r.WRONG_USER, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", user_id="bob")),
    (r.WRONG_USER, None, _named, "DeregSub", dict(SubName="n1", user_id="bob")),
    # 3152 (6454-6472); 3153 (7303-7309, 5805-5809, 6735-6739)
    (r.DUPLICATE_SUBSCRIPTION, None, _named, "RegSub", dict(Topic="T", reply_to="S", SubName="n2")),
    (r.DUPLICATE_SUBSCRIPTION, None, _registered, "RegSub", dict(Topic="T", reply_to="S", SubName="n2")),
    (r.SUB_NAME_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", SubName=" ")),
    (r.SUB_NAME_ERROR, None, _registered, "DeregSub", dict(Topic="T", reply_to="S", SubName="n9")),
    (r.SUB_NAME_ERROR, None, _registered, "ReqUpdate", dict(Topic="T", reply_to="S", SubName="n9")),
    # 3154-3157: RegSub (and 3154 on DeregSub, 5615-5619)
    (r.SUB_IDENTITY_ERROR, None, None, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="i" * 65)),
    (r.SUB_IDENTITY_ERROR, None, _exclusive, "DeregSub", dict(Topic="T", reply_to="S", SubIdentity="zz")),
    (r.SUBSCRIPTION_IN_USE, None, _shared, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="c", RegOpt="JoinExcl")),
    (r.SUBSCRIPTION_LOCKED, None, _exclusive, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="b", RegOpt="JoinShared")),
    (r.ALREADY_JOINED, None, _exclusive, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinExcl")),
]


def _ids():
    seen: dict[str, int] = {}
    out = []
    for reason, _acl, _setup, command, _params in TABLE:
        name = f"{reason}-{r.NAMES[reason]}-{command}"
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return out


def test_the_table_covers_every_reason_code():
    """pubsub.md item 36: no code left out (3008 has its own test below, against the broker
    stack, because it needs a real failure)."""
    assert sorted({row[0] for row in TABLE} | {r.COMMAND_FAILED}) == sorted(r.NAMES)


@pytest.fixture
def qm():
    manager = QueueManager.open("QM1", None)
    for queue in ("S", "REPLY.Q"):
        manager.define_queue(queue)
    yield manager
    manager.close()


@pytest.mark.parametrize("reason, acl, setup, command, params", TABLE, ids=_ids())
def test_item_36_reason_code(qm, reason, acl, setup, command, params):
    """pubsub.md item 36; seed 003 l.6931-7361: the code, in an error response, with the psc
    echoed (item 33), and nothing of the command processed."""
    e = make_engine(queue_check=queue_checker(qm), acl=acl() if acl else None)
    if setup is not None:
        setup(e)
    before = {k: (s.user_id, dict(s.identities), set(s.flags)) for k, s in e.subscriptions.items()}
    params = dict(params)
    params.setdefault("user_id", "alice")
    res = send(e, command, **params)
    assert res.completion == "error"
    assert res.reasons == [reason]
    assert [f.name for f in res.response.mq.headers[0].folders] == ["pscr", "psc"]
    assert res.puts == [] and res.mqtt == []
    assert {k: (s.user_id, dict(s.identities), set(s.flags)) for k, s in e.subscriptions.items()} == before


def test_item_36_psc_without_command_and_unknown_mcd_element():
    """pubsub.md items 27, 36; seed 6993-7017: a psc folder without Command misses a mandatory
    parameter (2339); an mcd element that is not Msd/Set/Type/Fmt (seed 5183-5240) is 2337."""
    e = make_engine()
    psc = Element("psc")
    psc.add("Topic", "T")
    md = MQMD(MsgType=1, ReplyToQ="R")
    no_command = Message(MQMessage(md=md, headers=[MQRFH2(folders=[psc])]))
    assert send_message(e, no_command, STREAM).reasons == [r.RFH_PARM_MISSING]
    psc = Element("psc")
    psc.add("Command", "Publish")
    psc.add("Topic", "T")
    mcd = Element("mcd")
    mcd.add("Msd", "xmlnsc")
    mcd.add("Colour", "blue")
    bad_mcd = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="R"), headers=[MQRFH2(folders=[psc, mcd])], body=b"<a/>"))
    res = send_message(e, bad_mcd, STREAM)
    assert (res.completion, res.reasons) == ("error", [r.RFH_PARM_ERROR])


def test_item_36_no_ok_before_the_change_is_durable_and_the_command_waits_for_the_restart(tmp_path):
    """pubsub.md item 36 (seed 7020-7034), README decision 4 and issue 14: a command's removal
    from the control queue, its registration and its reply are one unit of work. When the
    store cannot commit it (here the subscriptions' table refuses writes), no ok is ever taken from
    the reply queue and the command is not lost: after a restart on the repaired database it
    is processed once, the registration exists once and one ok is put."""
    import sqlite3

    from relaymq.qmgr.errors import StoreFailed

    database = tmp_path / "relaymq.db"

    async def failing():
        stack = Stack(tmp_path, store="sqlite")
        stack.ensure_queue("REPLY.Q")
        stack.ensure_queue("SUBQ")
        stack.ensure_queue(CONTROL)
        stack.ensure_queue(STREAM)  # every queue the service listens on exists: it defines none
        # the command is on its queue (durable) before the fault and before the engine starts
        stack.qm.put(CONTROL, psc.command_message("RegSub", reply_to="REPLY.Q", Topic="T", QName="SUBQ"))
        broken = sqlite3.connect(database, isolation_level=None)
        broken.execute("CREATE TRIGGER refuse BEFORE INSERT ON ps_subscriptions BEGIN"
                       " SELECT RAISE(FAIL, 'the disk says no'); END")
        broken.close()
        await stack.start()
        try:
            reply = await stack.aio.get("REPLY.Q", wait=5.0)
        except StoreFailed:
            reply = None  # the reply was never durable: taking it fails too
        assert reply is None, psc.reply_reasons(reply)
        assert stack.store is not None and stack.store.failed is not None
        try:
            await stack.stop()
        except Exception:  # noqa: BLE001 - the failed store says so when it closes
            pass

    async def restarted():
        repair = sqlite3.connect(database, isolation_level=None)
        repair.execute("DROP TRIGGER refuse")
        repair.close()
        stack = await Stack(tmp_path, store="sqlite").start()
        try:
            reply = await stack.aio.get("REPLY.Q", wait=10.0)
            assert reply is not None and psc.reply_reasons(reply) == ("ok", [])
            await stack.settle()
            assert await stack.aio.get("REPLY.Q") is None  # one reply
            assert [s.topic for s in stack.service.engine.subscriptions.values()] == ["T"]
            assert await stack.command("Publish", Topic="T", body=b"x") == ("ok", [])
            (copy,) = await stack.messages("SUBQ", 1)
            assert copy.mq.body == b"x"
        finally:
            await stack.stop()

    run(failing())
    run(restarted())


def test_item_32_partial_authority_is_a_warning_per_topic():
    """pubsub.md item 32; seed 003 l.6090-6100, 6895-6915: authorised topics are processed,
    one 3081 Response with its Topic per refused topic."""
    acl = TopicAcl.default()
    acl.set(AclEntry("Secret", "PublicGroup", "deny", "deny", "inherit"))
    e = make_engine(acl=acl)
    assert send(e, "RegSub", Topic="#", reply_to="S").completion == "ok"
    res = send(e, "Publish", Topic=["Open", "Secret/a", "Secret/b"], body=b"x")
    assert (res.completion, res.reasons) == ("warning", [r.NOT_AUTHORIZED, r.NOT_AUTHORIZED])
    pscr = res.response.mq.headers[0].folders[0]
    assert [resp.get("Topic") for resp in pscr.children_named("Response")] == ["Secret/a", "Secret/b"]
    assert res.topics_to("S") == ["Open"]
    assert [f.name for f in res.response.mq.headers[0].folders] == ["pscr", "psc"]
