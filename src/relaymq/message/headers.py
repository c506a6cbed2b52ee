"""An MQ-format message: MQMD, the chain of headers named by each Format field, then the
body (formats-and-jms.md items 1-3; seed 000 l.280-301; seed 003 l.4787-4805).

Decoding follows the chain: the MQMD's Format names the next header (``MQHRF2``, ``MQHRF``,
``MQDEAD``, or any other ``MQH*`` standard header, kept as raw bytes), each header's Format
the next, until a Format that is not a header: that is the body's format. Each header's
integers and fixed text are in the Encoding/CodedCharSetId that the header before it
declares; CodedCharSetId 0 (queue manager) means ``qmgr_ccsid`` and -2 (inherit) means "as
before".

Encoding recomputes the chain: each header's predecessor is written with that header's Format
name (an uninterpreted header gets its Format bytes patched), so a message built in Python is
always consistently chained; the message object itself is left as it was. With several MQRFH2 headers, body
attributes come from the last and everything else from the first (:meth:`MQMessage.first_rfh2`
/ :meth:`MQMessage.last_rfh2`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Literal

from relaymq.message.ccsid import check_ccsid, decode_text, encode_text
from relaymq.message.constants import MQCCSI_EMBEDDED, MQCCSI_INHERIT, MQCCSI_Q_MGR, MQENC_NATIVE
from relaymq.message.errors import FormatError, LengthError, TruncatedError
from relaymq.message.layout import byte_order
from relaymq.message.mqdlh import MQDLH, decode_dlh, encode_dlh
from relaymq.message.mqmd import MD_CCSID_ASCII, MQMD, MQMDTemplates, decode_mqmd, detect_md
from relaymq.message.mqrfh import MQRFH, decode_rfh, encode_rfh
from relaymq.message.mqrfh2 import MQRFH2, decode_rfh2, encode_rfh2

#: CCSID assumed when a header says MQCCSI_Q_MGR (0); this product's queue managers use UTF-8.
DEFAULT_QMGR_CCSID = 1208

#: Common prefix of the chained MQ standard headers (MQCIH, MQIIH, MQDH, MQMDE, MQRMH...):
#: StrucId, Version, StrucLength, Encoding, CodedCharSetId, then Format at offset 20.
_GENERIC_PREFIX = 28
_FORMAT_OFFSET = 20


@dataclass
class RawHeader:
    """A chained ``MQH*`` header this product does not interpret, carried byte for byte."""

    format_name: str
    data: bytes
    Encoding: int
    CodedCharSetId: int
    Format: str

    @property
    def FORMAT_NAME(self) -> str:  # noqa: N802 - same protocol as the typed headers
        return self.format_name

    def to_dict(self) -> dict[str, object]:
        return {"Encoding": self.Encoding, "CodedCharSetId": self.CodedCharSetId, "Format": self.Format, "bytes": self.data.hex()}


Header = MQRFH2 | MQRFH | MQDLH | RawHeader


def fmt(name: str) -> str:
    """A Format field compared without its blank padding."""
    return name.rstrip(" \x00")


@dataclass
class MQMessage:
    """MQMD + headers + body bytes, with the MQMD's own representation (``md_encoding``,
    ``md_ccsid``) kept so that re-encoding a decoded message gives the same bytes."""

    md: MQMD = field(default_factory=MQMD)
    headers: list[Header] = field(default_factory=list)
    body: bytes = b""
    md_encoding: int = MQENC_NATIVE
    md_ccsid: int = MD_CCSID_ASCII
    qmgr_ccsid: int = DEFAULT_QMGR_CCSID

    # -- the first/last RFH2 rule ---------------------------------------------------------
    def rfh2s(self) -> list[MQRFH2]:
        return [h for h in self.headers if isinstance(h, MQRFH2)]

    def first_rfh2(self) -> MQRFH2 | None:
        """Where topic, psc, usr, jms... are read from (seed 003 l.4800)."""
        found = self.rfh2s()
        return found[0] if found else None

    def last_rfh2(self) -> MQRFH2 | None:
        """Where the body's domain/set/type/format are read from (seed 003 l.4795)."""
        found = self.rfh2s()
        return found[-1] if found else None

    # -- what describes the body -----------------------------------------------------------
    def _chain(self) -> list[tuple[int, int]]:
        """(encoding, ccsid) in force before each header and, last, for the body."""
        enc, ccsid = self.md.Encoding, self.resolve_ccsid(self.md.CodedCharSetId, self.qmgr_ccsid)
        states = [(enc, ccsid)]
        for h in self.headers:
            enc = h.Encoding
            ccsid = self.resolve_ccsid(h.CodedCharSetId, ccsid)
            states.append((enc, ccsid))
        return states

    def resolve_ccsid(self, ccsid: int, previous: int) -> int:
        return _resolve_ccsid(ccsid, previous, self.qmgr_ccsid)

    @property
    def body_format(self) -> str:
        return fmt(self.headers[-1].Format if self.headers else self.md.Format)

    @property
    def body_encoding(self) -> int:
        return self._chain()[-1][0]

    @property
    def body_ccsid(self) -> int:
        return self._chain()[-1][1]


def decode_message(
    data: bytes,
    md_encoding: int | None = None,
    md_ccsid: int | None = None,
    qmgr_ccsid: int = DEFAULT_QMGR_CCSID,
) -> MQMessage:
    """Decode MQMD + headers + body. Raises a :class:`~relaymq.message.errors.FormatError`
    subclass naming the field and byte offset for any malformed input."""
    data = bytes(data)
    md, pos = decode_mqmd(data, 0, md_encoding, md_ccsid)
    det_enc, det_ccsid = detect_md(data, 0)
    msg = MQMessage(
        md=md,
        md_encoding=det_enc if md_encoding is None else md_encoding,
        md_ccsid=det_ccsid if md_ccsid is None else md_ccsid,
        qmgr_ccsid=qmgr_ccsid,
    )
    enc = md.Encoding
    ccsid = msg.resolve_ccsid(md.CodedCharSetId, qmgr_ccsid)
    next_format = fmt(md.Format)
    where = 28  # offset of the CodedCharSetId in force (MQMD's first), for error reports
    enc_field, enc_at = "MQMD.Encoding", 24  # ... and of the Encoding in force
    while True:
        header: Header | None
        if next_format.startswith("MQH") or next_format == "MQDEAD":
            check_ccsid(ccsid, "CodedCharSetId", where)
            try:
                byte_order(enc)
            except FormatError as exc:
                raise FormatError(enc_field, enc_at, exc.reason) from None
        if next_format == "MQHRF2":
            header, end = decode_rfh2(data, pos, enc, ccsid)
        elif next_format == "MQHRF":
            header, end = decode_rfh(data, pos, enc, ccsid)
        elif next_format == "MQDEAD":
            header, end = decode_dlh(data, pos, enc, ccsid)
        elif next_format.startswith("MQH"):
            header, end = _decode_generic(data, pos, enc, ccsid, next_format)
        else:
            break
        msg.headers.append(header)
        where = pos + (16 if not isinstance(header, MQDLH) else 112)
        enc_field, enc_at = f"{type(header).__name__ if not isinstance(header, RawHeader) else header.format_name}.Encoding", where - 4
        pos = end
        enc = header.Encoding
        ccsid = msg.resolve_ccsid(header.CodedCharSetId, ccsid)
        next_format = fmt(header.Format)
    msg.body = data[pos:]
    return msg


def _decode_generic(data: bytes, pos: int, encoding: int, ccsid: int, name: str) -> tuple[RawHeader, int]:
    if len(data) - pos < _GENERIC_PREFIX:
        raise TruncatedError(f"{name}.StrucLength", pos, f"a chained header needs at least {_GENERIC_PREFIX} bytes")
    order: Literal["big", "little"] = "big" if byte_order(encoding) == ">" else "little"

    def long_at(off: int) -> int:
        return int.from_bytes(data[pos + off : pos + off + 4], order, signed=True)

    length = long_at(8)
    if length < _GENERIC_PREFIX or pos + length > len(data):
        raise LengthError(f"{name}.StrucLength", pos + 8, f"{length} is too small or runs past the end")
    start = pos + _FORMAT_OFFSET
    fmt_field = decode_text(data[start : start + 8], ccsid, encoding, f"{name}.Format", start)
    return (
        RawHeader(name, data[pos : pos + length], long_at(12), long_at(16), fmt(fmt_field)),
        pos + length,
    )


def encode_message(msg: MQMessage) -> bytes:
    """MQMD + headers + body as bytes, with the Format chain recomputed: each header's
    predecessor names it, the last header keeps the body's Format. ``msg`` is not changed."""
    md = msg.md
    if type(msg) is SharedMQMessage and msg._headers is None and msg.body is msg._shared.body:
        # "encode once, write many": only the MQMD is this message's own
        shared = msg._shared
        tail = shared.encoded(md.Encoding, msg.resolve_ccsid(md.CodedCharSetId, msg.qmgr_ccsid), msg.qmgr_ccsid)
        return _MQMDS.encode(md, msg.md_encoding, msg.md_ccsid, shared.first_format) + tail
    headers = msg.headers
    mqmd = _MQMDS.encode(md, msg.md_encoding, msg.md_ccsid, headers[0].FORMAT_NAME if headers else None)
    if not headers:
        return mqmd + msg.body
    parts = [mqmd]
    parts += _encode_headers(headers, md.Encoding, msg.resolve_ccsid(md.CodedCharSetId, msg.qmgr_ccsid),
                             msg.qmgr_ccsid)
    parts.append(msg.body)
    return b"".join(parts)


#: The MQMDs of the messages encoded here, one template per kind (the messages an application
#: puts differ in little but their ids; so do the copies of one publication for its queue
#: subscribers, and those of the next publication as long as their MQMD fields are the same):
#: an MQMD spliced from its template costs about a quarter of a full encoding.
_MQMDS = MQMDTemplates(limit=64)


def _encode_headers(headers: list[Header], enc: int, ccsid: int, qmgr_ccsid: int) -> list[bytes]:
    """The headers' bytes, each chained to the next (``enc``/``ccsid``: in force before the first)."""
    formats: list[str] = [h.FORMAT_NAME for h in headers]
    parts: list[bytes] = []
    for i, h in enumerate(headers):
        next_format = formats[i + 1] if i + 1 < len(formats) else h.Format
        if isinstance(h, MQRFH2):
            parts.append(encode_rfh2(h, enc, ccsid, next_format))
        elif isinstance(h, MQRFH):
            parts.append(encode_rfh(h, enc, ccsid, next_format))
        elif isinstance(h, MQDLH):
            parts.append(encode_dlh(h, enc, ccsid, next_format))
        else:
            parts.append(_raw_with_format(h, next_format, enc, ccsid))
        enc = h.Encoding
        ccsid = _resolve_ccsid(h.CodedCharSetId, ccsid, qmgr_ccsid)
    return parts


def _resolve_ccsid(ccsid: int, previous: int, qmgr_ccsid: int) -> int:
    if ccsid in (MQCCSI_INHERIT, MQCCSI_EMBEDDED):
        return previous
    if ccsid == MQCCSI_Q_MGR:
        return qmgr_ccsid
    return ccsid


class SharedParts:
    """The headers and body that many messages have in common (the copies of one publication
    for its queue subscribers, which differ only in their MQMD), encoded once for all of them
    ("encode once, write many").

    Nobody gets these headers themselves: a :class:`SharedMQMessage` whose headers are looked
    at gets a private copy of them, and is encoded on its own from then on, so a header changed
    in one copy never reaches the shared bytes or another copy. ``headers`` must not be changed
    once the parts are made.
    """

    __slots__ = ("_encoded", "body", "first_format", "headers")

    def __init__(self, headers: list[Header], body: bytes) -> None:
        if not headers:
            raise ValueError("shared parts need at least one header")
        self.headers = tuple(headers)
        self.body = body
        self.first_format = headers[0].FORMAT_NAME
        #: ((encoding, ccsid, qmgr ccsid) in force before the first header, headers + body bytes)
        self._encoded: tuple[tuple[int, int, int], bytes] | None = None

    def encoded(self, encoding: int, ccsid: int, qmgr_ccsid: int) -> bytes:
        """Headers + body as bytes after an MQMD declaring ``encoding`` and ``ccsid``."""
        key = (encoding, ccsid, qmgr_ccsid)
        known = self._encoded
        if known is not None and known[0] == key:
            return known[1]
        data = b"".join([*_encode_headers(list(self.headers), encoding, ccsid, qmgr_ccsid), self.body])
        self._encoded = (key, data)
        return data

    def copy_headers(self) -> list[Header]:
        """A private copy of the headers (folders copied too)."""
        return [replace(h, folders=[f.copy() for f in h.folders]) if isinstance(h, MQRFH2) else copy.deepcopy(h)
                for h in self.headers]


class SharedMQMessage(MQMessage):
    """A message made of its own MQMD and :class:`SharedParts`: encoding it encodes only the
    MQMD. Its ``headers`` are a private copy, made when first looked at (the message then
    encodes as any other); replacing ``body`` also ends the sharing."""

    def __init__(self, md: MQMD, shared: SharedParts, md_encoding: int = MQENC_NATIVE,
                 md_ccsid: int = MD_CCSID_ASCII, qmgr_ccsid: int = DEFAULT_QMGR_CCSID) -> None:
        self._shared = shared
        self._headers: list[Header] | None = None
        self.md = md
        self.body = shared.body
        self.md_encoding = md_encoding
        self.md_ccsid = md_ccsid
        self.qmgr_ccsid = qmgr_ccsid

    @property
    def headers(self) -> list[Header]:
        if self._headers is None:
            self._headers = self._shared.copy_headers()
        return self._headers

    @headers.setter
    def headers(self, value: list[Header]) -> None:
        self._headers = value

    def __eq__(self, other: object) -> bool:  # equal to the plain MQMessage it stands for
        if not isinstance(other, MQMessage):
            return NotImplemented
        return ((self.md, self.headers, self.body, self.md_encoding, self.md_ccsid, self.qmgr_ccsid)
                == (other.md, other.headers, other.body, other.md_encoding, other.md_ccsid, other.qmgr_ccsid))

    __hash__ = None  # type: ignore[assignment]  # as MQMessage's


def _raw_with_format(h: RawHeader, name: str, encoding: int, ccsid: int) -> bytes:
    """The bytes of an uninterpreted header with its Format field (offset 20, 8 characters in
    the character set in force before it) naming ``name``: a chained header must name what
    follows it, or the header after it would be read as body."""
    if fmt(h.Format) == fmt(name):
        return h.data
    where = f"{h.format_name}.Format"
    raw = encode_text(name, ccsid, encoding, where)
    if len(raw) > 8:
        raise FormatError(where, None, f"{name!r} is longer than 8 bytes")
    blank = encode_text(" ", ccsid, encoding, where)
    raw += blank * ((8 - len(raw)) // len(blank))
    return h.data[:_FORMAT_OFFSET] + raw.ljust(8, b"\x00") + h.data[_FORMAT_OFFSET + 8 :]
