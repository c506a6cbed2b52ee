"""MQRFH, rules and formatting header version 1: the header of WebSphere MQ
Publish/Subscribe (seed 000 l.293-296; formats-and-jms.md item 5; pubsub.md item 37).

Fixed part (32 bytes, ``cmqc.h``): StrucId ``RFH ``, Version 1, StrucLength, Encoding,
CodedCharSetId, Format, Flags; then NameValueString up to StrucLength, in the character set
of the header before. NameValueString is blank-separated name/value tokens; a token holding
blanks is in double quotes, with ``""`` for a quote inside it.

``to_psc``/``from_psc`` convert the publish/subscribe names both ways with the table of
seed 003 l.3596-3640; names that have no counterpart are not copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relaymq.message.constants import MQCCSI_INHERIT, MQENC_NATIVE, MQRFH_NONE, MQRFH_STRUC_ID, MQRFH_STRUC_LENGTH_FIXED, MQRFH_VERSION_1
from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.errors import FolderError, LengthError, StrucIdError
from relaymq.message.layout import CHAR, LONG, Field, Layout, byte_order
from relaymq.message.tree import Element

LAYOUT = Layout(
    "MQRFH",
    [
        Field("StrucId", CHAR, 4),
        Field("Version", LONG),
        Field("StrucLength", LONG),
        Field("Encoding", LONG),
        Field("CodedCharSetId", LONG),
        Field("Format", CHAR, 8),
        Field("Flags", LONG),
    ],
)
assert LAYOUT.size == MQRFH_STRUC_LENGTH_FIXED

#: MQRFH name -> MQRFH2 ``psc`` element name (seed 003 l.3614-3632).
RFH_TO_PSC = {
    "MQPSCommand": "Command",
    "MQPSDelOpts": "DelOpt",
    "MQPSPubOpts": "PubOpt",
    "MQPSPubTime": "PubTime",
    "MQPSQMgrName": "QMgrName",
    "MQPSQName": "QName",
    "MQPSRegOpts": "RegOpt",
    "MQPSSeqNum": "SeqNum",
    "MQPSTopic": "Topic",
}
PSC_TO_RFH = {v: k for k, v in RFH_TO_PSC.items()}


@dataclass
class MQRFH:
    """One MQRFH header; ``name_values`` keeps order and repeats (several MQPSTopic)."""

    Encoding: int = MQENC_NATIVE
    CodedCharSetId: int = MQCCSI_INHERIT
    Format: str = ""
    Flags: int = MQRFH_NONE
    name_values: list[tuple[str, str]] = field(default_factory=list)

    FORMAT_NAME = "MQHRF"

    def get(self, name: str, default: str | None = None) -> str | None:
        for n, v in self.name_values:
            if n == name:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        return [v for n, v in self.name_values if n == name]

    def to_dict(self) -> dict[str, object]:
        return {
            "Version": MQRFH_VERSION_1,
            "Encoding": self.Encoding,
            "CodedCharSetId": self.CodedCharSetId,
            "Format": self.Format,
            "Flags": self.Flags,
            "NameValueString": [[n, v] for n, v in self.name_values],
        }


def parse_name_values(text: str, offset: int = 0) -> list[tuple[str, str]]:
    """Split a NameValueString into (name, value) pairs."""
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \x00":
            i += 1
            continue
        if text[i] == '"':
            start, i, parts = i, i + 1, []
            while True:
                j = text.find('"', i)
                if j < 0:
                    raise FolderError("MQRFH.NameValueString", offset + start, "unterminated quoted value")
                parts.append(text[i:j])
                if j + 1 < n and text[j + 1] == '"':
                    parts.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
            tokens.append("".join(parts))
        else:
            j = i
            while j < n and text[j] not in " \x00":
                j += 1
            tokens.append(text[i:j])
            i = j
    if len(tokens) % 2:
        raise FolderError("MQRFH.NameValueString", offset + len(text), f"name {tokens[-1]!r} has no value")
    return [(tokens[k], tokens[k + 1]) for k in range(0, len(tokens), 2)]


def format_name_values(pairs: list[tuple[str, str]]) -> str:
    def token(s: str) -> str:
        if s and not any(c in s for c in ' "\x00'):
            return s
        return '"' + s.replace('"', '""') + '"'

    return " ".join(f"{token(n)} {token(v)}" for n, v in pairs)


def decode_rfh(data: bytes, offset: int, encoding: int, ccsid: int) -> tuple[MQRFH, int]:
    order = byte_order(encoding)
    LAYOUT.check_room(data, offset)
    values = LAYOUT.decode(data, offset, order, ccsid, encoding)
    if values["StrucId"] != MQRFH_STRUC_ID.rstrip():
        raise StrucIdError("MQRFH.StrucId", offset, f"expected 'RFH ', found {bytes(data[offset:offset + 4])!r}")
    if values["Version"] != MQRFH_VERSION_1:
        raise StrucIdError("MQRFH.Version", offset + 4, f"expected version 1, found {values['Version']}")
    length = values["StrucLength"]
    assert isinstance(length, int)
    if length < MQRFH_STRUC_LENGTH_FIXED or offset + length > len(data):
        raise LengthError("MQRFH.StrucLength", offset + 8, f"{length} is shorter than 32 or runs past the end")
    start = offset + MQRFH_STRUC_LENGTH_FIXED
    text = decode_text(bytes(data[start : offset + length]), ccsid, encoding, "MQRFH.NameValueString", start)
    return (
        MQRFH(
            Encoding=values["Encoding"],  # type: ignore[arg-type]
            CodedCharSetId=values["CodedCharSetId"],  # type: ignore[arg-type]
            Format=values["Format"],  # type: ignore[arg-type]
            Flags=values["Flags"],  # type: ignore[arg-type]
            name_values=parse_name_values(text, start),
        ),
        offset + length,
    )


def encode_rfh(rfh: MQRFH, encoding: int, ccsid: int, format_name: str | None = None) -> bytes:
    """The header as bytes (``format_name`` replaces its Format in the bytes)."""
    order = byte_order(encoding)
    data = encode_text(format_name_values(rfh.name_values), ccsid, encoding, "MQRFH.NameValueString")
    blank = encode_text(" ", ccsid, encoding)
    while len(data) % 4:
        data += blank
    fixed = LAYOUT.encode(
        {
            "StrucId": MQRFH_STRUC_ID,
            "Version": MQRFH_VERSION_1,
            "StrucLength": MQRFH_STRUC_LENGTH_FIXED + len(data),
            "Encoding": rfh.Encoding,
            "CodedCharSetId": rfh.CodedCharSetId,
            "Format": rfh.Format if format_name is None else format_name,
            "Flags": rfh.Flags,
        },
        order,
        ccsid,
        encoding,
    )
    return fixed + data


def to_psc(rfh: MQRFH) -> Element:
    """The ``psc`` folder equivalent to an MQRFH command (names not in the table are dropped;
    the stream prefix of pubsub.md item 37 is the pub/sub engine's business)."""
    psc = Element("psc")
    for name, value in rfh.name_values:
        if name in RFH_TO_PSC:
            psc.add(RFH_TO_PSC[name], value)
    return psc


def from_psc(psc: Element) -> list[tuple[str, str]]:
    """MQRFH name/value pairs for the ``psc`` elements that have an MQRFH counterpart."""
    return [(PSC_TO_RFH[c.name], str(c.value if c.value is not None else "")) for c in psc.children if c.name in PSC_TO_RFH]
