"""Frames of the channel protocol between queue managers (docs/channels.md; everyplace.md
item 30, seed 004 l.3955-4490 for the framing, decision "the channel protocol is the
product's own, framed as in item 30, versioned, and documented").

A frame on the wire is a 4-byte big-endian length followed by that many payload bytes. The
payload is::

    u8  frame type (FrameType)
    u32 big-endian length of the header
    header: a JSON object, UTF-8
    body: the rest (for PUT: the message in MQ format, Message.to_bytes())

Why JSON headers: they are small, self-describing and let a later protocol version add keys
that an older peer ignores; the message body stays binary and is never re-encoded. No I/O
here: :class:`FrameDecoder` is fed bytes and returns frames.
"""

from __future__ import annotations

import enum
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "relaymq-channel"
#: Protocol versions this code speaks; HELLO offers them, WELCOME picks one. Version 2 adds
#: the frames of synchronous remote queues (GET .. RESULT), ``expire_at`` and ``confirm_id``
#: on PUT, the destination on CONFIRM (relayed synchronous puts) and ``queue`` on PULL.
VERSIONS: tuple[int, ...] = (1, 2)
#: Largest frame accepted (length field), to bound memory per connection: from a peer this
#: side called (its answers, a RESULT of many messages, what a pull brings).
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
#: Largest frame before the peer is authenticated: a HELLO needs a few hundred bytes (issue 15
#: finding 8: an anonymous peer made the listener buffer 64 MB frames).
HELLO_MAX_FRAME = 16 * 1024
#: Largest JSON header, and its deepest nesting of objects and arrays: a header is a flat
#: object with a few small values (``fields`` of a selection nests once), so a deeper one is a
#: protocol error, found before ``json.loads`` recurses into it (issue 15 finding 8: deeply
#: nested headers raised RecursionError and ballooned the broker's memory).
MAX_HEADER = 256 * 1024
MAX_HEADER_DEPTH = 16
_LENGTH = struct.Struct(">I")
_HEAD = struct.Struct(">BI")


class FrameType(enum.IntEnum):
    """Frame types (docs/channels.md has the table); 10-16 exist from version 2."""

    HELLO = 1
    WELCOME = 2
    PUT = 3
    ACK = 4
    CONFIRM = 5
    CONFIRMED = 6
    ERROR = 7
    PULL = 8
    PULL_DONE = 9
    GET = 10
    BROWSE = 11
    DELETE = 12
    UNLOCK = 13
    CONFIRM_GET = 14
    UNDO = 15
    RESULT = 16


#: Requests on a synchronous remote queue (version 2): each is answered by RESULT or ERROR
#: carrying the request's ``req`` number.
REQUEST_FRAMES = frozenset({FrameType.GET, FrameType.BROWSE, FrameType.DELETE, FrameType.UNLOCK,
                            FrameType.CONFIRM_GET, FrameType.UNDO})


class ChannelProtocolError(Exception):
    """The peer broke the protocol (bad frame, unknown type, wrong order): drop the connection."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame."""

    type: FrameType
    header: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""


def encode_frame(frame_type: FrameType, header: dict[str, Any] | None = None, body: bytes = b"") -> bytes:
    """The wire bytes of one frame, length prefix included."""
    head = json.dumps(header or {}, separators=(",", ":")).encode("utf-8")
    payload_len = _HEAD.size + len(head) + len(body)
    return _LENGTH.pack(payload_len) + _HEAD.pack(int(frame_type), len(head)) + head + body


def decode_payload(payload: bytes) -> Frame:
    """One frame from its payload (the bytes after the length prefix)."""
    if len(payload) < _HEAD.size:
        raise ChannelProtocolError(f"frame of {len(payload)} bytes is shorter than its header")
    type_code, head_len = _HEAD.unpack_from(payload)
    try:
        frame_type = FrameType(type_code)
    except ValueError:
        raise ChannelProtocolError(f"unknown frame type {type_code}") from None
    end = _HEAD.size + head_len
    if end > len(payload):
        raise ChannelProtocolError("frame header length runs past the end of the frame")
    if head_len > MAX_HEADER:
        raise ChannelProtocolError(f"frame header of {head_len} bytes exceeds the limit of {MAX_HEADER}")
    head = payload[_HEAD.size:end]
    if header_depth(head) > MAX_HEADER_DEPTH:
        raise ChannelProtocolError(f"frame header nests deeper than {MAX_HEADER_DEPTH} levels")
    try:
        header = json.loads(head.decode("utf-8")) if head_len else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise ChannelProtocolError(f"frame header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ChannelProtocolError("frame header is not a JSON object")
    return Frame(frame_type, header, bytes(payload[end:]))


#: A JSON string (with its escapes), removed before the brackets are counted.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def header_depth(head: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text outside its strings, without
    parsing it (no recursion: the brackets are counted)."""
    brackets = _JSON_STRING.sub(b"", head).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_HEADER_DEPTH:
                break
        else:
            depth -= 1
    return deepest


class FrameDecoder:
    """Splits a byte stream into frames; ``feed(data)`` returns the frames completed so far."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(self._buffer)
            if length > self.max_frame:
                raise ChannelProtocolError(f"frame of {length} bytes exceeds the limit of {self.max_frame}")
            if len(self._buffer) < _LENGTH.size + length:
                break
            payload = bytes(self._buffer[_LENGTH.size:_LENGTH.size + length])
            del self._buffer[:_LENGTH.size + length]
            frames.append(decode_payload(payload))
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buffer)


def decode_all(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> list[Frame]:
    """Every frame in ``data``, which must end on a frame boundary (an HTTP request body)."""
    decoder = FrameDecoder(max_frame)
    frames = decoder.feed(data)
    if decoder.pending:
        raise ChannelProtocolError(f"{decoder.pending} bytes of an incomplete frame at the end")
    return frames


def hello(qmgr: str, peer: str | None = None, credentials: tuple[str, str] | None = None) -> bytes:
    """The first frame of a connection: who calls, which versions it speaks, whom it expects,
    and (``credentials``) the user and password it authenticates with when it has no client
    certificate (docs/channels.md "Peer authentication")."""
    header: dict[str, Any] = {"protocol": PROTOCOL, "versions": list(VERSIONS), "qmgr": qmgr}
    if peer is not None:
        header["peer"] = peer
    if credentials is not None:
        header["user"], header["password"] = credentials
    return encode_frame(FrameType.HELLO, header)


def hello_credentials(header: dict[str, Any]) -> tuple[str, bytes] | None:
    """(user, password) a HELLO header carries, None when it carries none (or not as strings)."""
    user, password = header.get("user"), header.get("password")
    if not isinstance(user, str) or not user or not isinstance(password, str):
        return None
    return user, password.encode("utf-8")


def error_frame(reason: int, name: str, message: str, *, uid: str | None = None,
                reply_to: FrameType | None = None, req: int | None = None) -> bytes:
    """An ERROR frame: the reason code and name of a QueueError (relaymq.qmgr.errors)."""
    header: dict[str, Any] = {"reason": reason, "name": name, "message": message}
    if uid is not None:
        header["uid"] = uid
    if req is not None:
        header["req"] = req
    if reply_to is not None:
        header["reply_to"] = reply_to.name
    return encode_frame(FrameType.ERROR, header)


def result_frame(req: int, value: Any = None, messages: list[tuple[dict[str, Any], bytes]] | None = None) -> bytes:
    """RESULT (version 2): the answer to request ``req``. ``value`` is the operation's result
    (an int or bool); ``messages`` are (facts, MQ-format bytes) pairs, the facts being a JSON
    object (uid, queue, priority, lock_id); the bytes follow one another in the body and each
    item's ``length`` says where one ends."""
    items = []
    body = bytearray()
    for facts, data in messages or ():
        items.append({**facts, "length": len(data)})
        body += data
    header: dict[str, Any] = {"req": req, "messages": items}
    if value is not None:
        header["value"] = value
    return encode_frame(FrameType.RESULT, header, bytes(body))


def result_messages(frame: Frame) -> list[tuple[dict[str, Any], bytes]]:
    """The (facts, MQ-format bytes) pairs of a RESULT frame."""
    items = frame.header.get("messages")
    if not isinstance(items, list):
        raise ChannelProtocolError("RESULT without a messages list")
    out = []
    offset = 0
    for item in items:
        length = item.get("length") if isinstance(item, dict) else None
        if not isinstance(length, int) or length < 0 or offset + length > len(frame.body):
            raise ChannelProtocolError("RESULT message lengths do not match its body")
        out.append((item, frame.body[offset:offset + length]))
        offset += length
    if offset != len(frame.body):
        raise ChannelProtocolError("RESULT body longer than its messages")
    return out
