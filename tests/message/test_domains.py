"""Message domains and parser choice: formats-and-jms.md items 6-8, 11; seed 000
l.2480-2630; seed 003 l.5192-5210. XML parsers must be safe against entity expansion and
external entities (issue 3 'Bad input')."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.message import DomainError, XMLSecurityError
from relaymq.message.domains import (
    DomainMismatch,
    canonical_domain,
    domain_for_jms,
    domain_for_mq,
    map_body,
    parse_body,
    parse_mcd_uri,
    serialize_body,
    stream_body,
)
from relaymq.message.tree import ATTRIBUTE, NS_DECL

XML_DOC = b'<?xml version="1.0"?><p:order xmlns:p="urn:shop" id="7"><p:item n="1">pen</p:item>\n  <p:item n="2">ink &amp; nib</p:item><note>a<b>bold</b>c</note></p:order>'


@pytest.mark.parametrize("domain", ["XMLNSC", "XMLNS", "XML"])
def test_xml_domains_round_trip(domain: str) -> None:
    """Items 6-7: each XML domain parses to a tree and serialises back to the same tree."""
    body = parse_body(domain, XML_DOC)
    assert body.name == domain
    again = parse_body(domain, serialize_body(body))
    assert again == body


def test_xmlnsc_is_compact_and_namespace_aware() -> None:
    """XMLNSC: namespaces resolved, attributes as children, whitespace between elements dropped."""
    body = parse_body("XMLNSC", XML_DOC)
    order = body.child("order")
    assert order is not None and order.ns == "urn:shop"
    assert [c.kind for c in order.children][:2] == [NS_DECL, ATTRIBUTE]
    assert body.get("order.item[2]") == "ink & nib"
    assert body.get("order.item[2].n") == "2"
    assert not any(c.kind == "content" for c in order.children)


def test_xml_keeps_prefixes_and_whitespace() -> None:
    """XML (not namespace aware) keeps prefixed names and mixed whitespace text."""
    body = parse_body("XML", XML_DOC)
    order = body.child("p:order")
    assert order is not None and order.ns == ""
    assert any(c.kind == "content" for c in order.children)


@pytest.mark.parametrize(
    "doc",
    [
        b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>',
        b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
        b'<!DOCTYPE x [<!ENTITY % p SYSTEM "http://example.invalid/p.dtd"> %p;]><x/>',
        b'<!DOCTYPE x [<!ENTITY u SYSTEM "http://example.invalid/" NDATA gif>]><x/>',
    ],
)
@pytest.mark.parametrize("domain", ["XMLNSC", "XMLNS", "XML"])
def test_xml_bombs_and_external_entities_are_refused(domain: str, doc: bytes) -> None:
    """Bad input: an XML bomb or external entity is an XMLSecurityError with an offset."""
    with pytest.raises(XMLSecurityError) as info:
        parse_body(domain, doc)
    assert info.value.offset is not None and 0 <= info.value.offset <= len(doc)


@pytest.mark.parametrize("doc", [b'<!DOCTYPE x SYSTEM "http://example.invalid/x.dtd"><x>&ext;</x>', b"<x>&undefined;</x>", b"<a><b></a>", b"", b"just text"])
def test_malformed_xml_is_a_domain_error(doc: bytes) -> None:
    """Bad input: undefined entities and malformed XML give DomainError with the byte offset."""
    with pytest.raises(DomainError) as info:
        parse_body("XMLNSC", doc)
    assert info.value.offset is not None


def test_xml_nesting_is_bounded() -> None:
    """No hang and no recursion overflow on absurd nesting."""
    with pytest.raises(DomainError):
        parse_body("XMLNSC", b"<a>" * 5000 + b"</a>" * 5000)


def test_json_round_trip_and_paths() -> None:
    """Item 7 (JSON added by the product): members under the JSON folder, arrays as Item."""
    raw = b'{"a":{"b":[1,2.5,null,true,"x"]},"c":{}}'
    body = parse_body("json", raw)
    assert body.get("a.b.Item[2]") == 2.5 and body.get("a.b.Item[5]") == "x"
    assert serialize_body(body) == raw


def test_json_duplicate_keys_round_trip() -> None:
    """Item 7, DECISION (docs/formats.md): a repeated key is kept on parse - Body.a is the first,
    Body.a[2] the second - and written back, in order (it was collapsed to the last)."""
    raw = b'{"a":1,"b":{"x":[],"x":"y"},"a":2}'
    body = parse_body("JSON", raw)
    assert (body.get("a"), body.get("a[2]"), body.get("b.x[2]")) == (1, 2, "y")
    assert serialize_body(body) == raw


_JSON_VALUE = st.recursive(  # JSON texts, objects possibly with repeated keys
    st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5)).map(json.dumps),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(st.sampled_from(["a", "b", "\u00e9", ""]), inner), max_size=4).map(
            lambda kv: "{" + ",".join(json.dumps(k) + ":" + v for k, v in kv) + "}"
        ),
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=2000)
@given(_JSON_VALUE)
def test_json_round_trip_is_faithful(text: str) -> None:
    """Hypothesis: parse -> serialise -> parse gives the same tree (keys, repeats, order, types)
    and the same Python value as the standard library reads from the original."""
    body = parse_body("JSON", text.encode("utf-8"))
    again = parse_body("JSON", serialize_body(body))
    assert again == body
    assert json.loads(serialize_body(body)) == json.loads(text)


@pytest.mark.parametrize("doc", [b"{", b'{"a": NaN}', b"[" * 100000, b"\xff"])
def test_bad_json(doc: bytes) -> None:
    """Bad input: malformed, non-standard or absurdly nested JSON is a typed error."""
    with pytest.raises(Exception) as info:
        parse_body("JSON", doc)
    assert isinstance(info.value, (DomainError,)) or type(info.value).__name__ == "CCSIDError"


def test_blob_and_message_set_domains() -> None:
    """Item 7: BLOB keeps bytes; MRM/IDOC accepted and parsed as BLOB; 'none' is BLOB."""
    for name in ("BLOB", "MRM", "IDOC", "none"):
        body = parse_body(name, b"\x00\x01")
        assert body.get("BLOB") == b"\x00\x01" and serialize_body(body) == b"\x00\x01"


def test_jms_map_and_stream_bodies() -> None:
    """Item 11 (seed 000 l.2491-2528): typed map entries and ordered stream elements."""
    raw = b"<map><Item_8 dt='char'>A</Item_8><Item_5 dt='r8'>999999.0</Item_5><Item_10>Last</Item_10><Item_9 dt='boolean'>0</Item_9><Item_2 dt='i4'>999</Item_2></map>"
    body = parse_body("JMSMap", raw)
    entries = {c.name: (c.value, c.dt) for c in body.child("map").children}
    assert entries == {"Item_8": ("A", "char"), "Item_5": (999999.0, "r8"), "Item_10": ("Last", None), "Item_9": (False, "boolean"), "Item_2": (999, "i4")}
    assert parse_body("JMSMap", serialize_body(body)) == body
    stream = stream_body(["P2P", 999, 2.24, True], ["string", "i4", "r4", "boolean"])
    back = parse_body("JMSStream", serialize_body(stream))
    assert [(c.name, c.value, c.dt) for c in back.child("stream").children] == [("elt", "P2P", None), ("elt", 999, "i4"), ("elt", pytest.approx(2.24), "r4"), ("elt", True, "boolean")]
    assert map_body({"n": 5}).child("map").child("n").dt == "i4"
    with pytest.raises(DomainError):
        parse_body("JMSStream", b"<stream><x>1</x></stream>")
    with pytest.raises(DomainError):
        parse_body("JMSMap", b"<stream/>")


def test_mime_multipart_round_trip() -> None:
    """Item 7 MIME: headers, Parts -> Part -> Data -> BLOB, nested multipart."""
    raw = (
        b'Content-Type: multipart/mixed; boundary="outer"\r\nMIME-Version: 1.0\r\n\r\n'
        b"--outer\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
        b'--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n--inner\r\n\r\nx\r\n--inner--\r\n\r\n'
        b"--outer--\r\n"
    )
    body = parse_body("MIME", raw)
    assert body.get("Parts.Part[1].Data.BLOB") == b"hello"
    assert body.get("Parts.Part[2].Parts.Part.Data.BLOB") == b"x"
    assert parse_body("MIME", serialize_body(body)) == body
    with pytest.raises(DomainError):
        parse_body("MIME", b"Content-Type: multipart/mixed\r\n\r\nbody")
    with pytest.raises(DomainError):
        parse_body("MIME", b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nno end")


@pytest.mark.parametrize(
    ("domain", "cls", "ok"),
    [
        ("BLOB", "jms_bytes", True), ("BLOB", "jms_text", True), ("BLOB", "jms_object", True), ("BLOB", "jms_map", False),
        ("XML", "jms_text", True), ("XML", "jms_bytes", False), ("XMLNS", "jms_text", True), ("XMLNSC", "jms_stream", False),
        ("MRM", "jms_bytes", True), ("MRM", "jms_text", True), ("MRM", "jms_object", False),
        ("JMSMap", "jms_map", True), ("JMSMap", "jms_text", False), ("JMSStream", "jms_stream", True), ("JMSStream", "jms_map", False),
        ("MIME", "jms_bytes", True), ("MIME", "jms_map", False), ("IDOC", "jms_text", True), ("IDOC", "jms_stream", False),
    ],
)
def test_explicit_domain_validity_matrix(domain: str, cls: str, ok: bool) -> None:
    """Item 8, seed 000 l.2574-2587: an explicit domain accepts only its JMS types."""
    if ok:
        assert domain_for_jms(cls, configured=domain) == domain
    else:
        with pytest.raises(DomainMismatch):
            domain_for_jms(cls, configured=domain)


@pytest.mark.parametrize(
    ("jms_type", "cls", "expected"),
    [
        ("mcd://MRM/SWIFTXML2005/{http://SWIFT/2005}:Document/?format=SWIFT", "jms_bytes", "MRM"),
        ("mcd://xml", "jms_text", "XML"), ("mcd://XMLNS", "jms_text", "XMLNS"), ("mcd://XMLNSC/set1", "jms_text", "XMLNSC"),
        ("mcd://IDOC/s/?format=f", "jms_bytes", "IDOC"), ("mcd://mime", "jms_bytes", "MIME"),
        ("car", "jms_text", "XML"), (None, "jms_bytes", "BLOB"), (None, "jms_map", "JMSMap"),
        (None, "jms_stream", "JMSStream"), (None, "jms_object", "BLOB"), ("mcd://NOPE", "jms_text", "XML"),
    ],
)
def test_domain_from_jmstype_then_class(jms_type: str | None, cls: str, expected: str) -> None:
    """Item 8 (seed 000 l.2589-2627): JMSType mcd URI (any case), else the JMS class."""
    assert domain_for_jms(cls, jms_type=jms_type) == expected


def test_mcd_uri_parts_and_mismatch() -> None:
    """The mcd URI carries set/type/format; a class the URI's domain cannot read is backed out."""
    mcd = parse_mcd_uri("mcd://MRM/SWIFTXML2005/{http://SWIFT/2005}:Document/?format=SWIFT")
    assert mcd is not None and (mcd.domain, mcd.set, mcd.type, mcd.format) == ("MRM", "SWIFTXML2005", "{http://SWIFT/2005}:Document", "SWIFT")
    with pytest.raises(DomainMismatch):
        domain_for_jms("jms_map", jms_type="mcd://XML")


def test_domain_for_mq_messages() -> None:
    """Item 1 (seed 000 l.301): mcd.Msd, else the configured domain, else BLOB."""
    assert domain_for_mq("xmlnsc") == "XMLNSC"
    assert domain_for_mq(None, "json") == "JSON"
    assert domain_for_mq(None) == "BLOB"
    with pytest.raises(DomainError):
        canonical_domain("cobol")


def _jms_message(message_type: str, body: object, jms_type: str | None = None, configured: str | None = None):  # type: ignore[no-untyped-def]
    from relaymq.message import JMSMessage, Message

    jms = JMSMessage(message_type=message_type, body=body, JMSType=jms_type)
    return Message(Message.from_jms(jms).mq, configured_domain=configured)


def test_message_domain_of_a_jms_text_with_mcd_jmstype_is_xmlnsc() -> None:
    """Item 8 step 2 (seed 000 l.2589-2600), wired into Message: a TextMessage whose JMSType is
    mcd://XMLNSC/set1 is parsed as XMLNSC, not by class (which would give XML); the set comes
    from the URI."""
    msg = _jms_message("jms_text", "<a><b>1</b></a>", "mcd://xmlnsc/set1")
    assert msg.domain == "XMLNSC"
    assert msg.body().name == "XMLNSC" and msg.get("Body.a.b") == "1"
    assert (msg.get("Properties.MessageDomain"), msg.get("Properties.MessageSet")) == ("XMLNSC", "set1")
    assert _jms_message("jms_text", "<a/>").domain == "XML"  # step 3: by class


def test_message_domain_explicit_beats_jmstype_and_mismatch_is_refused() -> None:
    """Item 8 step 1 (seed 000 l.2574-2587): a configured domain wins over the JMSType; a
    MapMessage with configured XMLNSC is a DomainMismatch (the input backs it out), raised
    when the body is looked at, while the headers stay readable."""
    assert _jms_message("jms_text", "<a/>", "mcd://XML", configured="XMLNSC").domain == "XMLNSC"
    msg = _jms_message("jms_map", {"k": 1}, configured="XMLNSC")
    with pytest.raises(DomainMismatch) as info:
        msg.body()
    assert "jms_map" in info.value.reason and "XMLNSC" in info.value.reason
    assert msg.get("Root.MQMD.Priority") == 4 and msg.get("Properties.MessageDomain") is None
    with pytest.raises(DomainMismatch):
        _jms_message("jms_map", {"k": 1}, "mcd://XMLNSC").domain  # noqa: B018 - step 2 mismatch
    assert _jms_message("jms_map", {"k": 1}).body().name == "JMSMap"


def test_message_domain_of_a_body_less_jms_message() -> None:
    """DECISION: a jms_none message (no payload) takes any configured domain."""
    assert _jms_message("jms_none", None, configured="XMLNSC").domain == "XMLNSC"
    assert _jms_message("jms_none", None).domain == "BLOB"


def test_json_brackets_in_strings_and_a_bom_as_the_standard_library_reads_them() -> None:
    """The JSON domain scans a text for its nesting only when it has more brackets than
    MAX_DEPTH, and parses with one decoder kept for every parse (issue 14: a content filter
    on a small JSON body): brackets inside strings do not count as nesting, a UTF-8 BOM is
    refused as ``json.loads`` refuses it, and one parse leaves nothing to the next."""
    text = '{"s": "' + "[" * 300 + '", "t": [1, {"u": null}]}'
    body = parse_body("JSON", text.encode())
    assert body.get("s") == "[" * 300 and body.find("t").kind == "array"
    assert parse_body("JSON", b'{"a": 1, "a": 2}') == parse_body("JSON", b'{"a": 1, "a": 2}')
    assert [c.value for c in parse_body("JSON", b'{"a": 1, "a": 2}').children] == [1, 2]
    with pytest.raises(DomainError):
        parse_body("JSON", "\ufeff{}".encode())
