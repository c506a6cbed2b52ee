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
import struct
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "relaymq-channel"
#: Protocol versions this code speaks; HELLO offers them, WELCOME picks one.
VERSIONS: tuple[int, ...] = (1,)
#: Largest frame accepted (length field), to bound memory per connection.
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")
_HEAD = struct.Struct(">BI")


class FrameType(enum.IntEnum):
    """Frame types of version 1 (docs/channels.md has the table)."""

    HELLO = 1
    WELCOME = 2
    PUT = 3
    ACK = 4
    CONFIRM = 5
    CONFIRMED = 6
    ERROR = 7
    PULL = 8
    PULL_DONE = 9


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
    try:
        header = json.loads(payload[_HEAD.size:end].decode("utf-8")) if head_len else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise ChannelProtocolError(f"frame header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ChannelProtocolError("frame header is not a JSON object")
    return Frame(frame_type, header, bytes(payload[end:]))


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


def hello(qmgr: str, peer: str | None = None) -> bytes:
    """The first frame of a connection: who calls, which versions it speaks, whom it expects."""
    header: dict[str, Any] = {"protocol": PROTOCOL, "versions": list(VERSIONS), "qmgr": qmgr}
    if peer is not None:
        header["peer"] = peer
    return encode_frame(FrameType.HELLO, header)


def error_frame(reason: int, name: str, message: str, *, uid: str | None = None,
                reply_to: FrameType | None = None) -> bytes:
    """An ERROR frame: the reason code and name of a QueueError (relaymq.qmgr.errors)."""
    header: dict[str, Any] = {"reason": reason, "name": name, "message": message}
    if uid is not None:
        header["uid"] = uid
    if reply_to is not None:
        header["reply_to"] = reply_to.name
    return encode_frame(FrameType.ERROR, header)
