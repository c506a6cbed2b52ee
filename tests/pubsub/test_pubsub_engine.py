"""The sans-I/O pub/sub engine, item by item (pubsub.md items 12-37; seed 003)."""

from __future__ import annotations

import json

import pytest

from relaymq.message.constants import MQMT_DATAGRAM, MQMT_REPLY, MQPER_PERSISTENT, MQRO_NAN, MQRO_PAN
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh import MQRFH
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.pubsub import psc
from relaymq.pubsub import reasons as r
from relaymq.pubsub.engine import CONTROL_QUEUE, MQAT_BROKER
from relaymq.pubsub.model import Publication

from psc_helpers import STREAM, make_engine, send, send_message


def test_item_12_publish_on_several_topics():
    """pubsub.md item 12; seed 003 l.1587, 5898-5900: one Publish with several Topics is
    published on each."""
    e = make_engine()
    assert send(e, "RegSub", Topic="A/#", reply_to="SUBQ").completion == "ok"
    res = send(e, "Publish", Topic=["A/x", "A/y", "B/z"], body=b"hi")
    assert res.completion == "ok"
    assert sorted(res.topics_to("SUBQ")) == ["A/x", "A/y"]


def test_item_13_subscription_is_topic_point_filter_and_queue():
    """pubsub.md item 13; seed 003 l.1812-1820: the subscriber queue and queue manager come
    from QName/QMgrName; a publication lands on that queue at that queue manager."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", QName="SUBS.IN", QMgrName="QM2").completion == "ok"
    res = send(e, "Publish", Topic="T", body=b"x")
    assert [(p.qmgr, p.queue) for p in res.puts] == [("QM2", "SUBS.IN")]


def test_item_14_one_copy_however_many_subscriptions_match():
    """pubsub.md item 14; seed 003 l.2738-2740."""
    e = make_engine()
    for topic in ("Sport/#", "Sport/+", "Sport/Soccer"):
        assert send(e, "RegSub", Topic=topic, reply_to="SUBQ").completion == "ok"
    res = send(e, "Publish", Topic="Sport/Soccer", body=b"1-0")
    assert len(res.to("SUBQ")) == 1


def test_item_15_correl_id_as_identity_or_broker_chosen():
    """pubsub.md item 15; seed 003 l.2734-2737, 7479-7483: CorrelAsId delivers with the
    subscriber's CorrelId (and makes it part of the identity); otherwise a non-zero value."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", reply_to="SUBQ", RegOpt="CorrelAsId", correl_id=b"me-1").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="SUBQ", RegOpt="CorrelAsId", correl_id=b"me-2").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="OTHERQ").completion == "ok"
    res = send(e, "Publish", Topic="T", body=b"x")
    correls = sorted(m.mq.md.CorrelId for m in res.to("SUBQ"))
    assert correls == [b"me-1".ljust(24, b"\0"), b"me-2".ljust(24, b"\0")]
    (other,) = res.to("OTHERQ")
    assert other.mq.md.CorrelId != bytes(24)


def test_item_16_subscription_points_keep_publications_apart():
    """pubsub.md item 16; seed 003 l.1907-1962, 4596-4610: a subscription without a point
    gets only default-point publications; one to a point nobody publishes at yet is accepted
    and receives once a publisher appears."""
    e = make_engine(input_queues={STREAM: "", "PRICES.POUNDS": "Pounds"})
    assert send(e, "RegSub", Topic="Stock/IBM", reply_to="DOLLARS").completion == "ok"
    assert send(e, "RegSub", Topic="Stock/IBM", SubPoint="Pounds", reply_to="POUNDS").completion == "ok"
    dollars = send(e, "Publish", Topic="Stock/IBM", body=b"100")
    pounds = send(e, "Publish", Topic="Stock/IBM", body=b"80", queue="PRICES.POUNDS")
    assert [(p.queue, p.message.mq.body) for p in dollars.puts] == [("DOLLARS", b"100")]
    assert [m.queue for m in pounds.puts] == ["POUNDS"]
    assert pounds.puts[0].message.mq.first_rfh2().get("psc.SubPoint") == "Pounds"


def test_item_16_retained_kept_per_topic_and_point():
    """pubsub.md item 16/21; seed 003 l.1747-1749: the same topic retains one publication
    per subscription point."""
    e = make_engine(input_queues={STREAM: "", "PRICES.POUNDS": "Pounds"})
    send(e, "Publish", Topic="Stock/IBM", body=b"100", PubOpt="RetainPub")
    send(e, "Publish", Topic="Stock/IBM", body=b"80", PubOpt="RetainPub", queue="PRICES.POUNDS")
    d = send(e, "RegSub", Topic="Stock/IBM", reply_to="D")
    p = send(e, "RegSub", Topic="Stock/IBM", reply_to="P", SubPoint="Pounds")
    assert [m.mq.body for m in d.to("D")] == [b"100"]
    assert [m.mq.body for m in p.to("P")] == [b"80"]


def test_item_17_content_filter_on_body_and_usr():
    """pubsub.md item 17; seed 003 l.1856-1905, 7247-7267: filters on body fields and
    properties, per subscription; an invalid one is 3150."""
    e = make_engine()
    assert send(e, "RegSub", Topic="People", reply_to="SMITHS", Filter="Body.Name LIKE 'Smit%'").completion == "ok"
    assert send(e, "RegSub", Topic="People", reply_to="XSMITHS", Filter="Body.Person.Name LIKE 'Smit%'").completion == "ok"
    assert send(e, "RegSub", Topic="People", reply_to="BLUE", Filter="usr.colour = 'blue'").completion == "ok"
    body = b'<Person><Name>Smith</Name></Person>'
    mcd = Element("mcd")
    mcd.add("Msd", "xmlnsc")
    msg = psc.command_message("Publish", reply_to="R", Topic="People", body=body, usr={"colour": "red"})
    msg.mq.headers[0].folders.append(mcd)
    res = send_message(e, msg, STREAM)
    assert [p.queue for p in res.puts] == ["XSMITHS"]
    res = send(e, "Publish", Topic="People", body=b'{"Name": "Smithers"}')  # JSON guessed
    assert [p.queue for p in res.puts] == ["SMITHS"]
    res = send(e, "Publish", Topic="People", body=b'{"Name": "Jones"}', usr={"colour": "blue"})
    assert [p.queue for p in res.puts] == ["BLUE"]
    bad = send(e, "RegSub", Topic="People", reply_to="X", Filter="Body.Name LIKE")
    assert (bad.completion, bad.reasons) == ("error", [r.FILTER_ERROR])


def test_item_19_subscription_expiry_from_mqmd():
    """pubsub.md item 19; seed 003 l.6294-6296: the RegSub's MQMD Expiry bounds the
    subscription; an expired one is removed (with an event) and gets nothing."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", reply_to="SUBQ", expiry=50, now=1000.0).completion == "ok"
    assert len(send(e, "Publish", Topic="T", body=b"1", now=1004.0).to("SUBQ")) == 1
    late = send(e, "Publish", Topic="T", body=b"2", now=1006.0)
    assert late.to("SUBQ") == []
    assert any(json.loads(m.payload).get("cause") == "expired" for m in late.mqtt)
    assert e.subscriptions == {}


def test_item_19_removal_causes_deregister_and_queue_deleted():
    """pubsub.md item 19; seed 003 l.2789-2843, 1840-1854."""
    e = make_engine()
    send(e, "RegSub", Topic="A", reply_to="Q1")
    send(e, "RegSub", Topic="B", reply_to="Q2")
    gone = send(e, "DeregSub", Topic="A", reply_to="Q1")
    assert gone.completion == "ok" and json.loads(gone.mqtt[0].payload)["cause"] == "deregistered"
    events = e.remove_queue("QM1", "Q2")
    assert json.loads(events[0].payload)["cause"] == "queue_deleted"
    assert e.subscriptions == {}


@pytest.mark.parametrize("options, expected", [
    (None, 0), ("Pers", MQPER_PERSISTENT), ("NonPers", 0), ("Pers NonPers", 0), ("NonPers Pers", 1),
    ("PersAsQueue", 2),
])
def test_item_20_persistence_options_last_wins(options, expected):
    """pubsub.md item 20; seed 003 l.6302-6332, 6525-6529: PersAsPub is the default (this
    publication is non-persistent), the last persistence option given wins."""
    e = make_engine()
    params = {"RegOpt": options.split()} if options else {}
    assert send(e, "RegSub", Topic="T", reply_to="SUBQ", **params).completion == "ok"
    (msg,) = send(e, "Publish", Topic="T", body=b"x", persistence=0).to("SUBQ")
    assert msg.mq.md.Persistence == expected


def test_item_20_pers_as_pub_follows_publisher():
    """pubsub.md item 20; seed 003 l.6316-6320."""
    e = make_engine()
    send(e, "RegSub", Topic="T", reply_to="SUBQ")
    (msg,) = send(e, "Publish", Topic="T", body=b"x", persistence=1).to("SUBQ")
    assert msg.mq.md.Persistence == MQPER_PERSISTENT


def test_item_21_retained_replaced_and_kept_by_non_retained():
    """pubsub.md item 21; seed 003 l.2519-2527, 2565-2578."""
    e = make_engine()
    send(e, "Publish", Topic="Score", body=b"0-0", PubOpt="RetainPub")
    send(e, "Publish", Topic="Score", body=b"1-0", PubOpt="RetainPub")
    send(e, "Publish", Topic="Score", body=b"live")
    res = send(e, "RegSub", Topic="Score", reply_to="SUBQ")
    assert [m.mq.body for m in res.to("SUBQ")] == [b"1-0"]


def test_item_22_retained_expiry_counts_down_and_survives_snapshot():
    """pubsub.md item 22; seed 003 l.2618-2622, 7462-7467."""
    e = make_engine(input_queues={STREAM: "", "P.IN": "Point"})
    send(e, "Publish", Topic="T", body=b"x", PubOpt="RetainPub", expiry=100, now=1000.0, queue="P.IN")
    copy = make_engine(input_queues={STREAM: "", "P.IN": "Point"})
    copy.restore(json.loads(json.dumps(e.snapshot())))
    (msg,) = send(copy, "RegSub", Topic="T", reply_to="S", SubPoint="Point", now=1004.0).to("S")
    assert 55 <= msg.mq.md.Expiry <= 60  # 6 of 10 seconds left
    assert send(copy, "RegSub", Topic="T", reply_to="S2", SubPoint="Point", now=1011.0).to("S2") == []


def test_item_23_new_pubs_only_and_pub_on_req_only():
    """pubsub.md item 23; seed 003 l.2505-2517, 2553-2578, 6252-6266, 6333-6339."""
    e = make_engine()
    send(e, "Publish", Topic="T", body=b"old", PubOpt="RetainPub")
    assert send(e, "RegSub", Topic="T", reply_to="NEW", RegOpt="NewPubsOnly").to("NEW") == []
    assert send(e, "RegSub", Topic="T", reply_to="REQ", RegOpt="PubOnReqOnly").to("REQ") == []
    assert len(send(e, "RegSub", Topic="T", reply_to="ALL").to("ALL")) == 1
    live = send(e, "Publish", Topic="T", body=b"new")
    assert sorted(p.queue for p in live.puts) == ["ALL", "NEW"]
    upd = send(e, "ReqUpdate", Topic="T", reply_to="REQ")
    assert upd.completion == "ok" and [m.mq.body for m in upd.to("REQ")] == [b"old"]


def test_item_23_inform_if_retained():
    """pubsub.md item 23; seed 003 l.5930-5946, 6191-6201: IsRetainedPub only on what a
    RegSub/ReqUpdate sends, and a publisher may not set it (3084)."""
    e = make_engine()
    send(e, "Publish", Topic="T", body=b"r", PubOpt="RetainPub")
    (sent,) = send(e, "RegSub", Topic="T", reply_to="S", RegOpt="InformIfRet").to("S")
    assert sent.mq.first_rfh2().get("psc.PubOpt") == "IsRetainedPub"
    (live,) = send(e, "Publish", Topic="T", body=b"r2", PubOpt="RetainPub").to("S")
    assert live.mq.first_rfh2().get("psc.PubOpt") is None
    bad = send(e, "Publish", Topic="T", body=b"x", PubOpt="IsRetainedPub")
    assert bad.reasons == [r.PUB_OPTIONS_ERROR]


def test_item_24_request_update_rules():
    """pubsub.md item 24; seed 003 l.6555-6745: one Topic (wildcards allowed), a prior
    matching subscription (else 3073), 3077 when nothing is retained."""
    e = make_engine()
    assert send(e, "RegSub", Topic="Sport/#", reply_to="S", RegOpt="PubOnReqOnly").completion == "ok"
    assert send(e, "ReqUpdate", Topic="Sport/#", reply_to="S").reasons == [r.NO_RETAINED_MSG]
    send(e, "Publish", Topic="Sport/A", body=b"1", PubOpt="RetainPub")
    send(e, "Publish", Topic="Sport/B", body=b"2", PubOpt="RetainPub")
    ok = send(e, "ReqUpdate", Topic="Sport/#", reply_to="S")
    assert ok.completion == "ok" and sorted(ok.topics_to("S")) == ["Sport/A", "Sport/B"]
    assert send(e, "ReqUpdate", Topic="Sport/A", reply_to="S").reasons == [r.NOT_REGISTERED]
    assert send(e, "ReqUpdate", Topic=["Sport/#", "X"], reply_to="S").reasons == [r.RFH_DUPLICATE_PARM]


def test_item_25_delete_publication():
    """pubsub.md item 25; seed 003 l.5342-5441: Topic repeatable, wildcards allowed;
    unknown DelOpt 3087."""
    e = make_engine()
    for t in ("S/A", "S/B", "X"):
        send(e, "Publish", Topic=t, body=b"v", PubOpt="RetainPub")
    assert send(e, "DeletePub", Topic=["S/#"], DelOpt="Local").completion == "ok"
    assert send(e, "RegSub", Topic="#", reply_to="S").topics_to("S") == ["X"]
    assert send(e, "DeletePub", Topic="X", DelOpt="Bogus").reasons == [r.DEL_OPTIONS_ERROR]


def test_item_26_pscr_alone_is_ignored():
    """pubsub.md item 26; seed 003 l.5313-5341: an inbound pscr is ignored."""
    e = make_engine()
    pscr = Element("pscr")
    pscr.add("Completion", "ok")
    msg = Message(MQMessage(md=MQMD(ReplyToQ="R", MsgType=1), headers=[MQRFH2(folders=[pscr])]))
    assert e.handle_message(msg, CONTROL_QUEUE, 1.0) == []


def test_item_27_wrong_queue_and_parameter_errors():
    """pubsub.md item 27; seed 003 l.6947-7017, 7134-7162."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", queue=STREAM).reasons == [r.INCORRECT_Q]
    assert send(e, "Publish", Topic="T", queue=CONTROL_QUEUE).reasons == [r.INCORRECT_Q]
    assert send(e, "Subscribe", Topic="T", queue=CONTROL_QUEUE).reasons == [r.RFH_COMMAND_ERROR]
    assert send(e, "RegSub", queue=CONTROL_QUEUE).reasons == [r.RFH_PARM_MISSING]
    dup = psc.command_message("RegSub", reply_to="R", Topic="T")
    dup.mq.headers[0].folders[0].add("SubPoint", "a")
    dup.mq.headers[0].folders[0].add("SubPoint", "b")
    assert send_message(e, dup, CONTROL_QUEUE).reasons == [r.RFH_DUPLICATE_PARM]
    assert send(e, "Publish", Topic="T", SeqNum="seven").reasons == [r.RFH_PARM_ERROR]


def test_item_28_publish_options():
    """pubsub.md item 28; seed 003 l.5849-6072: PubTime/SeqNum passed through, OtherSubsOnly
    skips the publisher's own queue and needs a queue, unknown PubOpt 3084."""
    e = make_engine()
    send(e, "RegSub", Topic="Chat", reply_to="ME")
    send(e, "RegSub", Topic="Chat", reply_to="YOU")
    res = send(e, "Publish", Topic="Chat", body=b"hi", reply_to="ME", PubOpt="OtherSubsOnly",
               PubTime="2005010112000000", SeqNum="7")
    (msg,) = res.to("YOU")
    assert res.to("ME") == []
    rfh = msg.mq.first_rfh2()
    assert (rfh.get("psc.PubTime"), rfh.get("psc.SeqNum")) == ("2005010112000000", "7")
    no_queue = psc.command_message("Publish", msg_type=MQMT_DATAGRAM, Topic="Chat", PubOpt="OtherSubsOnly", body=b"x")
    assert send_message(e, no_queue, STREAM).puts == []  # refused (3076); nowhere to say so
    assert send(e, "Publish", Topic="Chat", PubOpt="Shout").reasons == [r.PUB_OPTIONS_ERROR]


def test_item_29_reg_options_and_names():
    """pubsub.md item 29; seed 003 l.6146-6405, 6436-6523: CorrelAsId zero 3080, FullResp
    one topic 3083, AddName needs SubName 3083, SubIdentity > 64 3154, unknown RegOpt 3083,
    SubName rules: an unnamed subscription re-registered with a SubName and no AddName is
    3152 (the SubName section, seed 6454-6460; docs/pubsub.md "Reason codes"), a blank
    name 3153."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", reply_to="S", RegOpt="CorrelAsId").reasons == [r.CORREL_ID_ERROR]
    assert send(e, "RegSub", Topic=["A", "B"], reply_to="S", RegOpt="FullResp").reasons == [r.REG_OPTIONS_ERROR]
    assert send(e, "RegSub", Topic="T", reply_to="S", RegOpt="AddName").reasons == [r.REG_OPTIONS_ERROR]
    assert send(e, "RegSub", Topic="T", reply_to="S", RegOpt="Sometimes").reasons == [r.REG_OPTIONS_ERROR]
    assert send(e, "RegSub", Topic="T", reply_to="S", SubIdentity="x" * 65).reasons == [r.SUB_IDENTITY_ERROR]
    assert send(e, "RegSub", Topic="T", reply_to="S").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="mine").reasons == [r.DUPLICATE_SUBSCRIPTION]
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="  ").reasons == [r.SUB_NAME_ERROR]
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="mine", RegOpt="AddName").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="S", SubName="other").reasons == [r.DUPLICATE_SUBSCRIPTION]
    full = send(e, "RegSub", Topic="T", reply_to="S", SubName="mine", SubUserData="note", RegOpt="FullResp")
    pscr = full.response.mq.first_rfh2().folder("pscr")
    assert (pscr.get("SubName"), pscr.get("SubUserData"), pscr.get("QName")) == ("mine", "note", "S")


def test_item_29_omitted_reg_opt_keeps_options_none_resets():
    """pubsub.md item 29; seed 6377-6405: RegOpt omitted on an existing subscription keeps its
    options; None resets them to the defaults."""
    e = make_engine()
    send(e, "RegSub", Topic="T", reply_to="S", RegOpt="PubOnReqOnly")
    send(e, "RegSub", Topic="T", reply_to="S")
    assert send(e, "Publish", Topic="T", body=b"x").puts == []
    send(e, "RegSub", Topic="T", reply_to="S", RegOpt="None")
    assert len(send(e, "Publish", Topic="T", body=b"x").puts) == 1


def test_item_29_shared_and_exclusive_joins():
    """pubsub.md item 29; seed 003 l.6160-6200, 7330-7361: 3155, 3156, 3157."""
    e = make_engine()
    base = dict(Topic="T", reply_to="S")
    assert send(e, "RegSub", SubIdentity="app1", RegOpt="JoinShared", **base).completion == "ok"
    assert send(e, "RegSub", SubIdentity="app1", RegOpt="JoinShared", **base).reasons == [r.ALREADY_JOINED]
    assert send(e, "RegSub", SubIdentity="app2", RegOpt="JoinShared", **base).completion == "ok"
    assert send(e, "RegSub", SubIdentity="app3", RegOpt="JoinExcl", **base).reasons == [r.SUBSCRIPTION_IN_USE]
    assert send(e, "DeregSub", SubIdentity="app2", RegOpt="LeaveOnly", **base).completion == "ok"
    assert send(e, "RegSub", SubIdentity="app1", RegOpt="JoinExcl", **base).completion == "ok"  # sole member upgrades
    assert send(e, "RegSub", SubIdentity="app2", RegOpt="JoinShared", **base).reasons == [r.SUBSCRIPTION_LOCKED]
    assert send(e, "RegSub", SubIdentity="app9", **base).reasons == [r.SUB_IDENTITY_ERROR]
    assert send(e, "DeregSub", SubIdentity="app1", RegOpt="LeaveOnly", **base).completion == "ok"
    # LeaveOnly keeps the subscription even with an empty identity set (seed 5695-5708) ...
    (kept,) = e.subscriptions.values()
    assert kept.identities == {}
    assert send(e, "DeregSub", SubIdentity="app1", **base).reasons == [r.SUB_IDENTITY_ERROR]
    # ... without LeaveOnly the last identity to leave takes the subscription with it (5604-5613)
    assert send(e, "RegSub", SubIdentity="app4", RegOpt="JoinShared", **base).completion == "ok"
    assert send(e, "RegSub", SubIdentity="app5", RegOpt="JoinShared", **base).completion == "ok"
    assert send(e, "DeregSub", SubIdentity="app4", **base).completion == "ok"
    assert [set(s.identities) for s in e.subscriptions.values()] == [{"app5"}]  # flow goes on for app5
    assert send(e, "DeregSub", SubIdentity="app5", **base).completion == "ok"
    assert e.subscriptions == {}


def test_item_30_deregister_rules():
    """pubsub.md item 30; seed 003 l.5443-5847: exact topic and filter strings, DeregAll,
    LeaveOnly needs SubIdentity, 3073 unknown, 3151 other user."""
    e = make_engine()
    send(e, "RegSub", Topic="A/#", reply_to="S", Filter="usr.x = 1")
    send(e, "RegSub", Topic="B", reply_to="S", SubPoint="P")
    assert send(e, "DeregSub", Topic="A/+", reply_to="S", Filter="usr.x = 1").reasons == [r.NOT_REGISTERED]
    assert send(e, "DeregSub", Topic="A/#", reply_to="S").reasons == [r.NOT_REGISTERED]
    assert send(e, "DeregSub", Topic="A/#", reply_to="S", Filter="usr.x = 1", user_id="bob").reasons == [r.WRONG_USER]
    assert send(e, "DeregSub", Topic="A/#", reply_to="S", RegOpt="LeaveOnly").reasons == [r.REG_OPTIONS_ERROR]
    assert send(e, "DeregSub", reply_to="S").reasons == [r.RFH_PARM_MISSING]
    assert send(e, "DeregSub", reply_to="S", RegOpt="DeregAll").completion == "ok"
    assert e.subscriptions == {}
    assert send(e, "DeregSub", reply_to="S", RegOpt="DeregAll").reasons == [r.NOT_REGISTERED]


def test_item_31_queue_defaults_and_errors():
    """pubsub.md item 31; seed 003 l.6407-6434: QMgrName defaults to ReplyToQMgr then the
    broker's; QName to ReplyToQ, which must not be blank (3076); unknown qmgr 3074."""
    e = make_engine()
    send(e, "RegSub", Topic="T", QName="", reply_to="R", msg_type=MQMT_DATAGRAM, report=MQRO_NAN)
    assert [s.subscriber.queue for s in e.subscriptions.values()] == ["R"]
    msg = psc.command_message("RegSub", reply_to="R", reply_to_qmgr="QM2", Topic="T2")
    assert send_message(e, msg, CONTROL_QUEUE).completion == "ok"
    assert [(s.subscriber.qmgr, s.subscriber.queue) for s in e.subscriptions.values() if s.topic == "T2"] == [("QM2", "R")]
    assert send(e, "RegSub", Topic="T", QMgrName="NOWHERE").reasons == [r.Q_MGR_NAME_ERROR]
    checked = make_engine(queue_check=lambda qmgr, queue: None if queue == "OK" else r.Q_NAME_ERROR)
    assert send(checked, "RegSub", Topic="T", QName="MISSING").reasons == [r.Q_NAME_ERROR]
    blank = psc.command_message("RegSub", msg_type=MQMT_DATAGRAM, report=MQRO_NAN, Topic="T")
    assert send_message(e, blank, CONTROL_QUEUE).response is None  # nowhere to answer


def test_item_33_response_layout():
    """pubsub.md item 33; seed 003 l.6767-6929: ok has no Response; error one Response and
    the psc echoed in a second folder; the body is never echoed."""
    e = make_engine()
    ok = send(e, "RegSub", Topic="T", reply_to="S")
    assert [f.name for f in ok.response.mq.headers[0].folders] == ["pscr"]
    err = send(e, "Publish", Topic="T", PubOpt="Shout", body=b"secret")
    folders = err.response.mq.headers[0].folders
    assert [f.name for f in folders] == ["pscr", "psc"]
    assert folders[1].get("PubOpt") == "Shout" and err.response.mq.body == b""
    assert psc.reply_reasons(err.response) == ("error", [r.PUB_OPTIONS_ERROR])


@pytest.mark.parametrize("msg_type, report, ok_sent, error_sent", [
    (1, 0, True, True),  # REQUEST: always
    (MQMT_DATAGRAM, 0, False, False),
    (MQMT_DATAGRAM, MQRO_PAN, True, False),
    (MQMT_DATAGRAM, MQRO_NAN, False, True),
    (MQMT_DATAGRAM, MQRO_PAN | MQRO_NAN, True, True),
])
def test_item_34_when_a_response_is_sent(msg_type, report, ok_sent, error_sent):
    """pubsub.md item 34; seed 003 l.7365-7444."""
    e = make_engine()
    ok = psc.command_message("RegSub", reply_to="R", msg_type=msg_type, report=report, Topic="T")
    bad = psc.command_message("RegSub", reply_to="R", msg_type=msg_type, report=report, Topic="T", RegOpt="Bad")
    assert (send_message(e, ok, CONTROL_QUEUE).response is not None) is ok_sent
    assert (send_message(e, bad, CONTROL_QUEUE).response is not None) is error_sent


def test_item_34_response_descriptor():
    """pubsub.md item 34; seed 003 l.7549-7610."""
    e = make_engine()
    e.qmgr_name = "A.VERY.LONG.QUEUE.MANAGER.NAME.OF.MORE.THAN.28"
    e.known_qmgrs.add(e.qmgr_name)
    cmd = psc.command_message("RegSub", reply_to="R", msg_id=b"command-1", expiry=600, persistence=1, Topic="T")
    cmd.mq.md.Priority = 7
    md = send_message(e, cmd, CONTROL_QUEUE).response.mq.md
    assert md.MsgType == MQMT_REPLY and md.CorrelId == b"command-1".ljust(24, b"\0")
    assert (md.Priority, md.Persistence, md.Expiry) == (7, 1, 600)
    assert md.PutApplName == e.qmgr_name[:28]


def test_item_35_publication_descriptor():
    """pubsub.md item 35; seed 003 l.7446-7547."""
    e = make_engine()
    send(e, "RegSub", Topic="T", reply_to="S")
    (one,) = send(e, "Publish", Topic="T", body=b"x").to("S")
    (two,) = send(e, "Publish", Topic="T", body=b"y").to("S")
    md = one.mq.md
    assert (md.Report, md.MsgType, md.Format.strip(), md.ReplyToQ, md.ReplyToQMgr, md.PutApplType) == \
        (0, MQMT_DATAGRAM, "MQHRF2", "", "QM1", MQAT_BROKER)
    assert md.MsgId != two.mq.md.MsgId
    assert Message.from_bytes(one.to_bytes()).mq.first_rfh2().get("psc.Topic") == "T"


def test_item_37_mqrfh_v1_commands():
    """pubsub.md item 37; seed 003 l.3596-3871, 2115-2125, 2221-2223, 4378-4384: MQRFH
    name/values are psc; a non-default stream prefixes the topic, and the prefix is removed
    again (the stream named in MQPSStreamName) when an MQRFH subscriber gets the publication;
    MQRFH wildcards are 3072."""
    e = make_engine()
    def v1(pairs, reply_to="V1Q"):
        return Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ=reply_to), headers=[MQRFH(name_values=pairs)], body=b"v"))
    res = send_message(e, v1([("MQPSCommand", "RegSub"), ("MQPSTopic", "Results"),
                              ("MQPSStreamName", "SAMPLE.STREAM")]), CONTROL_QUEUE)
    assert psc.reply_reasons(res.response) == ("ok", [])
    assert [s.topic for s in e.subscriptions.values()] == ["$SYS/STREAM/SAMPLE.STREAM/Results"]
    bad = send_message(e, v1([("MQPSCommand", "RegSub"), ("MQPSTopic", "Results/#")]), CONTROL_QUEUE)
    assert psc.reply_reasons(bad.response) == ("error", [r.TOPIC_ERROR])
    pub = send(e, "Publish", Topic="$SYS/STREAM/SAMPLE.STREAM/Results", body=b"2-1")
    (delivered,) = pub.to("V1Q")
    header = delivered.mq.headers[0]
    assert isinstance(header, MQRFH) and header.get("MQPSTopic") == "Results"
    assert header.get("MQPSStreamName") == "SAMPLE.STREAM"


def test_item_37_mqrfh_v1_subscribers_get_the_usr_folder_as_name_value_pairs():
    """pubsub.md item 37; seed 003 l.3648-3682, 3806-3812, 5167: an MQRFH subscriber receives
    the publication's application properties (the usr folder) as name/value strings after the
    MQPS fields; an MQRFH publisher's own name/value pairs (and MQPSStringData/MQPSIntData)
    become the usr folder of MQRFH2 subscribers, and compare as numbers in filters (they are
    text without a type, docs/pubsub.md)."""
    e = make_engine()
    v1_sub = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="V1Q"), headers=[MQRFH(name_values=[
        ("MQPSCommand", "RegSub"), ("MQPSTopic", "Paint")])]))
    assert psc.reply_reasons(send_message(e, v1_sub, CONTROL_QUEUE).response) == ("ok", [])
    assert send(e, "RegSub", Topic="Paint", reply_to="V2Q", Filter="usr.level > 5").completion == "ok"
    rfh2 = send(e, "Publish", Topic="Paint", body=b"tin", usr={"colour": "blue", "level": "3"})
    (to_v1,) = rfh2.to("V1Q")
    assert to_v1.mq.headers[0].name_values == [("MQPSCommand", "Publish"), ("MQPSTopic", "Paint"),
                                                ("colour", "blue"), ("level", "3")]
    assert rfh2.to("V2Q") == []  # a typed RFH2 string "3" is not a number
    v1_pub = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="R"), headers=[MQRFH(Format="MQSTR", name_values=[
        ("MQPSCommand", "Publish"), ("MQPSTopic", "Paint"), ("colour", "red"), ("level", "7"),
        ("MQPSStringData", "note"), ("MQPSRegOpts", "Anon")])], body=b"can"))
    res = send_message(e, v1_pub, STREAM)
    assert psc.reply_reasons(res.response) == ("ok", [])
    (to_v2,) = res.to("V2Q")
    usr = to_v2.mq.first_rfh2().folder("usr")
    assert [(c.name, c.value) for c in usr.children] == [("colour", "red"), ("level", "7"), ("MQPSStringData", "note")]
    (back_to_v1,) = res.to("V1Q")
    assert ("colour", "red") in back_to_v1.mq.headers[0].name_values


def test_item_10_and_4_topic_errors():
    """pubsub.md items 4, 9, 10; seed 003 l.3094-3096, 3122-3124: wildcard levels cannot be
    published, // is an error, USA# is a literal."""
    e = make_engine()
    assert send(e, "Publish", Topic="level0/+/x", body=b"x").reasons == [r.TOPIC_ERROR]
    assert send(e, "RegSub", Topic="a//b", reply_to="S").reasons == [r.TOPIC_ERROR]
    assert send(e, "RegSub", Topic="USA#", reply_to="S").completion == "ok"
    assert send(e, "Publish", Topic="USA#", body=b"x").topics_to("S") == ["USA#"]


def test_flow_publication_node_api():
    """pubsub.md item 16: a flow's Publication node publishes at its own point."""
    e = make_engine()
    send(e, "RegSub", Topic="T", reply_to="S", SubPoint="Flow")
    assert [p.queue for p in e.publish(Publication("T", b"x", "Flow"), 1.0)] == ["S"]


def test_item_18_local_subscriptions_and_publications_served_locally():
    """pubsub.md item 18; seed 003 l.5948-5956 (a Local publication goes to every subscriber
    registered at this broker with a matching subscription), 6242-6250 and 2749-2761 (a Local
    subscription gets the publications made at this broker), 5400-5408 (DelOpt Local deletes
    at this broker whether the publication was Local or not). With a single broker every
    publication is made here: Local and global behave alike towards this broker's subscribers
    and nothing is forwarded (broker networks, items 40-43, come later)."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T/#", reply_to="LOCAL", RegOpt="Local").completion == "ok"
    assert send(e, "RegSub", Topic="T/#", reply_to="GLOBAL").completion == "ok"
    assert [s.flags for s in e.subscriptions.values()] == [{"Local"}, set()]
    local = send(e, "Publish", Topic="T/a", body=b"l", PubOpt=["Local", "RetainPub"])
    assert sorted(p.queue for p in local.puts) == ["GLOBAL", "LOCAL"]
    assert local.mqtt == []  # without the MQTT bridge nothing leaves the engine: no forwarding
    assert sorted(p.queue for p in send(e, "Publish", Topic="T/b", body=b"g", PubOpt="RetainPub").puts) == \
        ["GLOBAL", "LOCAL"]
    flow = e.publish(Publication("T/c", b"from a flow"), 1000.0)
    assert sorted(p.queue for p in flow) == ["GLOBAL", "LOCAL"]
    late = send(e, "RegSub", Topic="T/#", reply_to="LATE", RegOpt="Local")
    assert sorted(late.topics_to("LATE")) == ["T/a", "T/b"]  # retained, Local or not
    assert send(e, "DeletePub", Topic="T/#", DelOpt="Local").completion == "ok"
    assert send(e, "RegSub", Topic="T/#", reply_to="LATER", RegOpt="Local").topics_to("LATER") == []


def test_item_5_virtual_root_cannot_be_used():
    """pubsub.md item 5; seed 003 l.3139-3145: the empty topic is refused (3072)."""
    e = make_engine()
    assert send(e, "Publish", Topic="", body=b"x").reasons == [r.TOPIC_ERROR]
    assert send(e, "RegSub", Topic="", reply_to="S").reasons == [r.TOPIC_ERROR]


def test_item_2_and_3_case_and_leading_slash():
    """pubsub.md items 2-3; seed 003 l.3108-3120: ACCOUNTS != Accounts; /USA matches /+ and
    +/+ but not +."""
    e = make_engine()
    for topic, queue in (("ACCOUNTS", "UPPER"), ("/+", "SLASH"), ("+/+", "TWO"), ("+", "ONE")):
        send(e, "RegSub", Topic=topic, reply_to=queue)
    assert [p.queue for p in send(e, "Publish", Topic="Accounts", body=b"x").puts] == ["ONE"]
    assert sorted(p.queue for p in send(e, "Publish", Topic="/USA", body=b"x").puts) == ["SLASH", "TWO"]


def test_item_19_subscriptions_of_a_deleted_queue_are_removed():
    """pubsub.md item 19; seed 003 l.2830-2843: when the subscriber queue goes away (a
    temporary dynamic queue closed), the broker removes its subscriptions."""
    queues = {"KEEP", "TEMP"}
    e = make_engine(queue_check=lambda qmgr, queue: None if queue in queues else r.Q_NAME_ERROR)
    send(e, "RegSub", Topic="T", QName="KEEP")
    send(e, "RegSub", Topic="T", QName="TEMP", RegOpt="NonPers")
    queues.discard("TEMP")
    (event,) = e.remove_unreachable()
    assert json.loads(event.payload)["queue"] == "TEMP" and json.loads(event.payload)["cause"] == "queue_deleted"
    assert [s.subscriber.queue for s in e.subscriptions.values()] == ["KEEP"]


def test_item_24_request_update_needs_the_same_topic_point_and_filter():
    """pubsub.md item 24; seed 003 l.6579-6581: the requester must have registered the same
    Topic, SubPoint and Filter; a different filter or point is 3073."""
    e = make_engine()
    send(e, "Publish", Topic="Sport/A", body=b'{"g": 2}', PubOpt="RetainPub")
    assert send(e, "RegSub", Topic="Sport/#", reply_to="S", Filter="Body.g > 1").completion == "ok"
    assert send(e, "ReqUpdate", Topic="Sport/#", reply_to="S").reasons == [r.NOT_REGISTERED]
    assert send(e, "ReqUpdate", Topic="Sport/#", reply_to="S", Filter="Body.g > 0").reasons == [r.NOT_REGISTERED]
    assert send(e, "ReqUpdate", Topic="Sport/#", reply_to="S", Filter="Body.g > 1",
                SubPoint="Other").reasons == [r.NOT_REGISTERED]
    ok = send(e, "ReqUpdate", Topic="Sport/#", reply_to="S", Filter="Body.g > 1")
    assert (ok.completion, ok.topics_to("S")) == ("ok", ["Sport/A"])


def test_item_25_default_deletes_everywhere_and_needs_publish_authority():
    """pubsub.md item 25; seed 003 l.5350-5362, 5418-5422: without DelOpt the retained
    publications are deleted at every broker (with one broker: here, whatever Local they were
    published with); each topic needs publish authority: the authorised ones are deleted and
    each refused one is a 3081 warning."""
    from relaymq.pubsub.topicacl import AclEntry, TopicAcl

    acl = TopicAcl.default()
    acl.set(AclEntry("Locked", "bob", "deny", "inherit", "inherit"))
    e = make_engine(acl=acl)
    send(e, "Publish", Topic="Open/a", body=b"1", PubOpt=["RetainPub", "Local"])
    send(e, "Publish", Topic="Locked/b", body=b"2", PubOpt="RetainPub")
    res = send(e, "DeletePub", Topic=["Open/#", "Locked/#"], user_id="bob")
    assert (res.completion, res.reasons) == ("warning", [r.NOT_AUTHORIZED])
    assert res.response.mq.first_rfh2().get("pscr.Response.Topic") == "Locked/#"
    assert send(e, "RegSub", Topic="#", reply_to="S").topics_to("S") == ["Locked/b"]
    assert send(e, "DeletePub", Topic="Locked/b", user_id="bob").reasons == [r.NOT_AUTHORIZED]
    assert send(e, "DeletePub", Topic="Locked/b", user_id="alice").completion == "ok"
    assert send(e, "RegSub", Topic="#", reply_to="S2").topics_to("S2") == []


def test_item_29_variable_user_id_registration():
    """pubsub.md item 29; seed 003 l.6341-6393: with VariableUserId any user may modify the
    subscription; without it only its user (3151); only the owner adds the option (3151); a
    RegSub without it removes it and fixes the userid again."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice").completion == "ok"
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="bob", RegOpt="VariableUserId").reasons == [r.WRONG_USER]
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice", RegOpt="VariableUserId").completion == "ok"
    changed = send(e, "RegSub", Topic="T", reply_to="S", user_id="bob", RegOpt=["VariableUserId", "NonPers"])
    assert changed.completion == "ok"
    (sub,) = e.subscriptions.values()
    assert (sub.user_id, sub.persistence, "VariableUserId" in sub.flags) == ("bob", "NonPers", True)
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="bob", RegOpt="Pers").completion == "ok"
    assert "VariableUserId" not in sub.flags  # the userid is fixed again: bob's
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice", RegOpt="Pers").reasons == [r.WRONG_USER]


def test_item_30_variable_user_id_on_deregister_and_request_update():
    """pubsub.md items 24, 30; seed 003 l.5730-5766, 6644-6682: another user deregisters or
    updates a VariableUserId subscription only by giving VariableUserId again (without it his
    own userid identifies the subscription: 3073); the owner need not; a SubName refers to it
    whatever the userid when it has VariableUserId."""
    e = make_engine()
    send(e, "Publish", Topic="T", body=b"kept", PubOpt="RetainPub")
    assert send(e, "RegSub", Topic="T", reply_to="S", user_id="alice", RegOpt=["VariableUserId", "PubOnReqOnly"],
                SubName="shared-feed").completion == "ok"
    assert send(e, "ReqUpdate", Topic="T", reply_to="S", user_id="bob").reasons == [r.NOT_REGISTERED]
    bob = send(e, "ReqUpdate", Topic="T", reply_to="S", user_id="bob", RegOpt="VariableUserId")
    assert (bob.completion, bob.topics_to("S")) == ("ok", ["T"])
    assert send(e, "ReqUpdate", Topic="T", reply_to="S", user_id="alice").topics_to("S") == ["T"]
    assert send(e, "ReqUpdate", Topic="T", SubName="shared-feed", user_id="carol").topics_to("S") == ["T"]
    assert send(e, "DeregSub", Topic="T", reply_to="S", user_id="bob").reasons == [r.NOT_REGISTERED]
    assert len(e.subscriptions) == 1
    assert send(e, "DeregSub", Topic="T", reply_to="S", user_id="bob", RegOpt="VariableUserId").completion == "ok"
    assert e.subscriptions == {}


def test_item_29_no_alter_keeps_the_attributes_of_an_existing_subscription():
    """pubsub.md item 29; seed 003 l.6268-6282: NoAlter leaves an existing subscription's
    options, SubUserData and expiry as they were; ignored when the subscription is new; a
    SubIdentity with a Join option is added anyway."""
    e = make_engine()
    msg = psc.command_message("RegSub", reply_to="S", user_id="alice", Topic="T", RegOpt=["Pers", "NoAlter"],
                              SubUserData="first", SubIdentity="app1", expiry=100)
    assert send_message(e, msg, CONTROL_QUEUE, now=1000.0).completion == "ok"  # new: NoAlter ignored
    (sub,) = e.subscriptions.values()
    assert (sub.persistence, sub.sub_user_data, sub.expiry_at) == ("Pers", "first", 1010.0)
    again = psc.command_message("RegSub", reply_to="S", user_id="alice", Topic="T",
                                RegOpt=["NonPers", "NoAlter", "JoinShared"], SubUserData="second",
                                SubIdentity="app2", expiry=-1)
    assert send_message(e, again, CONTROL_QUEUE, now=1005.0).completion == "ok"
    assert (sub.persistence, sub.sub_user_data, sub.expiry_at) == ("Pers", "first", 1010.0)
    assert set(sub.identities) == {"app1", "app2"}
    delivered = send(e, "Publish", Topic="T", body=b"x", now=1006.0).to("S")
    assert [m.mq.md.Persistence for m in delivered] == [MQPER_PERSISTENT]


def test_item_30_deregister_all_by_point_filter_and_topic_values():
    """pubsub.md item 30; seed 003 l.5463-5481, 5564-5667: DeregAll with only a SubPoint takes
    every subscription at that point; Filter may be repeated; each given value must
    deregister something (3073, 7056-7070); with Topic, SubPoint and Filter all given DeregAll
    is ignored; FullResp returns the subscription (one Topic, no DeregAll)."""
    e = make_engine()
    for topic, point, filt in (("A", "", ""), ("B", "", "usr.x = 1"), ("C", "P", ""), ("D", "P", "usr.x = 2")):
        params = {"SubPoint": point} if point else {}
        if filt:
            params["Filter"] = filt
        assert send(e, "RegSub", Topic=topic, reply_to="S", **params).completion == "ok"
    assert send(e, "DeregSub", reply_to="S", RegOpt="DeregAll", SubPoint="P").completion == "ok"
    assert sorted(s.topic for s in e.subscriptions.values()) == ["A", "B"]
    assert send(e, "DeregSub", reply_to="S", RegOpt="DeregAll", Filter=["usr.x = 1", "usr.x = 9"]).reasons == \
        [r.NOT_REGISTERED]
    assert len(e.subscriptions) == 2  # an error processes nothing (item 33)
    full = send(e, "DeregSub", Topic="B", reply_to="S", Filter="usr.x = 1", RegOpt="FullResp")
    assert full.completion == "ok"
    assert full.response.mq.first_rfh2().get("pscr.Filter") == "usr.x = 1"
    send(e, "RegSub", Topic="A", reply_to="S", SubPoint="P")
    exact = send(e, "DeregSub", Topic="A", reply_to="S", SubPoint="P", Filter="", RegOpt="DeregAll")
    assert exact.completion == "ok"  # all three given: DeregAll ignored, one subscription went
    assert sorted((s.topic, s.sub_point) for s in e.subscriptions.values()) == [("A", "")]


def test_item_27_a_message_without_a_command_is_answered_and_dead_lettered():
    """pubsub.md items 27, 36; seed 6940-6948: a message with no psc on the control queue is
    not dropped silently: 2336 to its ReplyToQ, and a DeadLetter action for the service (which
    puts it on SYSTEM.DEAD.LETTER.QUEUE with an MQDLH)."""
    from relaymq.pubsub.model import DeadLetter

    e = make_engine()
    plain = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="R", Format="MQSTR"), body=b"hello broker"))
    actions = e.handle_message(plain, CONTROL_QUEUE, 1.0)
    (response,) = [a for a in actions if getattr(a, "purpose", None) == "response"]
    assert psc.reply_reasons(response.message) == ("error", [r.RFH_COMMAND_ERROR])
    (dead,) = [a for a in actions if isinstance(a, DeadLetter)]
    assert (dead.message, dead.reason, dead.queue) == (plain, r.RFH_COMMAND_ERROR, CONTROL_QUEUE)
    reply = Message(MQMessage(md=MQMD(MsgType=MQMT_REPLY, ReplyToQ="R", Format="MQSTR"), body=b"x"))
    assert [type(a).__name__ for a in e.handle_message(reply, STREAM, 1.0)] == ["DeadLetter"]  # no reply to a reply


def test_item_28_publisher_queue_checked_only_when_named():
    """pubsub.md items 28, 31; seed 003 l.6021-6043: a Publish's QMgrName/QName name the
    publisher's own subscriber queue; a blank one is an error only with OtherSubsOnly (3076),
    an unknown queue manager is 3074 when a queue is named."""
    e = make_engine()
    assert send(e, "RegSub", Topic="T", reply_to="SUBQ").completion == "ok"
    blank = psc.command_message("Publish", msg_type=MQMT_DATAGRAM, Topic="T", QMgrName="QM1", body=b"b")
    assert [m.mq.body for m in send_message(e, blank, STREAM).to("SUBQ")] == [b"b"]  # published
    other_subs = psc.command_message("Publish", msg_type=MQMT_DATAGRAM, Topic="T", PubOpt="OtherSubsOnly", body=b"o")
    assert send_message(e, other_subs, STREAM).to("SUBQ") == []  # 3076: nothing published
    assert send(e, "Publish", Topic="T", QMgrName="NOWHERE", body=b"x").reasons == [r.Q_MGR_NAME_ERROR]
    assert send(e, "Publish", Topic="T", QMgrName="QM2", body=b"x").completion == "ok"
