"""JMS <-> MQMD/MQRFH2 mapping: one test per row and per note of seed 002 (formats-and-jms.md
items 15-20 and the digest decisions). Messages go through real bytes both ways."""

from __future__ import annotations

import time

import pytest

from relaymq.message import JMSMessage, MappingError, MQMessage, decode_message, encode_message, jms_to_mq, mq_to_jms
from relaymq.message.constants import MQMF_LAST_MSG_IN_GROUP, MQMF_MSG_IN_GROUP, MQMT_DATAGRAM, MQMT_REQUEST, MQRO_COA, MQRO_COD_WITH_DATA, MQRO_EXCEPTION, MQRO_PASS_MSG_ID
from relaymq.message.folders import parse_folder
from relaymq.message import constants
from relaymq.message.jms import NON_PERSISTENT, PERSISTENT
from relaymq.message.jms_mq import put_date_time
from relaymq.message.mqmd import MQMD

T0 = 1_700_000_000_120  # a JMSTimestamp, ms


def to_mq(jms: JMSMessage, **kw: object) -> MQMessage:
    return decode_message(encode_message(jms_to_mq(jms, **kw)))  # type: ignore[arg-type]


def round_trip(jms: JMSMessage) -> JMSMessage:
    return mq_to_jms(to_mq(jms))


def jms_folder(msg: MQMessage, name: str = "jms") -> dict[str, object]:
    rfh2 = msg.first_rfh2()
    folder = rfh2.folder(name) if rfh2 else None
    return {} if folder is None else {c.name: c.value for c in folder.children}


# -- header fields table (seed 002 l.36-51) -----------------------------------------------------
def test_row_jmscorrelationid_standard_id_uses_correlid_only() -> None:
    """Row JMSCorrelationID + note 1: 'ID:' + 48 hex digits maps straight into CorrelId, no jms.Cid."""
    cid = "ID:" + "0f" * 24
    msg = to_mq(JMSMessage(JMSCorrelationID=cid))
    assert msg.md.CorrelId == bytes.fromhex("0f" * 24) and "Cid" not in jms_folder(msg)
    assert mq_to_jms(msg).JMSCorrelationID == cid


def test_note1_byte_array_and_short_ids_are_padded_or_truncated() -> None:
    """Note 1: byte[] and 'ID:' hex are truncated or zero padded to the 24-byte CorrelId."""
    assert to_mq(JMSMessage(JMSCorrelationID=b"\x01\x02")).md.CorrelId == b"\x01\x02" + bytes(22)
    assert to_mq(JMSMessage(JMSCorrelationID="ID:" + "ab" * 30)).md.CorrelId == b"\xab" * 24


def test_note1_arbitrary_string_goes_to_jms_cid_and_first_24_utf8_bytes() -> None:
    """Note 1: any other string uses jms.Cid and its first 24 UTF-8 bytes go into CorrelId."""
    cid = "order-ünïcode-correlation-identifier"
    msg = to_mq(JMSMessage(JMSCorrelationID=cid))
    assert jms_folder(msg)["Cid"] == cid
    assert msg.md.CorrelId == cid.encode("utf-8")[:24]
    assert mq_to_jms(msg).JMSCorrelationID == cid


def test_row_jmsdeliverymode_persistence_and_dlv() -> None:
    """Row JMSDeliveryMode: Persistence and jms.Dlv (note 15 -> decision: Dlv holds 1 or 2)."""
    for mode, persistence in ((2, 1), (1, 0)):
        msg = to_mq(JMSMessage(JMSDeliveryMode=mode))
        assert msg.md.Persistence == persistence and jms_folder(msg)["Dlv"] == mode
        assert mq_to_jms(msg).JMSDeliveryMode == mode
    with pytest.raises(MappingError):
        jms_to_mq(JMSMessage(JMSDeliveryMode=3))


def test_row_jmsdestination_jms_dst_only() -> None:
    """Row JMSDestination: jms.Dst only (note 16)."""
    msg = to_mq(JMSMessage(JMSDestination="queue:///ORDERS"))
    assert jms_folder(msg)["Dst"] == "queue:///ORDERS"
    assert mq_to_jms(msg).JMSDestination == "queue:///ORDERS"


def test_row_jmsexpiration_expiry_and_exp() -> None:
    """Row JMSExpiration: MQMD Expiry (relative tenths of a second) and jms.Exp (absolute ms)."""
    msg = to_mq(JMSMessage(JMSTimestamp=T0, JMSExpiration=T0 + 60_000))
    assert msg.md.Expiry == 600 and jms_folder(msg)["Exp"] == T0 + 60_000
    assert mq_to_jms(msg).JMSExpiration == T0 + 60_000
    assert to_mq(JMSMessage()).md.Expiry == -1  # 0 = never expires = MQEI_UNLIMITED


def _clock_ms() -> int:
    return int(time.time() * 1000)


def test_jmsexpiration_without_timestamp_counts_from_now() -> None:
    """Row JMSExpiration, DECISION (docs/formats.md): Expiry counts from now_ms, else from
    JMSTimestamp, else - JMSTimestamp 0 means 'not set' - from the clock. Before, a message with
    no timestamp got Expiry = JMSExpiration/100 (1.7e10) and did not encode."""
    exact = to_mq(JMSMessage(JMSExpiration=T0 + 60_000), now_ms=T0)
    assert exact.md.Expiry == 600
    before = _clock_ms()
    msg = to_mq(JMSMessage(JMSExpiration=before + 60_000))
    after = _clock_ms()
    assert 600 - (after - before) // 100 - 1 <= msg.md.Expiry <= 600
    # now_ms beats JMSTimestamp (a forwarded message has less time left than when it was sent)
    assert to_mq(JMSMessage(JMSTimestamp=T0, JMSExpiration=T0 + 60_000), now_ms=T0 + 30_000).md.Expiry == 300


def test_jmsexpiration_limits() -> None:
    """An expired message expires at once (Expiry 1); one beyond MQLONG's range gets the
    longest Expiry MQ can hold instead of failing to encode."""
    assert to_mq(JMSMessage(JMSTimestamp=T0, JMSExpiration=T0 - 5_000)).md.Expiry == 1
    assert to_mq(JMSMessage(JMSTimestamp=T0, JMSExpiration=2**63 - 1)).md.Expiry == 2**31 - 1


def test_expiry_read_from_mqmd_only_counts_from_receipt() -> None:
    """From MQ without jms.Exp: JMSExpiration = (now_ms, else JMSTimestamp, else the clock) +
    Expiry * 100 - never Expiry * 100 alone, which would read as expired in 1970."""
    md_only = MQMessage(md=MQMD(Expiry=50))
    assert mq_to_jms(md_only, now_ms=T0).JMSExpiration == T0 + 5_000
    before = _clock_ms()
    got = mq_to_jms(md_only).JMSExpiration
    assert before + 5_000 <= got <= _clock_ms() + 5_000


def test_row_jmsmessageid_msgid() -> None:
    """Row JMSMessageID: MsgId; read back as 'ID:' + 48 hex digits."""
    mid = "ID:" + "c3" * 24
    msg = to_mq(JMSMessage(JMSMessageID=mid))
    assert msg.md.MsgId == b"\xc3" * 24
    assert mq_to_jms(msg).JMSMessageID == mid


def test_row_jmspriority_and_note2_pri_not_used() -> None:
    """Row JMSPriority + note 2: Priority only; jms.Pri is neither set nor read."""
    msg = to_mq(JMSMessage(JMSPriority=8))
    assert msg.md.Priority == 8 and "Pri" not in jms_folder(msg)
    msg.first_rfh2().folder("jms").add("Pri", 1, dt="i4")
    assert mq_to_jms(msg).JMSPriority == 8
    with pytest.raises(MappingError):
        jms_to_mq(JMSMessage(JMSPriority=10))


def test_row_jmsredelivered_and_note3_backout_count() -> None:
    """Row JMSRedelivered + note 3: a non-zero BackoutCount means redelivered."""
    msg = to_mq(JMSMessage())
    assert mq_to_jms(msg).JMSRedelivered is False
    msg.md.BackoutCount = 2
    assert mq_to_jms(msg).JMSRedelivered is True


def test_row_jmsreplyto_replytoq_replytoqmgr_and_rto() -> None:
    """Row JMSReplyTo: ReplyToQ + ReplyToQMgr and jms.Rto (note 16)."""
    msg = to_mq(JMSMessage(JMSReplyTo="queue://QM1/REPLY.Q"))
    assert (msg.md.ReplyToQ, msg.md.ReplyToQMgr) == ("REPLY.Q", "QM1")
    assert jms_folder(msg)["Rto"] == "queue://QM1/REPLY.Q" and msg.md.MsgType == MQMT_REQUEST
    assert mq_to_jms(msg).JMSReplyTo == "queue://QM1/REPLY.Q"


def test_row_jmstimestamp_putdate_puttime_and_tms() -> None:
    """Row JMSTimestamp: PutDate + PutTime (UTC, hundredths) and jms.Tms."""
    msg = to_mq(JMSMessage(JMSTimestamp=T0))
    assert (msg.md.PutDate, msg.md.PutTime) == ("20231114", "22132012")
    assert jms_folder(msg)["Tms"] == T0
    assert mq_to_jms(msg).JMSTimestamp == T0


def test_row_jmstype_mcd_type() -> None:
    """Row JMSType: mcd.Type."""
    msg = to_mq(JMSMessage(JMSType="car"))
    assert jms_folder(msg, "mcd")["Type"] == "car"
    assert mq_to_jms(msg).JMSType == "car"


def test_rfh2_field_wins_over_mqmd_field() -> None:
    """seed 002 l.34/l.66: converting from MQ, the RFH2 field is used when available."""
    msg = to_mq(JMSMessage(JMSReplyTo="queue://QM1/A", JMSTimestamp=T0, JMSDeliveryMode=1))
    msg.md.ReplyToQ, msg.md.PutDate, msg.md.Persistence = "B", "19990101", 1
    jms = mq_to_jms(msg)
    assert (jms.JMSReplyTo, jms.JMSTimestamp, jms.JMSDeliveryMode) == ("queue://QM1/A", T0, 1)


# -- JMS-defined properties table (seed 002 l.68-79) -------------------------------------------
def _with(**props: object) -> JMSMessage:
    jms = JMSMessage()
    for k, v in props.items():
        jms.properties[k] = v
    return jms


def test_row_jmsxappid_putapplname() -> None:
    """Row JMSXAppID: PutApplName."""
    msg = to_mq(_with(JMSXAppID="orders-app"))
    assert msg.md.PutApplName == "orders-app" and mq_to_jms(msg).properties["JMSXAppID"] == "orders-app"


def test_row_jmsxdeliverycount_is_backoutcount_plus_one() -> None:
    """Row JMSXDeliveryCount; digest decision: JMSXDeliveryCount = BackoutCount + 1."""
    msg = to_mq(_with(JMSXDeliveryCount=3))
    assert msg.md.BackoutCount == 2
    assert mq_to_jms(msg).properties["JMSXDeliveryCount"] == 3


def test_row_jmsxgroupid_note4_standard_and_arbitrary() -> None:
    """Row JMSXGroupID + note 4: 'ID:' hex maps into GroupId; other strings use jms.Gid."""
    gid = "ID:" + "11" * 24
    msg = to_mq(_with(JMSXGroupID=gid))
    assert msg.md.GroupId == b"\x11" * 24 and "Gid" not in jms_folder(msg)
    assert mq_to_jms(msg).properties["JMSXGroupID"] == gid
    msg = to_mq(_with(JMSXGroupID="batch-2024-01-02-overnight-run"))
    assert jms_folder(msg)["Gid"] == "batch-2024-01-02-overnight-run"
    assert msg.md.GroupId == b"batch-2024-01-02-overnig"
    assert mq_to_jms(msg).properties["JMSXGroupID"] == "batch-2024-01-02-overnight-run"


def test_note5_group_sets_msg_in_group_flag() -> None:
    """Note 5: setting JMSXGroupID sets MQMF_MSG_IN_GROUP."""
    assert to_mq(_with(JMSXGroupID="g")).md.MsgFlags & MQMF_MSG_IN_GROUP
    assert not to_mq(_with()).md.MsgFlags & MQMF_MSG_IN_GROUP


def test_row_jmsxgroupseq_msgseqnumber_and_seq() -> None:
    """Row JMSXGroupSeq: MsgSeqNumber and jms.Seq."""
    msg = to_mq(_with(JMSXGroupID="g", JMSXGroupSeq=7))
    assert msg.md.MsgSeqNumber == 7 and jms_folder(msg)["Seq"] == 7
    assert mq_to_jms(msg).properties["JMSXGroupSeq"] == 7


def test_row_jmsxuserid_useridentifier() -> None:
    """Row JMSXUserID: UserIdentifier."""
    msg = to_mq(_with(JMSXUserID="alice"))
    assert msg.md.UserIdentifier == "alice" and mq_to_jms(msg).properties["JMSXUserID"] == "alice"


# -- provider-specific properties table (seed 002 l.86-149) ------------------------------------
@pytest.mark.parametrize("name", ["JMS_TOG_ARM_Correlator", "JMS_IBM_ArmCorrelator"])
def test_row_arm_correlator_and_note6(name: str) -> None:
    """Rows JMS_IBM_ArmCorrelator / JMS_TOG_ARM_Correlator + note 6: mqext.Arm; read back
    under the preferred name JMS_TOG_ARM_Correlator."""
    msg = to_mq(_with(**{name: "arm-1"}))
    assert jms_folder(msg, "mqext")["Arm"] == "arm-1"
    assert mq_to_jms(msg).properties["JMS_TOG_ARM_Correlator"] == "arm-1"


def test_row_rmcorrelator_mqext_wrm() -> None:
    """Row JMS_IBM_RMCorrelator: mqext.Wrm."""
    msg = to_mq(_with(JMS_IBM_RMCorrelator="wrm-9"))
    assert jms_folder(msg, "mqext")["Wrm"] == "wrm-9"
    assert mq_to_jms(msg).properties["JMS_IBM_RMCorrelator"] == "wrm-9"


def test_rows_character_set_encoding_format_and_note7() -> None:
    """Rows JMS_IBM_Character_Set/Encoding/Format + note 7: they describe the payload after
    the RFH2 (or after the MQMD when there is no RFH2)."""
    jms = JMSMessage(message_type="jms_text", body="héllo")
    jms.properties["JMS_IBM_Character_Set"] = "850"
    jms.properties["JMS_IBM_Encoding"] = 273
    msg = to_mq(jms)
    rfh2 = msg.first_rfh2()
    assert (rfh2.CodedCharSetId, rfh2.Encoding, rfh2.Format) == (850, 273, "MQSTR")
    assert msg.body == "héllo".encode("cp850") and msg.md.CodedCharSetId == 1208
    back = mq_to_jms(msg)
    assert (back.properties["JMS_IBM_Character_Set"], back.properties["JMS_IBM_Encoding"], back.properties["JMS_IBM_Format"]) == ("850", 273, "MQSTR")
    assert back.body == "héllo"
    no_rfh2 = to_mq(jms, with_rfh2=False)
    assert (no_rfh2.md.CodedCharSetId, no_rfh2.md.Format) == (850, "MQSTR")
    assert mq_to_jms(no_rfh2).properties["JMS_IBM_Character_Set"] == "850"


def test_row_feedback_msgtype_putdate_puttime() -> None:
    """Rows JMS_IBM_Feedback, JMS_IBM_MsgType, JMS_IBM_PutDate, JMS_IBM_PutTime <-> MQMD."""
    msg = to_mq(_with(JMS_IBM_Feedback=258, JMS_IBM_MsgType=2, JMS_IBM_PutDate="20240102", JMS_IBM_PutTime="10111213"))
    assert (msg.md.Feedback, msg.md.MsgType, msg.md.PutDate, msg.md.PutTime) == (258, 2, "20240102", "10111213")
    props = mq_to_jms(msg).properties
    assert (props["JMS_IBM_Feedback"], props["JMS_IBM_MsgType"], props["JMS_IBM_PutDate"], props["JMS_IBM_PutTime"]) == (258, 2, "20240102", "10111213")


def test_row_last_msg_in_group_and_note8() -> None:
    """Row JMS_IBM_Last_Msg_In_Group + note 8: the MQMF_LAST_MSG_IN_GROUP flag of MsgFlags."""
    msg = to_mq(_with(JMSXGroupID="g", JMS_IBM_Last_Msg_In_Group=True))
    assert msg.md.MsgFlags & MQMF_LAST_MSG_IN_GROUP
    assert mq_to_jms(msg).properties["JMS_IBM_Last_Msg_In_Group"] is True
    assert mq_to_jms(to_mq(_with(JMSXGroupID="g"))).properties["JMS_IBM_Last_Msg_In_Group"] is False


def test_note9_mqmd_properties_override_only_when_set_and_are_always_read() -> None:
    """Note 9: JMS_IBM_MQMD_* set the MQMD field only if explicitly set; on receipt they are
    always set from the MQMD."""
    plain = to_mq(JMSMessage(JMSCorrelationID="ID:" + "01" * 24))
    assert plain.md.CorrelId == b"\x01" * 24
    props = mq_to_jms(plain).properties
    for name in ("JMS_IBM_MQMD_CorrelId", "JMS_IBM_MQMD_MsgId", "JMS_IBM_MQMD_Persistence", "JMS_IBM_MQMD_ReplyToQ", "JMS_IBM_MQMD_ReplyToQMgr"):
        assert name in props
    assert props["JMS_IBM_MQMD_CorrelId"] == b"\x01" * 24


def _received_request() -> JMSMessage:
    """A request as an IBM MQ application puts it: MQMD only, with every field note 9 names."""
    md = MQMD(
        Format="MQSTR", CodedCharSetId=1208, MsgType=MQMT_REQUEST, Feedback=7, Persistence=1,
        MsgId=b"\x11" * 24, CorrelId=b"\x22" * 24, ReplyToQ="OLD.REPLY", ReplyToQMgr="OLDQM",
        PutDate="20200101", PutTime="01020300", BackoutCount=2,
    )
    return mq_to_jms(decode_message(encode_message(MQMessage(md=md, body=b"hello"))))


def test_note9_received_mqmd_properties_do_not_override_when_sent_on() -> None:
    """Note 9 (receive-modify-send): the JMS_IBM_MQMD_* (and PutDate/PutTime/MsgType/Feedback,
    JMSXDeliveryCount) filled on receipt are not 'explicitly set'; the new JMSCorrelationID,
    delivery mode, reply-to and timestamp decide the new MQMD."""
    jms = _received_request()
    assert jms.properties["JMS_IBM_MQMD_CorrelId"] == b"\x22" * 24  # note 9: always read
    assert not jms.properties.is_explicit("JMS_IBM_MQMD_CorrelId")
    jms.JMSCorrelationID = "ID:" + "33" * 24
    jms.JMSMessageID = "ID:" + "44" * 24
    jms.JMSDeliveryMode = NON_PERSISTENT
    jms.JMSReplyTo = None
    jms.JMSTimestamp = T0
    md = to_mq(jms).md
    assert md.CorrelId == b"\x33" * 24
    assert md.MsgId == b"\x44" * 24
    assert md.Persistence == 0
    assert (md.ReplyToQ, md.ReplyToQMgr) == ("", "")
    assert (md.MsgType, md.Feedback) == (MQMT_DATAGRAM, 0)
    assert (md.PutDate, md.PutTime) == put_date_time(T0)
    assert md.BackoutCount == 0  # a new message: JMSXDeliveryCount was the provider's


def test_note9_explicitly_set_on_a_received_message_overrides() -> None:
    """Note 9, the other side: setting a JMS_IBM_MQMD_* property after receipt (even to the value
    it already had) is explicit, and wins over the JMS header field."""
    jms = _received_request()
    jms.JMSCorrelationID = "ID:" + "33" * 24
    jms.properties.set("JMS_IBM_MQMD_CorrelId", b"\x22" * 24)
    jms.properties.set("JMS_IBM_MQMD_ReplyToQ", "NEW.REPLY")
    jms.properties.set("JMS_IBM_MsgType", 2, "i4")
    assert jms.properties.is_explicit("JMS_IBM_MQMD_CorrelId")
    md = to_mq(jms).md
    assert md.CorrelId == b"\x22" * 24
    assert (md.ReplyToQ, md.ReplyToQMgr, md.MsgType) == ("NEW.REPLY", "OLDQM", 2)


def test_note9_mqmd_properties_of_the_wrong_type_are_mapping_errors() -> None:
    """An explicit JMS_IBM_MQMD_CorrelId must be a byte[]; a string that is not 'ID:'+hex is a
    MappingError naming the property, not a TypeError from bytes()."""
    jms = JMSMessage()
    jms.properties.set("JMS_IBM_MQMD_CorrelId", "not bytes")
    with pytest.raises(MappingError, match="JMS_IBM_MQMD_CorrelId"):
        jms_to_mq(jms)
    jms = JMSMessage()
    jms.properties.set("JMS_IBM_MQMD_Persistence", "high")
    with pytest.raises(MappingError, match="JMS_IBM_MQMD_Persistence"):
        jms_to_mq(jms)


def test_note10_mqmd_correlid_overrides_correlid_not_cid() -> None:
    """Note 10: JMS_IBM_MQMD_CorrelId sets CorrelId regardless of JMSCorrelationID and leaves
    jms.Cid alone; on receipt it is the CorrelId regardless of jms.Cid."""
    jms = JMSMessage(JMSCorrelationID="free text id")
    jms.properties.set("JMS_IBM_MQMD_CorrelId", b"\x09" * 24)
    msg = to_mq(jms)
    assert msg.md.CorrelId == b"\x09" * 24 and jms_folder(msg)["Cid"] == "free text id"
    back = mq_to_jms(msg)
    assert back.JMSCorrelationID == "free text id" and back.properties["JMS_IBM_MQMD_CorrelId"] == b"\x09" * 24


def test_note11_mqmd_msgid_replaces_message_id() -> None:
    """Note 11: JMS_IBM_MQMD_MsgId sets MsgId and replaces the JMSMessageID."""
    jms = JMSMessage(JMSMessageID="ID:" + "aa" * 24)
    jms.properties.set("JMS_IBM_MQMD_MsgId", b"\x05" * 24)
    msg = to_mq(jms)
    assert msg.md.MsgId == b"\x05" * 24
    back = mq_to_jms(msg)
    assert back.JMSMessageID == "ID:" + "05" * 24 and back.properties["JMS_IBM_MQMD_MsgId"] == b"\x05" * 24


def test_note12_mqmd_persistence_overrides_not_dlv() -> None:
    """Note 12: JMS_IBM_MQMD_Persistence sets Persistence; jms.Dlv keeps JMSDeliveryMode."""
    jms = JMSMessage(JMSDeliveryMode=2)
    jms.properties.set("JMS_IBM_MQMD_Persistence", 0, "i4")
    msg = to_mq(jms)
    assert msg.md.Persistence == 0 and jms_folder(msg)["Dlv"] == 2
    back = mq_to_jms(msg)
    assert back.JMSDeliveryMode == 2 and back.properties["JMS_IBM_MQMD_Persistence"] == 0


def test_note13_mqmd_replyto_overrides_not_rto() -> None:
    """Note 13: JMS_IBM_MQMD_ReplyToQ/QMgr set the MQMD fields; jms.Rto keeps JMSReplyTo."""
    jms = JMSMessage(JMSReplyTo="queue://QM1/A")
    jms.properties.set("JMS_IBM_MQMD_ReplyToQ", "OTHER")
    jms.properties.set("JMS_IBM_MQMD_ReplyToQMgr", "QM2")
    msg = to_mq(jms)
    assert (msg.md.ReplyToQ, msg.md.ReplyToQMgr, jms_folder(msg)["Rto"]) == ("OTHER", "QM2", "queue://QM1/A")
    back = mq_to_jms(msg)
    assert back.JMSReplyTo == "queue://QM1/A"
    assert (back.properties["JMS_IBM_MQMD_ReplyToQ"], back.properties["JMS_IBM_MQMD_ReplyToQMgr"]) == ("OTHER", "QM2")


def test_note14_report_properties() -> None:
    """Row JMS_IBM_Report_* + note 14: each property carries its bits of MQMD Report."""
    msg = to_mq(_with(JMS_IBM_Report_COA=MQRO_COA, JMS_IBM_Report_COD=MQRO_COD_WITH_DATA, JMS_IBM_Report_Exception=MQRO_EXCEPTION, JMS_IBM_Report_Pass_Msg_ID=MQRO_PASS_MSG_ID))
    assert msg.md.Report == MQRO_COA | MQRO_COD_WITH_DATA | MQRO_EXCEPTION | MQRO_PASS_MSG_ID
    props = mq_to_jms(msg).properties
    assert (props["JMS_IBM_Report_COA"], props["JMS_IBM_Report_COD"], props["JMS_IBM_Report_Exception"]) == (MQRO_COA, MQRO_COD_WITH_DATA, MQRO_EXCEPTION)
    assert "JMS_IBM_Report_NAN" not in props


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("JMS_IBM_Report_Expiration", constants.MQRO_EXPIRATION),
        ("JMS_IBM_Report_Expiration", constants.MQRO_EXPIRATION_WITH_DATA),
        ("JMS_IBM_Report_Expiration", constants.MQRO_EXPIRATION_WITH_FULL_DATA),
        ("JMS_IBM_Report_PAN", constants.MQRO_PAN),
        ("JMS_IBM_Report_NAN", constants.MQRO_NAN),
        ("JMS_IBM_Report_Pass_Correl_ID", constants.MQRO_PASS_CORREL_ID),
        ("JMS_IBM_Report_Discard_Msg", constants.MQRO_DISCARD_MSG),
    ],
)
def test_note14_each_remaining_report_property(name: str, value: int) -> None:
    """Note 14: Report_Expiration (three levels), PAN, NAN, Pass_Correl_ID and Discard_Msg each
    set exactly their MQMD Report bits and are read back from them; no other Report_* appears."""
    msg = to_mq(_with(**{name: value}))
    assert msg.md.Report == value
    props = mq_to_jms(msg).properties
    assert props[name] == value
    assert [p for p in props if p.startswith("JMS_IBM_Report_")] == [name]


def test_note14_bits_outside_a_property_mask_are_not_set() -> None:
    """Note 14: a Report_* property carries only its own bits (a PAN property cannot set COA)."""
    assert to_mq(_with(JMS_IBM_Report_PAN=constants.MQRO_PAN | constants.MQRO_COA)).md.Report == constants.MQRO_PAN


def test_row_jms_ibm_format_explicitly_set_outbound() -> None:
    """Row JMS_IBM_Format + note 7: an application-set Format names the payload after the RFH2
    (or, without an RFH2, goes in the MQMD), whatever the body class would default to."""
    jms = JMSMessage(message_type="jms_bytes", body=b"\x01\x02")
    jms.properties.set("JMS_IBM_Format", "MYFMT")
    msg = to_mq(jms)
    assert (msg.md.Format, msg.first_rfh2().Format, msg.body_format) == ("MQHRF2", "MYFMT", "MYFMT")
    assert mq_to_jms(msg).properties["JMS_IBM_Format"] == "MYFMT"
    assert to_mq(jms, with_rfh2=False).md.Format == "MYFMT"
    text = JMSMessage(message_type="jms_text", body="x")
    text.properties.set("JMS_IBM_Format", "MQSTR   ")  # blank padded as MQ writes it
    assert to_mq(text).body_format == "MQSTR"


@pytest.mark.parametrize(("persistence", "mode"), [(0, NON_PERSISTENT), (1, PERSISTENT), (2, NON_PERSISTENT)])
def test_note15_persistence_as_queue_default_reads_as_non_persistent(persistence: int, mode: int) -> None:
    """Note 15, DECISION: MQPER_PERSISTENCE_AS_Q_DEF (2) reads as NON_PERSISTENT (the default of
    a queue); jms.Dlv, when present, wins (item 18)."""
    md_only = MQMessage(md=MQMD(Persistence=persistence))
    assert mq_to_jms(decode_message(encode_message(md_only))).JMSDeliveryMode == mode
    jms = JMSMessage(JMSDeliveryMode=PERSISTENT)
    jms.properties.set("JMS_IBM_MQMD_Persistence", persistence)  # the MQMD says otherwise...
    assert mq_to_jms(to_mq(jms)).JMSDeliveryMode == PERSISTENT  # ...jms.Dlv decides


def test_note16_topic_reply_to_travels_in_rto_only() -> None:
    """Note 16, DECISION: a topic:// JMSReplyTo has no MQMD form (ReplyToQ names a queue): the
    MQMD reply fields stay blank, jms.Rto carries it and it reads back as the topic; the
    message is still a request. Without an RFH2 it is lost."""
    jms = JMSMessage(JMSReplyTo="topic://prices/replies/" + "x" * 60)
    msg = to_mq(jms)
    assert (msg.md.ReplyToQ, msg.md.ReplyToQMgr, msg.md.MsgType) == ("", "", MQMT_REQUEST)
    assert jms_folder(msg)["Rto"] == jms.JMSReplyTo
    assert mq_to_jms(msg).JMSReplyTo == jms.JMSReplyTo
    assert mq_to_jms(to_mq(jms, with_rfh2=False)).JMSReplyTo is None


# -- application properties, omitted RFH2, best guess (seed 002 l.17-25) ------------------------
def test_application_properties_keep_their_types_in_usr() -> None:
    """Item 11: application properties travel in usr with dt types and come back typed."""
    jms = JMSMessage()
    for name, value, dt in (("s", "x", None), ("b", True, None), ("i1", 5, "i1"), ("i2", 300, "i2"), ("l", 2**40, None), ("f", 2.5, "r4"), ("d", 1e100, None), ("c", "Z", "char"), ("h", b"\x00\xff", None)):
        jms.properties.set(name, value, dt)
    jms.properties.set("nothing", None)
    back = round_trip(jms)
    for name in ("s", "b", "i1", "i2", "l", "f", "d", "c", "h", "nothing"):
        assert back.properties[name] == jms.properties[name], name
        assert back.properties.dt(name) == jms.properties.dt(name), name


def test_receiver_without_rfh2_loses_rfh2_only_fields() -> None:
    """seed 002 l.19 / item 20: with the RFH2 omitted, RFH2-only fields are lost."""
    jms = JMSMessage(message_type="jms_text", body="hi", JMSDestination="queue:///Q", JMSType="car")
    jms.properties["colour"] = "blue"
    msg = to_mq(jms, with_rfh2=False)
    assert msg.headers == [] and msg.md.Format == "MQSTR"
    back = mq_to_jms(msg)
    assert back.JMSDestination is None and back.JMSType is None and "colour" not in back.properties
    assert back.body == "hi"


def test_best_guess_from_mqmd_only() -> None:
    """seed 002 l.23 / item 20: a message with no RFH2 gets a best-guess JMS header from the MQMD."""
    from relaymq.message import MQMD

    md = MQMD(Format="MQSTR", CodedCharSetId=819, Priority=6, Persistence=1, ReplyToQ="R", ReplyToQMgr="QM", PutDate="20240102", PutTime="03040506", MsgId=b"\x01" * 24, BackoutCount=1, Expiry=50)
    jms = mq_to_jms(decode_message(encode_message(MQMessage(md=md, body="café".encode("latin-1")))))
    assert (jms.message_type, jms.body, jms.JMSPriority, jms.JMSDeliveryMode) == ("jms_text", "café", 6, 2)
    assert jms.JMSReplyTo == "queue://QM/R" and jms.JMSRedelivered is True
    assert jms.JMSTimestamp == 1704164645060 and jms.JMSExpiration == jms.JMSTimestamp + 5000
    assert mq_to_jms(MQMessage(md=MQMD(), body=b"\x00")).message_type == "jms_bytes"


@pytest.mark.parametrize(
    ("kind", "body", "types"),
    [
        ("jms_text", "<x>ünï</x>", None), ("jms_bytes", b"\x00\x01\xff", None), ("jms_object", b"\xac\xed\x00\x05", None),
        ("jms_none", None, None), ("jms_map", {"a": 1, "b": "x", "c": 2.5}, {"a": "i2", "b": "string", "c": "r8"}),
        ("jms_stream", ["x", 5, True], ["string", "i8", "boolean"]),
    ],
)
def test_six_message_types_round_trip(kind: str, body: object, types: object) -> None:
    """Item 9: the six JMS message types survive JMS -> MQ -> JMS, class in mcd.Msd."""
    jms = JMSMessage(message_type=kind, body=body, body_types=types)  # type: ignore[arg-type]
    msg = to_mq(jms)
    assert jms_folder(msg, "mcd")["Msd"] == kind
    back = mq_to_jms(msg)
    assert (back.message_type, back.body) == (kind, body)
    if types is not None:
        assert back.body_types == types


def test_broker_domain_in_mcd_becomes_mcd_uri_jmstype() -> None:
    """Item 8 decision: an MQ message with mcd.Msd = a broker domain reads as a TextMessage
    whose JMSType is the mcd URI (which the JMS side's parser choice understands)."""
    from relaymq.message import MQMD, MQRFH2

    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder("<mcd><Msd>mrm</Msd><Set>S1</Set><Type>T1</Type><Fmt>XML1</Fmt></mcd>")])
    jms = mq_to_jms(MQMessage(md=MQMD(CodedCharSetId=1208), headers=[rfh2], body=b"<a/>"))
    assert jms.message_type == "jms_text" and jms.JMSType == "mcd://mrm/S1/T1?format=XML1"
