"""The real-time transport's framing. No I/O.

The seed names the transport but not its bytes, and MQTT's framing would make it one more MQTT
listener with MQTT's session semantics; so a small framing of relaymq's own (docs/pubsub.md):

    frame   = length u32 (of what follows) | type u8 | body
    string  = length u16 | UTF-8

======  ===========  =========================================================================
type    direction    body
======  ===========  =========================================================================
1 HELLO     c -> b   version u8 (1), client id string
2 WELCOME   b -> c   ping interval ms u32, max message size u32, max queue size u64
3 SUBSCRIBE c -> b   request u32, topic filter string
4 SUBACK    b -> c   request u32, status u8 (0 ok, 1 refused), reason string
5 UNSUB     c -> b   request u32, topic filter string
6 UNSUBACK  b -> c   request u32, status u8, reason string
7 PUBLISH   both     priority u8 (0-9, JMS: 5-9 expedited), correlation (u16 + bytes: not
                     empty for a response), topic string, payload (the rest)
8 PING      both     token u32
9 PONG      both     token u32 (the PING's)
10 CLOSE    both     reason u16, text string
======  ===========  =========================================================================

Integers are big endian. A frame longer than the receiver's maximum is refused as soon as its
length is read (``FrameTooLarge``), before its body is buffered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HELLO, WELCOME, SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PUBLISH, PING, PONG, CLOSE = range(1, 11)
VERSION = 1
DEFAULT_PRIORITY = 4
#: JMS priorities 5-9 are "expedited": kept when a client's queue overflows (seed l.2030-2036).
HIGH_PRIORITY = 5
#: CLOSE reasons
NORMAL, TOO_LARGE, PROTOCOL_ERROR, PING_TIMEOUT, SHUTDOWN = 0, 1, 2, 3, 4

_LENGTH = struct.Struct("!I")


class FrameError(ValueError):
    """A frame that breaks the protocol."""


class FrameTooLarge(FrameError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"a frame of {size} bytes is over the maximum message size {limit}")
        self.size = size


@dataclass(frozen=True)
class Hello:
    client_id: str
    version: int = VERSION


@dataclass(frozen=True)
class Welcome:
    ping_interval_ms: int
    max_message_size: int
    max_queue_size: int


@dataclass(frozen=True)
class Subscribe:
    request: int
    topic_filter: str
    unsubscribe: bool = False


@dataclass(frozen=True)
class Ack:
    request: int
    ok: bool
    reason: str = ""
    unsubscribe: bool = False


@dataclass(frozen=True)
class Publish:
    topic: str
    payload: bytes
    priority: int = DEFAULT_PRIORITY
    correlation: bytes = b""

    @property
    def response(self) -> bool:
        return bool(self.correlation)


@dataclass(frozen=True)
class Ping:
    token: int
    pong: bool = False


@dataclass(frozen=True)
class Close:
    reason: int
    text: str = ""


Frame = Hello | Welcome | Subscribe | Ack | Publish | Ping | Close


def _text(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > 0xFFFF:
        raise FrameError("string longer than 65535 bytes")
    return struct.pack("!H", len(raw)) + raw


def encode(frame: Frame) -> bytes:
    if isinstance(frame, Hello):
        kind, body = HELLO, struct.pack("!B", frame.version) + _text(frame.client_id)
    elif isinstance(frame, Welcome):
        kind, body = WELCOME, struct.pack("!IIQ", frame.ping_interval_ms, frame.max_message_size,
                                          frame.max_queue_size)
    elif isinstance(frame, Subscribe):
        kind = UNSUBSCRIBE if frame.unsubscribe else SUBSCRIBE
        body = struct.pack("!I", frame.request) + _text(frame.topic_filter)
    elif isinstance(frame, Ack):
        kind = UNSUBACK if frame.unsubscribe else SUBACK
        body = struct.pack("!IB", frame.request, 0 if frame.ok else 1) + _text(frame.reason)
    elif isinstance(frame, Publish):
        kind = PUBLISH
        body = (struct.pack("!BH", frame.priority, len(frame.correlation)) + frame.correlation + _text(frame.topic)
                + frame.payload)
    elif isinstance(frame, Ping):
        kind, body = (PONG if frame.pong else PING), struct.pack("!I", frame.token)
    else:
        kind, body = CLOSE, struct.pack("!H", frame.reason) + _text(frame.text)
    return _LENGTH.pack(len(body) + 1) + bytes((kind,)) + body


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, layout: str) -> tuple:
        size = struct.calcsize(layout)
        if self.at + size > len(self.data):
            raise FrameError("truncated frame")
        values = struct.unpack_from(layout, self.data, self.at)
        self.at += size
        return values

    def raw(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise FrameError("truncated frame")
        value = self.data[self.at:self.at + size]
        self.at += size
        return value

    def text(self) -> str:
        (size,) = self.take("!H")
        try:
            return self.raw(size).decode()
        except UnicodeDecodeError:
            raise FrameError("string is not UTF-8") from None

    def rest(self) -> bytes:
        return self.data[self.at:]

    def end(self) -> None:
        if self.at != len(self.data):
            raise FrameError("bytes after the end of the frame")


def decode(kind: int, data: bytes) -> Frame:
    """One frame's body (after its length and type)."""
    body = _Body(data)
    frame: Frame
    if kind == HELLO:
        (version,) = body.take("!B")
        frame = Hello(body.text(), version)
    elif kind == WELCOME:
        frame = Welcome(*body.take("!IIQ"))
    elif kind in (SUBSCRIBE, UNSUBSCRIBE):
        (request,) = body.take("!I")
        frame = Subscribe(request, body.text(), kind == UNSUBSCRIBE)
    elif kind in (SUBACK, UNSUBACK):
        request, status = body.take("!IB")
        frame = Ack(request, status == 0, body.text(), kind == UNSUBACK)
    elif kind == PUBLISH:
        priority, size = body.take("!BH")
        correlation = body.raw(size)
        topic = body.text()
        if priority > 9:
            raise FrameError(f"priority {priority} is not 0-9")
        return Publish(topic, body.rest(), priority, correlation)
    elif kind in (PING, PONG):
        (token,) = body.take("!I")
        frame = Ping(token, kind == PONG)
    elif kind == CLOSE:
        (reason,) = body.take("!H")
        frame = Close(reason, body.text())
    else:
        raise FrameError(f"unknown frame type {kind}")
    body.end()
    return frame


class FrameReader:
    """Bytes in, frames out; ``max_size`` bounds a frame (its type and body)."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self.buffer += data
        frames: list[Frame] = []
        while len(self.buffer) >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(self.buffer)
            if size > self.max_size:
                raise FrameTooLarge(size, self.max_size)
            if size == 0:
                raise FrameError("empty frame")
            if len(self.buffer) < _LENGTH.size + size:
                break
            kind = self.buffer[_LENGTH.size]
            body = bytes(self.buffer[_LENGTH.size + 1:_LENGTH.size + size])
            del self.buffer[:_LENGTH.size + size]
            frames.append(decode(kind, body))
        return frames
