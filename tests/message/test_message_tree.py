"""The canonical Message and the tree Root -> Properties, headers, body with path access
(formats-and-jms.md item 6; seed 000 l.2384, l.488; issue 3 'Message tree and domains')."""

from __future__ import annotations

import pytest

from relaymq.message import MQMD, MQRFH2, Element, FormatError, JMSMessage, Message, MQMessage
from relaymq.message.folders import parse_folder
from relaymq.message.tree import split_path


def _message() -> Message:
    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder("<mcd><Msd>json</Msd></mcd>"), parse_folder("<usr><colour>blue</colour></usr>"), parse_folder("<psc><Topic>a/b</Topic></psc>")])
    return Message(MQMessage(md=MQMD(Priority=6, CodedCharSetId=1208), headers=[rfh2], body=b'{"a":{"b":[10,20]}}'))


def test_tree_order_and_paths() -> None:
    """Item 6: Root -> Properties, MQMD, MQRFH2, body folder named after the domain, last."""
    msg = _message()
    root = msg.tree()
    assert [c.name for c in root.children] == ["Properties", "MQMD", "MQRFH2", "JSON"]
    assert msg.get("Root.MQMD.Priority") == 6
    assert msg.get("Root.MQRFH2.usr.colour") == "blue"
    assert msg.get("Body.a.b.Item[2]") == 20
    assert msg.get("Properties.MessageDomain") == "JSON"
    assert msg.get("Properties.Topic") == "a/b"
    assert msg.get("Root.MQMD.Nope", "dflt") == "dflt"


def test_transport_folders_come_before_the_body() -> None:
    """Item 6: transport headers (HTTPInputHeader, JMSTransport...) then the body, last."""
    msg = _message()
    msg.transport.append(Element("HTTPInputHeader", children=[Element("Content-Type", "application/json")]))
    names = [c.name for c in msg.tree().children]
    assert names[-2:] == ["HTTPInputHeader", "JSON"]
    assert msg.get("HTTPInputHeader.Content-Type") == "application/json"


def test_configured_domain_used_without_rfh2() -> None:
    """Item 1 (seed 000 l.301): without an MQRFH2 the input's configured domain applies."""
    msg = Message(MQMessage(md=MQMD(Format="MQSTR", CodedCharSetId=1208), body=b"<a><b>1</b></a>"), configured_domain="XMLNSC")
    assert msg.domain == "XMLNSC" and msg.get("Body.a.b") == "1"
    assert Message(MQMessage(md=MQMD(), body=b"x")).domain == "BLOB"


def test_changed_body_tree_is_written_back() -> None:
    """Serialisers: a parsed body changed through the tree goes back into the bytes."""
    msg = _message()
    msg.body().set("a.c", "new")
    again = Message.from_bytes(msg.to_bytes())
    assert again.get("Body.a.c") == "new" and again.get("Body.a.b.Item[1]") == 10


def test_jms_view_and_from_jms() -> None:
    """Every message can be seen as JMS (design guide; item 12 JMS view of MQ messages)."""
    jms = JMSMessage(message_type="jms_map", body={"k": 5})
    msg = Message.from_bytes(Message.from_jms(jms).to_bytes())
    assert msg.domain == "JMSMap" and msg.get("Body.map.k") == 5
    assert msg.jms().body == {"k": 5}


def test_element_set_and_find() -> None:
    """Path access: set creates missing steps; indexes are 1-based; bad paths are errors."""
    root = Element("Root")
    root.set("a.b[2].c", 7)
    assert root.get("a.b[2].c") == 7 and root.find("a.b[1]") is not None and root.find("a.x") is None
    assert split_path("a.b[3]") == [("a", 1), ("b", 3)]
    with pytest.raises(ValueError):
        split_path("a..b")
    with pytest.raises(ValueError):
        split_path("a[0]")


@pytest.mark.parametrize("domain_folder", ["<mcd><Msd>json</Msd></mcd>", "<mcd><Msd>xmlnsc</Msd></mcd>"])
def test_header_paths_do_not_parse_a_malformed_body(domain_folder: str) -> None:
    """Item 6: Root.MQMD.*, MQMD.*, MQRFH2.*, Properties.* come from the headers; only Body.*
    (and Root.<domain>.*) needs the parser, so a malformed body does not hide the headers."""
    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder(domain_folder), parse_folder("<usr><colour>blue</colour></usr>")])
    msg = Message(MQMessage(md=MQMD(Priority=6, CodedCharSetId=1208), headers=[rfh2], body=b"{<not json nor xml"))
    assert msg.get("Root.MQMD.Priority") == 6
    assert msg.get("MQMD.Priority") == 6
    assert msg.get("MQRFH2.usr.colour") == "blue"
    assert msg.get("Root.MQRFH2.usr.colour") == "blue"
    assert msg.get("Properties.MessageDomain") == msg.domain
    assert msg.get("Root.Properties.Priority") == 6
    assert msg.get("Root.NoSuchFolder.x", "none") == "none"
    with pytest.raises(FormatError):
        msg.get("Body.a")
    with pytest.raises(FormatError):
        msg.get(f"Root.{msg.domain}.a")


def test_selector_reads_headers_of_a_message_with_a_malformed_body() -> None:
    """README decision 3 on a malformed body: header references keep their values, a body
    reference is UNKNOWN (never an exception)."""
    from relaymq.selector import compile_selector
    from relaymq.selector.resolvers import message_resolver

    rfh2 = MQRFH2(Format="MQSTR", folders=[parse_folder("<mcd><Msd>json</Msd></mcd>")])
    msg = Message(MQMessage(md=MQMD(Priority=6, CodedCharSetId=1208), headers=[rfh2], body=b"{"))
    assert compile_selector("Root.MQMD.Priority = 6 AND MQMD.Priority = 6 AND Properties.MessageDomain = 'JSON'").evaluate(message_resolver(msg)) is True
    assert compile_selector("Body.a = 1").evaluate(message_resolver(msg)) is None
