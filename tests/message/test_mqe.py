"""MQeFields (everyplace.md item 1; seed 004 l.386-492) and the JMS <-> MQe mapping
(formats-and-jms.md item 21; seed 004 l.6964-7216): one test per mapping rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.message import FormatError, JMSMessage, MQeFields, MQeFieldsError, dump, dump_to_string, jms_to_mqe, mqe_to_jms, restore, restore_from_string
from relaymq.message.jms_mqe import message_id
from relaymq.message.mqe_dump import MAGIC


# -- names and types ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", " a", "a b", "a{", "a}", "a[", "a]", "a#", "a(", "a)", "a;", "a,", "a'", 'a"', "a=", "é", "a\x7f\x80"])
def test_invalid_names(name: str) -> None:
    """Seed 004 l.410-415: at least 1 char, 0x21-0x7F, none of { } [ ] # ( ) ; , ' " =."""
    with pytest.raises(MQeFieldsError):
        MQeFields().put_int(name, 1)


def test_valid_names_and_uniqueness() -> None:
    """Names are unique: a put of an existing name replaces it."""
    f = MQeFields().put_int("Int1", 1).put_int("a.b-c_d!~\x7f", 2).put_ascii("Int1", "x")
    assert len(f) == 2 and f.get("Int1") == "x" and f.get_type("Int1") == "ascii"


@pytest.mark.parametrize(
    ("kind", "value"),
    [("byte", 128), ("short", 2**15), ("int", 2**31), ("long", 2**63), ("ascii", "é"), ("boolean", 1), ("float", "x"), ("arrayOfInt", [1, 2**31]), ("arrayOfByte", [1]), ("fields", {}), ("nosuch", 1)],
)
def test_values_checked_against_type(kind: str, value: object) -> None:
    """Types of seed 004 l.417-460: a value its type cannot carry is refused."""
    with pytest.raises(MQeFieldsError):
        MQeFields().put("x", kind, value)


def _sample() -> MQeFields:
    inner = MQeFields().put_boolean("ok", True).put("deep", "fields", MQeFields().put_unicode("u", "ünï"))
    return (
        MQeFields().put_ascii("a", "text").put_unicode("u", "ünïcode\n").put_byte("b", -128).put_short("s", 32767)
        .put_int("i", -(2**31)).put_long("l", 2**63 - 1).put_float("f", 2.5).put_double("d", 1e300)
        .put_boolean("t", False).put_array_of_byte("ab", b"\x00\xff").put("as", "arrayOfShort", [1, -2])
        .put("ai", "arrayOfInt", [2**31 - 1]).put("al", "arrayOfLong", [-(2**63)]).put("af", "arrayOfFloat", [0.5])
        .put("ad", "arrayOfDouble", [1.25, -3.5]).put_fields("nested", inner)
    )


def test_binary_dump_round_trips_every_type_and_nesting() -> None:
    """Seed 004 l.468-472 + digest decision: the product's own dump round-trips every type,
    nested fields and typed arrays."""
    f = _sample()
    raw = dump(f)
    assert raw[:4] == MAGIC and raw[4] == 1
    assert restore(raw) == f


def test_empty_fixed_array_restores_as_null() -> None:
    """Seed 004 l.474: a zero-length fixed array restores as null."""
    f = MQeFields().put("e", "arrayOfInt", []).put_array_of_byte("b", b"")
    back = restore(dump(f))
    assert back.get("e") is None and back.get("b") is None and back.get_type("e") == "arrayOfInt"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d[:3], "dump"),
        (lambda d: b"XXXX" + d[4:], "dump.magic"),
        (lambda d: d[:4] + b"\x09" + d[5:], "dump.version"),
        (lambda d: d[:-1], "nested"),
        (lambda d: d + b"\x00", "dump"),
        (lambda d: d[:5] + b"\xff\xff\xff\xff" + d[9:], "name length"),
    ],
)
def test_malformed_dump_is_a_clear_error(mutate, field: str) -> None:  # type: ignore[no-untyped-def]
    """Digest decision: malformed input is rejected with a clear error (field and offset)."""
    with pytest.raises(MQeFieldsError) as info:
        restore(mutate(dump(_sample())))
    assert field in info.value.field and info.value.offset is not None


@settings(max_examples=300, deadline=2000)
@given(st.binary(max_size=200))
def test_restore_never_raises_anything_else(data: bytes) -> None:
    """Bad input (hypothesis): restore raises MQeFieldsError or succeeds, never hangs."""
    raw = MAGIC + b"\x01" + data
    try:
        restore(raw)
    except MQeFieldsError as exc:
        assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(raw), exc  # item 10


@settings(max_examples=300, deadline=2000)
@given(st.binary(max_size=60))
def test_flipping_bytes_of_a_valid_dump(data: bytes) -> None:
    """Bad input (hypothesis): any corruption of a real dump is a typed error or a valid fields."""
    raw = bytearray(dump(_sample()))
    for i, b in enumerate(data):
        raw[(i * 37 + b) % len(raw)] ^= b
    try:
        restore(bytes(raw))
    except MQeFieldsError as exc:
        assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(raw), exc  # item 10


def test_text_dump_with_template() -> None:
    """Seed 004 l.476-492: #0 type, #1 name, #2 value; other characters copied; nested dumped."""
    f = MQeFields().put_int("Int1", 1234).put_ascii("name", "a\r\nb").put_fields("sub", MQeFields().put_boolean("ok", True))
    assert dump_to_string(f, "#1\t=\t#2\r\n") == "Int1\t=\t1234\r\nname\t=\ta\\r\\nb\r\nsub\t=\t{ok\t=\ttrue\r\n}\r\n"
    assert dump_to_string(f, "(#0)#1=#2;", title="T:").startswith("T:(int)Int1=1234;(ascii)name=")


def test_text_restore_of_flat_fields_and_nested_refused() -> None:
    """Seed 004 l.492: flat fields restore from text; embedded fields may not be restored."""
    flat = MQeFields().put_int("i", -5).put_unicode("u", "x=y;\\").put("ad", "arrayOfDouble", [1.5]).put_array_of_byte("b", b"\x01").put_boolean("t", True).put_long("l", 7)
    assert restore_from_string(dump_to_string(flat)) == flat
    with pytest.raises(MQeFieldsError):
        restore_from_string(dump_to_string(MQeFields().put_fields("n", MQeFields())))
    with pytest.raises(MQeFieldsError):
        restore_from_string("garbage")


# -- JMS <-> MQe (seed 004 l.6964-7216) -----------------------------------------------------------
T0 = 1_032_876_532_326


def _jms() -> JMSMessage:
    jms = JMSMessage(message_type="jms_text", body="A test message to MQe JMS", JMSTimestamp=T0, JMSPriority=7,
                     JMSType="testMsg", JMSDeliveryMode=2, JMSReplyTo="queue://QM2/REPLY", JMSCorrelationID="ID:" + "0a" * 24,
                     JMSExpiration=T0 + 5000, JMSRedelivered=False, JMSDestination="queue:///SYSTEM.DEFAULT.LOCAL.QUEUE")
    jms.properties.set("anInt", 12345, "i4")
    jms.properties.set("JMSXRcvTimestamp", T0 + 200, "i8")
    jms.properties.set("JMS_IBM_Format", "MQSTR")
    return jms


def test_rule_version_and_class_identify_a_jms_message() -> None:
    """MQe_JMS_VERSION (short 1) marks a JMS message; MQe_JMS_CLASS names its type (table 5)."""
    f = jms_to_mqe(_jms())
    assert (f.get("MQe_JMS_VERSION"), f.get_type("MQe_JMS_VERSION"), f.get("MQe_JMS_CLASS")) == (1, "short", "jms_text")
    assert jms_to_mqe(JMSMessage(message_type="jms_none")).get("MQe_JMS_CLASS") == "jms_null"
    with pytest.raises(MQeFieldsError, match="MQe_JMS_VERSION"):
        mqe_to_jms(MQeFields().put_int("x", 1))


def test_rule_direct_header_fields() -> None:
    """Table 6: JMSTimestamp->Msg_Time, JMSCorrelationID->Msg_CorrelID, JMSExpiration->
    Msg_ExpireTime, JMSPriority->Msg_Priority."""
    f = jms_to_mqe(_jms())
    assert f.get("Msg_Time") == T0 and f.get("Msg_CorrelID") == b"\x0a" * 24
    assert (f.get("Msg_ExpireTime"), f.get_type("Msg_ExpireTime")) == (T0 + 5000, "long")
    assert (f.get("Msg_Priority"), f.get_type("Msg_Priority")) == (7, "byte")


def test_rule_replyto_split_and_messageid_hash() -> None:
    """JMSReplyTo splits into Msg_ReplyToQMgr + Msg_ReplyToQ; JMSMessageID = 'ID:' + 24-byte
    hash of (Msg_OriginQMgr, Msg_Time)."""
    f = jms_to_mqe(_jms(), origin_qmgr="QM1")
    assert (f.get("Msg_ReplyToQMgr"), f.get("Msg_ReplyToQ")) == ("QM2", "REPLY")
    back = mqe_to_jms(restore(dump(f)))
    assert back.JMSReplyTo == "queue://QM2/REPLY"
    assert back.JMSMessageID == message_id("QM1", T0) and len(back.JMSMessageID) == 3 + 48
    assert message_id("QM1", T0) != message_id("QM2", T0)
    assert jms_to_mqe(JMSMessage(JMSReplyTo="QM3+Q3")).get("Msg_ReplyToQMgr") == "QM3"


def test_rule_header_fields_without_equivalent_in_mqe_jms_header() -> None:
    """Delivery mode (int), redelivered (boolean) and type (string) go in MQe_JMS_HEADER;
    JMSDestination is not stored but recreated by the receiver."""
    f = jms_to_mqe(_jms())
    header = f.get_fields("MQe_JMS_HEADER")
    assert header is not None
    assert (header.get("MQe_JMS_DELIVERYMODE"), header.get_type("MQe_JMS_DELIVERYMODE")) == (2, "int")
    assert (header.get("MQe_JMS_REDELIVERED"), header.get("MQe_JMS_TYPE")) == (False, "testMsg")
    assert "SYSTEM.DEFAULT.LOCAL.QUEUE" not in dump_to_string(f)
    back = mqe_to_jms(f, destination="queue:///SYSTEM.DEFAULT.LOCAL.QUEUE")
    assert (back.JMSDeliveryMode, back.JMSRedelivered, back.JMSType, back.JMSDestination) == (2, False, "testMsg", "queue:///SYSTEM.DEFAULT.LOCAL.QUEUE")


def test_rule_three_property_folders() -> None:
    """Table 7: application, JMSX and JMS_ properties in their own embedded fields, typed."""
    f = jms_to_mqe(_jms())
    assert (f.get_fields("MQe_JMS_PROPERTIES").get("anInt"), f.get_fields("MQe_JMS_PROPERTIES").get_type("anInt")) == (12345, "int")
    assert f.get_fields("MQe_JMSX_PROPERTIES").get("JMSXRcvTimestamp") == T0 + 200
    assert f.get_fields("MQe_JMS_PS_PROPERTIES").get("JMS_IBM_Format") == "MQSTR"
    back = mqe_to_jms(restore(dump(f)))
    assert back.properties == _jms().properties


@pytest.mark.parametrize(("kind", "body"), [("jms_text", "ünï text"), ("jms_bytes", b"\x00\x01"), ("jms_object", b"\xac\xed"), ("jms_map", {"k": 1}), ("jms_stream", [1, "a"]), ("jms_none", None)])
def test_rule_body_as_bytes(kind: str, body: object) -> None:
    """Table 8: the body is stored as bytes in MQe_JMS_BODY (text as UTF-8)."""
    f = jms_to_mqe(JMSMessage(message_type=kind, body=body))
    if kind == "jms_text":
        assert f.get("MQe_JMS_BODY") == "ünï text".encode()
    back = mqe_to_jms(restore(dump(f)))
    assert (back.message_type, back.body) == (kind, body)


def test_seed_example_message_is_understood() -> None:
    """The seed's hand-built MQe JMS text message (l.7096-7140) converts to the JMS message it prints."""
    msg = MQeFields().put_short("MQe_JMS_VERSION", 1).put_ascii("MQe_JMS_CLASS", "jms_text")
    msg.put_byte("Msg_Priority", 7).put_long("Msg_ExpireTime", 0)
    header = MQeFields().put_boolean("MQe_JMS_REDELIVERED", False).put_ascii("MQe_JMS_TYPE", "testMsg").put_int("MQe_JMS_DELIVERYMODE", 2)
    msg.put_fields("MQe_JMS_HEADER", header).put_fields("MQe_JMS_PROPERTIES", MQeFields().put_int("anInt", 12345))
    msg.put_fields("MQe_JMSX_PROPERTIES", MQeFields()).put_fields("MQe_JMS_PS_PROPERTIES", MQeFields())
    msg.put_array_of_byte("MQe_JMS_BODY", b"A test message to MQe JMS")
    jms = mqe_to_jms(msg)
    assert (jms.JMSType, jms.JMSDeliveryMode, jms.JMSExpiration, jms.JMSPriority, jms.JMSCorrelationID, jms.JMSReplyTo, jms.JMSRedelivered) == ("testMsg", 2, 0, 7, None, None, False)
    assert jms.properties["anInt"] == 12345 and jms.body == "A test message to MQe JMS"


def test_int_expire_time_is_relative() -> None:
    """everyplace.md item 5: an int ExpireTime is relative to creation, a long absolute."""
    msg = MQeFields().put_short("MQe_JMS_VERSION", 1).put_ascii("MQe_JMS_CLASS", "jms_null").put_long("Msg_Time", 1000).put_int("Msg_ExpireTime", 500)
    assert mqe_to_jms(msg).JMSExpiration == 1500


# -- bad MQe JMS messages: typed errors naming the field (issue 3 'Bad input') ---------------
def _mqe_text(**puts: tuple[str, object]) -> MQeFields:
    msg = MQeFields().put_short("MQe_JMS_VERSION", 1).put_ascii("MQe_JMS_CLASS", "jms_text")
    for name, (kind, value) in puts.items():
        msg.put(name, kind, value)
    return msg


@pytest.mark.parametrize(
    ("puts", "field", "offset"),
    [
        ({"MQe_JMS_BODY": ("arrayOfByte", b"ok \xff\xfe")}, "MQe_JMS_BODY", 3),  # not UTF-8
        ({"Msg_Time": ("ascii", "yesterday")}, "Msg_Time", None),
        ({"Msg_Priority": ("int", 99)}, "Msg_Priority", None),
        ({"Msg_Priority": ("unicode", "7")}, "Msg_Priority", None),
        ({"Msg_ExpireTime": ("double", 1.5)}, "Msg_ExpireTime", None),
        ({"Msg_CorrelID": ("int", 5)}, "Msg_CorrelID", None),
        ({"MQe_JMS_CLASS": ("ascii", "jms_video")}, "MQe_JMS_CLASS", None),
        ({"MQe_JMS_VERSION": ("short", 2)}, "MQe_JMS_VERSION", None),
        ({"MQe_JMS_HEADER": ("ascii", "x")}, "MQe_JMS_HEADER", None),
        ({"MQe_JMS_HEADER": ("fields", MQeFields().put_int("MQe_JMS_DELIVERYMODE", 7))}, "MQe_JMS_HEADER.MQe_JMS_DELIVERYMODE", None),
        ({"MQe_JMS_HEADER": ("fields", MQeFields().put_int("MQe_JMS_REDELIVERED", 1))}, "MQe_JMS_HEADER.MQe_JMS_REDELIVERED", None),
        ({"MQe_JMS_PROPERTIES": ("fields", MQeFields().put("arr", "arrayOfInt", [1]))}, "MQe_JMS_PROPERTIES.arr", None),
        ({"MQe_JMS_PROPERTIES": ("fields", MQeFields().put_double("nan", float("nan")))}, "MQe_JMS_PROPERTIES.nan", None),
    ],
)
def test_mqe_to_jms_bad_fields_are_typed_errors(puts: dict[str, tuple[str, object]], field: str, offset: int | None) -> None:
    """Item 21 on bad input: an invalid UTF-8 text body, Msg_Time as text, Msg_Priority 99, a
    wrong type anywhere: MQeFieldsError naming the field (and the byte offset in the body),
    never UnicodeDecodeError, ValueError, or a silently accepted value."""
    with pytest.raises(MQeFieldsError) as info:
        mqe_to_jms(_mqe_text(**puts))
    assert (info.value.field, info.value.offset) == (field, offset)


_MQE_NAMES = st.sampled_from([
    "MQe_JMS_VERSION", "MQe_JMS_CLASS", "MQe_JMS_BODY", "Msg_Time", "Msg_CorrelID", "Msg_ExpireTime",
    "Msg_Priority", "Msg_ReplyToQ", "Msg_ReplyToQMgr", "Msg_OriginQMgr", "MQe_JMS_HEADER",
    "MQe_JMS_PROPERTIES", "MQe_JMSX_PROPERTIES", "MQe_JMS_PS_PROPERTIES", "MQe_JMS_DELIVERYMODE",
    "MQe_JMS_REDELIVERED", "MQe_JMS_TYPE", "MQe_JMS_CORRELATIONID", "colour", "a-b",
])
_MQE_SCALARS = st.one_of(
    st.tuples(st.just("ascii"), st.sampled_from(["jms_text", "jms_map", "jms_stream", "jms_bytes", "jms_null", "x", ""])),
    st.tuples(st.just("unicode"), st.text(max_size=5)),
    st.tuples(st.sampled_from(["byte", "short", "int", "long"]), st.integers(-128, 127)),
    st.tuples(st.just("double"), st.floats()),
    st.tuples(st.just("boolean"), st.booleans()),
    st.tuples(st.just("arrayOfByte"), st.one_of(st.binary(max_size=12), st.sampled_from([b"<map><a dt='i4'>1</a></map>", b"<stream><elt>x</elt></stream>", b"<map><a dt='i9'>1</a></map>"]))),
    st.tuples(st.just("arrayOfInt"), st.lists(st.integers(-5, 5), max_size=3)),
)


def _mqe_strategy(depth: int = 2) -> st.SearchStrategy[MQeFields]:
    leaf = st.lists(st.tuples(_MQE_NAMES, _MQE_SCALARS), max_size=8)
    if depth == 0:
        entries = leaf
    else:
        entries = st.lists(st.tuples(_MQE_NAMES, st.one_of(_MQE_SCALARS, _mqe_strategy(depth - 1).map(lambda f: ("fields", f)))), max_size=8)

    def build(items: list[tuple[str, tuple[str, object]]]) -> MQeFields:
        f = MQeFields()
        for name, (kind, value) in items:
            f.put(name, kind, value)
        return f

    return entries.map(build)


@settings(max_examples=400, deadline=2000)
@given(_mqe_strategy(), st.sampled_from(["jms_text", "jms_map", "jms_stream", "jms_bytes", "jms_null", "jms_video"]))
def test_mqe_to_jms_on_arbitrary_fields(fields: MQeFields, cls: str) -> None:
    """Item 21 'Bad input' (hypothesis): any MQeFields is a JMS message or a FormatError naming a
    field, with an offset that is None or a byte offset inside MQe_JMS_BODY."""
    if "MQe_JMS_VERSION" not in fields:
        fields.put_short("MQe_JMS_VERSION", 1)
    if "MQe_JMS_CLASS" not in fields:
        fields.put_ascii("MQe_JMS_CLASS", cls)
    try:
        mqe_to_jms(fields)
    except FormatError as exc:
        assert exc.field and isinstance(exc.field, str)
        body = fields.get("MQe_JMS_BODY")
        assert exc.offset is None or (isinstance(exc.offset, int) and 0 <= exc.offset <= len(body or b""))  # type: ignore[arg-type]


def test_received_property_names_that_are_not_java_identifiers_are_kept() -> None:
    """DECISION (docs/formats.md): a property name MQe allows but Java does not (trace-id) is kept
    as a received property; one MQe cannot hold ('a b') is left out when writing MQe."""
    msg = _mqe_text(MQe_JMS_PROPERTIES=("fields", MQeFields().put_int("trace-id", 1)))
    jms = mqe_to_jms(msg)
    assert jms.properties["trace-id"] == 1 and not jms.properties.is_explicit("trace-id")
    jms.properties.set_received("a b", "x")
    assert jms_to_mqe(jms).get_fields("MQe_JMS_PROPERTIES").get("trace-id") == 1  # type: ignore[union-attr]
    assert "a b" not in jms_to_mqe(jms).get_fields("MQe_JMS_PROPERTIES")  # type: ignore[operator]


def test_rule_msg_correlid_reverse_mapping() -> None:
    """Item 21, MQe -> JMS: Msg_CorrelID (bytes) gives JMSCorrelationID 'ID:' + hex; an
    arbitrary-string id kept in MQe_JMS_HEADER.MQe_JMS_CORRELATIONID wins; none gives None."""
    raw = bytes(range(24))
    assert mqe_to_jms(_mqe_text(Msg_CorrelID=("arrayOfByte", raw))).JMSCorrelationID == "ID:" + raw.hex()
    header = MQeFields().put_unicode("MQe_JMS_CORRELATIONID", "order-42")
    both = _mqe_text(Msg_CorrelID=("arrayOfByte", b"order-42"), MQe_JMS_HEADER=("fields", header))
    assert mqe_to_jms(both).JMSCorrelationID == "order-42"
    assert mqe_to_jms(_mqe_text()).JMSCorrelationID is None
    assert mqe_to_jms(_mqe_text(Msg_CorrelID=("arrayOfByte", bytes(24)))).JMSCorrelationID is None  # all zero: none
    for cid in ("ID:" + "ab" * 24, "free text"):
        assert mqe_to_jms(restore(dump(jms_to_mqe(JMSMessage(JMSCorrelationID=cid))))).JMSCorrelationID == cid


_FLAT_SCALARS = st.one_of(
    st.tuples(st.just("ascii"), st.text(st.characters(max_codepoint=127), max_size=8)),
    st.tuples(st.just("unicode"), st.text(max_size=8)),
    st.tuples(st.sampled_from(["byte"]), st.integers(-128, 127)),
    st.tuples(st.sampled_from(["short"]), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.sampled_from(["int"]), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.sampled_from(["long"]), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("double"), st.floats(allow_nan=False)),
    st.tuples(st.just("float"), st.floats(width=32, allow_nan=False)),
    st.tuples(st.just("boolean"), st.booleans()),
    st.tuples(st.just("arrayOfByte"), st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("arrayOfInt"), st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=3)),
    st.tuples(st.just("arrayOfDouble"), st.lists(st.floats(allow_nan=False), min_size=1, max_size=3)),
)
_FIELD_NAMES = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="{}[]#();,'\"="), min_size=1, max_size=6)


@settings(max_examples=300, deadline=2000)
@given(st.dictionaries(_FIELD_NAMES, _FLAT_SCALARS, max_size=6), st.sampled_from(["(#0)#1=#2\r\n", "#0: #1 = #2\n", "<#0>#1=#2;\t", "#0 #1 #2\n"]))
def test_restore_from_string_round_trips_flat_fields(values: dict[str, tuple[str, object]], template: str) -> None:
    """Seed 004 l.476-492 (hypothesis): any flat MQeFields - names and string values holding
    any allowed character, separators included - dumped with a restorable template comes back
    equal."""
    fields = MQeFields()
    for name, (kind, value) in values.items():
        fields.put(name, kind, value)
    assert restore_from_string(dump_to_string(fields, template), template) == fields


@pytest.mark.parametrize("template", ["[#0|#1|#2]\n", "#0:#1=#2;", "#0x#1=#2\n", "#0#1#2"])
def test_restore_from_string_refuses_ambiguous_templates(template: str) -> None:
    """A template whose text could split two ways ('|' may be part of a name, ';' of a value)
    is refused up front rather than restoring the wrong fields."""
    with pytest.raises(MQeFieldsError) as info:
        restore_from_string("", template)
    assert info.value.field == "template"


@settings(max_examples=300, deadline=2000)
@given(st.text(max_size=80), st.sampled_from(["(#0)#1=#2\r\n", "#0: #1 = #2\n"]))
def test_restore_from_string_on_arbitrary_text(text: str, template: str) -> None:
    """Bad input (hypothesis): arbitrary text is fields or a MQeFieldsError, never a hang."""
    try:
        restore_from_string(text, template)
    except MQeFieldsError as exc:
        assert exc.field and (exc.offset is None or 0 <= exc.offset <= len(text))
