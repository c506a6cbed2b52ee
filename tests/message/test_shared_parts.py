"""Encode once, write many (relaymq.message.headers.SharedParts): the copies of one
publication share their MQRFH2 and body, encoded once, and each is still its own message."""

from __future__ import annotations

from relaymq.message.headers import (
    MQMessage,
    SharedMQMessage,
    SharedParts,
    decode_message,
    encode_message,
)
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element


def _folders() -> list[Element]:
    psc, usr = Element("psc"), Element("usr")
    psc.add("Command", "Publish")
    psc.add("Topic", "plant/site1/dev1/temperature")
    usr.add("level", "7")
    return [psc, usr]


def _copies(n: int) -> tuple[SharedParts, list[SharedMQMessage], list[MQMessage]]:
    shared = SharedParts([MQRFH2(Format="MQSTR", folders=_folders())], b'{"v": 42}')
    mds = [MQMD(Format="MQHRF2", MsgId=bytes([i]) * 24, CorrelId=bytes([i + 1]) * 24, Persistence=i % 2,
                Expiry=-1 if i % 3 else 100 + i, ReplyToQMgr="QM1") for i in range(n)]
    plain = [MQMessage(md=MQMD(**vars(md)), headers=[MQRFH2(Format="MQSTR", folders=_folders())], body=b'{"v": 42}')
             for md in mds]
    return shared, [SharedMQMessage(md, shared) for md in mds], plain


def test_each_copy_encodes_as_the_message_it_stands_for():
    _, copies, plain = _copies(5)
    assert [encode_message(c) for c in copies] == [encode_message(p) for p in plain]
    assert [Message(c).to_bytes() for c in copies] == [Message(p).to_bytes() for p in plain]
    assert copies == plain


def test_a_changed_header_is_the_copy_own_and_never_reaches_the_shared_bytes():
    shared, copies, plain = _copies(3)
    before = encode_message(copies[1])
    copies[0].first_rfh2().folder("usr").add("extra", "1")  # looking at the headers makes them private
    plain[0].first_rfh2().folder("usr").add("extra", "1")
    assert encode_message(copies[0]) == encode_message(plain[0])
    assert decode_message(encode_message(copies[0])).first_rfh2().get("usr.extra") == "1"
    assert encode_message(copies[1]) == before  # the others are unchanged
    assert shared.headers[0].folder("usr").child("extra") is None


def test_a_replaced_body_or_header_list_is_encoded_as_given():
    _, copies, plain = _copies(2)
    copies[0].body = plain[0].body = b'{"v": 1}'
    assert encode_message(copies[0]) == encode_message(plain[0])
    copies[1].headers = plain[1].headers = []
    assert encode_message(copies[1]) == encode_message(plain[1])


def test_the_shared_bytes_follow_the_encoding_of_each_copy():
    _, copies, plain = _copies(2)
    for message in (copies[1], plain[1]):
        message.md.Encoding = 0x111  # big-endian integers after the MQMD
    assert encode_message(copies[0]) == encode_message(plain[0])
    assert encode_message(copies[1]) == encode_message(plain[1])


def test_the_copies_mqmds_are_encoded_once_and_each_keeps_its_own_fields():
    """Issue 14: the MQMD of a copy is the first copy's bytes with its own MsgId and CorrelId;
    any other field that differs (or changes after an encoding) is encoded as given."""
    shared, copies, plain = _copies(4)
    copies[1].md.MsgId = plain[1].md.MsgId = b"short"  # NUL-padded to 24, as the full encoding
    copies[2].md.CorrelId = plain[2].md.CorrelId = b""
    assert [encode_message(c) for c in copies] == [encode_message(p) for p in plain]
    for message in (copies[3], plain[3]):
        message.md.Priority = 7
        message.md.ReplyToQ = "REPLY"
    assert encode_message(copies[3]) == encode_message(plain[3])
    assert [decode_message(encode_message(c)).md.MsgId for c in copies[:2]] == [b"\0" * 24, b"short".ljust(24, b"\0")]
