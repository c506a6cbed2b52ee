"""Every reason code of pubsub.md item 36 (seed 003 l.6931-7361), each produced by the command
the seed says issues it: one table, one row per code."""

from __future__ import annotations

import pytest

from relaymq.pubsub import reasons as r
from relaymq.pubsub.engine import CONTROL_QUEUE
from relaymq.pubsub.topicacl import AclEntry, TopicAcl

from psc_helpers import make_engine, send


def _setup_registered(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice").completion == "ok"


def _setup_retained_nothing(e):
    assert send(e, "RegSub", Topic="T", reply_to="S").completion == "ok"


def _setup_shared(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinShared").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="b", RegOpt="JoinShared").completion == "ok"


def _setup_exclusive(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinExcl").completion == "ok"


def _setup_named(e):
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="n1").completion == "ok"


def _exploding_check(qmgr, queue):
    raise RuntimeError("store unavailable")


# (reason, engine options, setup, command, params); the command is sent as user alice.
TABLE = [
    (r.RFH_COMMAND_ERROR, {}, None, "Register", dict(Topic="T", queue=CONTROL_QUEUE)),
    (r.RFH_PARM_ERROR, {}, None, "Publish", dict(Topic="T", SeqNum="x")),
    (r.RFH_DUPLICATE_PARM, {}, None, "ReqUpdate", dict(Topic=["A", "B"], reply_to="S")),
    (r.RFH_PARM_MISSING, {}, None, "Publish", dict()),
    (r.COMMAND_FAILED, {"queue_check": _exploding_check}, None, "RegSub", dict(Topic="T", reply_to="S")),
    (r.TOPIC_ERROR, {}, None, "Publish", dict(Topic="a/#")),
    (r.NOT_REGISTERED, {}, None, "DeregSub", dict(Topic="T", reply_to="S")),
    (r.Q_MGR_NAME_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", QMgrName="QMX")),
    (r.Q_NAME_ERROR, {"queue_check": lambda qm, q: r.Q_NAME_ERROR}, None, "RegSub", dict(Topic="T", reply_to="S")),
    (r.NO_RETAINED_MSG, {}, _setup_retained_nothing, "ReqUpdate", dict(Topic="T", reply_to="S")),
    (r.DUPLICATE_IDENTITY, {}, _setup_registered, "RegSub", dict(Topic="U", reply_to="S", user_id="bob")),
    (r.INCORRECT_Q, {}, None, "DeletePub", dict(Topic="T", queue=CONTROL_QUEUE)),
    (r.CORREL_ID_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", RegOpt="CorrelAsId")),
    (r.NOT_AUTHORIZED, {"acl": "deny-all"}, None, "Publish", dict(Topic="T")),
    (r.REG_OPTIONS_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", RegOpt="Whenever")),
    (r.PUB_OPTIONS_ERROR, {}, None, "Publish", dict(Topic="T", PubOpt="Loudly")),
    (r.DEL_OPTIONS_ERROR, {}, None, "DeletePub", dict(Topic="T", DelOpt="Everywhere")),
    (r.FILTER_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", Filter="a = = b")),
    (r.WRONG_USER, {}, _setup_registered, "RegSub", dict(Topic="T", reply_to="S", user_id="bob")),
    (r.DUPLICATE_SUBSCRIPTION, {}, _setup_named, "RegSub", dict(Topic="T", reply_to="S", SubName="n2")),
    (r.SUB_NAME_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", SubName=" ")),
    (r.SUB_IDENTITY_ERROR, {}, None, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="i" * 65)),
    (r.SUBSCRIPTION_IN_USE, {}, _setup_shared, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="c", RegOpt="JoinExcl")),
    (r.SUBSCRIPTION_LOCKED, {}, _setup_exclusive, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="b", RegOpt="JoinShared")),
    (r.ALREADY_JOINED, {}, _setup_exclusive, "RegSub", dict(Topic="T", reply_to="S", SubIdentity="a", RegOpt="JoinExcl")),
]


def test_the_table_covers_every_reason_code():
    """pubsub.md item 36: no code left out of the table below."""
    assert sorted(row[0] for row in TABLE) == sorted(r.NAMES)


@pytest.mark.parametrize("reason, options, setup, command, params", TABLE, ids=[r.NAMES[row[0]] for row in TABLE])
def test_item_36_reason_code(reason, options, setup, command, params):
    """pubsub.md item 36; seed 003 l.6931-7361: the code, in an error response, with the psc
    echoed (item 33)."""
    options = dict(options)
    if options.get("acl") == "deny-all":
        acl = TopicAcl.default()
        acl.set(AclEntry("", "PublicGroup", "deny", "deny", "deny"))
        options["acl"] = acl
    e = make_engine(**options)
    if setup is not None:
        setup(e)
    params = dict(params)
    params.setdefault("user_id", "alice")
    res = send(e, command, **params)
    assert res.completion == "error"
    assert res.reasons == [reason]
    assert [f.name for f in res.response.mq.headers[0].folders] == ["pscr", "psc"]


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
