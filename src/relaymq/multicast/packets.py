"""The multicast wire format: one UDP datagram is one packet. No I/O.

Every packet starts with the magic ``RM``, the version (1) and its type; integers are big
endian. A *stream* is one enabled topic region (or one reverted subscription, unicast); its
packets are numbered from 1 by ``seq`` (u32), so a receiver sees a gap as soon as a later
packet or a heartbeat arrives.

=========  ==========================  ==================================================
type       direction                   body
=========  ==========================  ==================================================
DATA 1     broker -> group/receiver    stream u32, seq u32, flags u8 (1 reliable, 2 repair),
                                       fragment u16, fragments u16, topic (u16 length,
                                       UTF-8), then the payload (the rest)
HEARTBEAT  broker -> group/receiver    stream u32, latest seq u32 (0: none yet), oldest
2                                      repairable seq u32, flags u8, heartbeat timeout u16
NAK 3      receiver -> broker          stream u32, ranges: count u16, (first u32, count u16)*
LOST 4     broker -> group/receiver    same body as NAK: packets out of the repair window
JOIN 5     receiver -> broker          request u32, topic filter (u16 length, UTF-8)
ACCEPT 6   broker -> receiver          request u32, mode u8 (0 multicast, 1 unicast,
                                       2 rejected), reason (u16 + UTF-8), heartbeat timeout
                                       u16, backoff ms u16, NAK check period ms u16, NAK
                                       accumulation ms u16, socket buffer KB u16, streams:
                                       count u16, (stream u32, group 4 bytes, port u16,
                                       flags u8, next seq u32)*
LEAVE 7    receiver -> broker          request u32 (its unicast subscription ends)
=========  ==========================  ==================================================

A message longer than one packet travels as ``fragments`` packets with consecutive sequence
numbers; the receiver delivers it once it has them all.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

MAGIC = b"RM"
VERSION = 1
DATA, HEARTBEAT, NAK, LOST, JOIN, ACCEPT, LEAVE = range(1, 8)
RELIABLE, REPAIR = 1, 2
MODE_MULTICAST, MODE_UNICAST, MODE_REJECTED = 0, 1, 2

_HEADER = struct.Struct("!2sBB")
_DATA = struct.Struct("!IIBHHH")
_HEARTBEAT = struct.Struct("!IIIBH")
_RANGE = struct.Struct("!IH")
_STREAM = struct.Struct("!I4sHBI")
_ACCEPT = struct.Struct("!IB")
_PARAMS = struct.Struct("!HHHHH")
#: The DATA header before the topic: what a packet of ``packet_size`` bytes leaves for the rest.
DATA_OVERHEAD = _HEADER.size + _DATA.size
#: The most ranges one NAK or LOST carries (a packet stays well under the smallest packet size).
MAX_RANGES = 64


class PacketError(ValueError):
    """Not a packet of this protocol, or a truncated one."""


@dataclass(frozen=True)
class Data:
    stream: int
    seq: int
    flags: int
    fragment: int
    fragments: int
    topic: str
    payload: bytes


@dataclass(frozen=True)
class Heartbeat:
    stream: int
    latest: int
    oldest: int
    flags: int
    heartbeat_timeout: int


@dataclass(frozen=True)
class Ranges:
    """A NAK (``kind`` NAK) or a LOST (``kind`` LOST): ``ranges`` of (first seq, count)."""

    kind: int
    stream: int
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Join:
    request: int
    topic_filter: str


@dataclass(frozen=True)
class StreamInfo:
    stream: int
    group: str
    port: int
    flags: int
    next_seq: int


@dataclass(frozen=True)
class Accept:
    request: int
    mode: int
    reason: str
    heartbeat_timeout: int
    backoff_ms: int
    nack_check_period_ms: int
    nack_accumulation_ms: int
    socket_buffer_kb: int
    streams: tuple[StreamInfo, ...]


@dataclass(frozen=True)
class Leave:
    request: int


Packet = Data | Heartbeat | Ranges | Join | Accept | Leave


def _header(kind: int) -> bytes:
    return _HEADER.pack(MAGIC, VERSION, kind)


def _text(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("!H", len(raw)) + raw


def encode(packet: Packet) -> bytes:
    if isinstance(packet, Data):
        topic = packet.topic.encode()
        return (_header(DATA) + _DATA.pack(packet.stream, packet.seq, packet.flags, packet.fragment,
                                           packet.fragments, len(topic)) + topic + packet.payload)
    if isinstance(packet, Heartbeat):
        return _header(HEARTBEAT) + _HEARTBEAT.pack(packet.stream, packet.latest, packet.oldest, packet.flags,
                                                    packet.heartbeat_timeout)
    if isinstance(packet, Ranges):
        body = b"".join(_RANGE.pack(first, count) for first, count in packet.ranges[:MAX_RANGES])
        return _header(packet.kind) + struct.pack("!IH", packet.stream, min(len(packet.ranges), MAX_RANGES)) + body
    if isinstance(packet, Join):
        return _header(JOIN) + struct.pack("!I", packet.request) + _text(packet.topic_filter)
    if isinstance(packet, Accept):
        streams = b"".join(_STREAM.pack(s.stream, ipaddress.IPv4Address(s.group).packed, s.port, s.flags,
                                        s.next_seq) for s in packet.streams)
        return (_header(ACCEPT) + _ACCEPT.pack(packet.request, packet.mode) + _text(packet.reason)
                + _PARAMS.pack(packet.heartbeat_timeout, packet.backoff_ms, packet.nack_check_period_ms,
                               packet.nack_accumulation_ms, packet.socket_buffer_kb)
                + struct.pack("!H", len(packet.streams)) + streams)
    return _header(LEAVE) + struct.pack("!I", packet.request)


class _Reader:
    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def take(self, layout: struct.Struct) -> tuple:
        end = self.offset + layout.size
        if end > len(self.data):
            raise PacketError("truncated packet")
        values = layout.unpack_from(self.data, self.offset)
        self.offset = end
        return values

    def text(self) -> str:
        (length,) = self.take(struct.Struct("!H"))
        end = self.offset + length
        if end > len(self.data):
            raise PacketError("truncated string")
        try:
            value = self.data[self.offset:end].decode()
        except UnicodeDecodeError:
            raise PacketError("string is not UTF-8") from None
        self.offset = end
        return value


def decode(data: bytes) -> Packet:
    """One datagram as a packet; PacketError for anything else."""
    if len(data) < _HEADER.size:
        raise PacketError("shorter than a header")
    magic, version, kind = _HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise PacketError("not a relaymq multicast packet")
    reader = _Reader(data, _HEADER.size)
    if kind == DATA:
        stream, seq, flags, fragment, fragments, topic_length = reader.take(_DATA)
        end = reader.offset + topic_length
        if end > len(data) or fragments == 0 or fragment >= fragments:
            raise PacketError("bad DATA packet")
        try:
            topic = data[reader.offset:end].decode()
        except UnicodeDecodeError:
            raise PacketError("topic is not UTF-8") from None
        return Data(stream, seq, flags, fragment, fragments, topic, data[end:])
    if kind == HEARTBEAT:
        return Heartbeat(*reader.take(_HEARTBEAT))
    if kind in (NAK, LOST):
        stream, count = reader.take(struct.Struct("!IH"))
        return Ranges(kind, stream, tuple(reader.take(_RANGE) for _ in range(count)))
    if kind == JOIN:
        (request,) = reader.take(struct.Struct("!I"))
        return Join(request, reader.text())
    if kind == ACCEPT:
        request, mode = reader.take(_ACCEPT)
        reason = reader.text()
        heartbeat, backoff, check, accumulation, buffer_kb = reader.take(_PARAMS)
        (count,) = reader.take(struct.Struct("!H"))
        streams = []
        for _ in range(count):
            stream, group, port, flags, next_seq = reader.take(_STREAM)
            streams.append(StreamInfo(stream, str(ipaddress.IPv4Address(group)), port, flags, next_seq))
        return Accept(request, mode, reason, heartbeat, backoff, check, accumulation, buffer_kb, tuple(streams))
    if kind == LEAVE:
        (request,) = reader.take(struct.Struct("!I"))
        return Leave(request)
    raise PacketError(f"unknown packet type {kind}")


def to_ranges(seqs: list[int]) -> tuple[tuple[int, int], ...]:
    """Sorted sequence numbers as (first, count) runs."""
    runs: list[list[int]] = []
    for seq in sorted(set(seqs)):
        if runs and runs[-1][0] + runs[-1][1] == seq and runs[-1][1] < 0xFFFF:
            runs[-1][1] += 1
        else:
            runs.append([seq, 1])
    return tuple((first, count) for first, count in runs)


def from_ranges(ranges: tuple[tuple[int, int], ...]) -> list[int]:
    return [first + i for first, count in ranges for i in range(count)]
