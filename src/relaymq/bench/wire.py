"""The load generator's sans-I/O hot path: stamped PUBLISH batches out, a fast stream scan in.

Why not the broker's own decoder for incoming packets: it checks every rule of an untrusted
peer and builds a dataclass per packet; a load generator reading from the broker it measures
needs none of that and must not be the bottleneck (issue 8). So the scan below reads only what
the figures need (type, packet id, the stamp in the payload) straight out of the receive buffer.
Packets are still *encoded* with :mod:`relaymq.mqtt.encoder` (CONNECT, SUBSCRIBE and a PUBLISH
template); the hot path only patches the template's packet id and stamp ("encode once, write
many", design guide).

The stamp is the first :data:`STAMP_SIZE` bytes of every payload: publisher index (u32),
sequence number (u32) and the send time in ``time.monotonic_ns()`` (u64, big endian). On Linux
that clock is system-wide, so a subscriber in another process computes the latency directly.

No I/O here: :mod:`relaymq.bench.client` moves the bytes.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass, field

from relaymq.mqtt.encoder import encode, encode_publish
from relaymq.mqtt.packets import (
    CONNACK, MQTT_5, Connect, Disconnect, Pubrel, Subscribe, Subscription,
)
from relaymq.mqtt.properties import decode_properties
from relaymq.mqtt.wire import decode_remaining_length, decode_varint

#: Layout of the stamp at the start of each payload: publisher, sequence, monotonic ns.
STAMP = struct.Struct(">IIQ")
STAMP_SIZE = STAMP.size
_PACKET_ID = struct.Struct(">H")
_pack_stamp = STAMP.pack_into
_pack_id = _PACKET_ID.pack_into
_unpack_stamp = STAMP.unpack_from

# Packet types (high nibble of the first byte).
_CONNACK, _PUBLISH, _PUBACK, _PUBREC, _PUBREL, _PUBCOMP, _SUBACK = 2, 3, 4, 5, 6, 7, 9
#: Largest packet id; ids cycle 1..65535.
MAX_PACKET_ID = 0xFFFF
#: Latency samples kept per subscriber before sampling thins them (memory stays bounded).
MAX_LATENCY_SAMPLES = 2_000_000


def connect_packet(client_id: str, level: int, *, clean: bool = True, keep_alive: int = 0,
                   session_expiry: int | None = None, receive_maximum: int | None = None,
                   username: str | None = None, password: bytes | None = None) -> bytes:
    """CONNECT for protocol level 4 or 5 (MQTT 5 properties only at level 5)."""
    props: dict[str, object] = {}
    if level == MQTT_5:
        if session_expiry:
            props["session_expiry_interval"] = session_expiry
        if receive_maximum:
            props["receive_maximum"] = receive_maximum
    return encode(Connect(protocol_level=level, clean_start=clean, keep_alive=keep_alive,
                          client_id=client_id, username=username, password=password,
                          properties=props), level)


def subscribe_packet(topic_filter: str, qos: int, level: int, packet_id: int = 1) -> bytes:
    """SUBSCRIBE to one filter."""
    return subscribe_many_packet([topic_filter], qos, level, packet_id)


def subscribe_many_packet(topic_filters: list[str], qos: int, level: int, packet_id: int = 1) -> bytes:
    """One SUBSCRIBE to several filters, each at ``qos``."""
    return encode(Subscribe(packet_id, [Subscription(f, qos) for f in topic_filters]), level)


def disconnect_packet(level: int, session_expiry: int | None = None) -> bytes:
    """DISCONNECT (normal, reason 0); at level 5 ``session_expiry`` (0: end the session now)
    replaces the interval given at CONNECT (5.0 §3.14.2.2.2)."""
    props: dict[str, object] = {}
    if level == MQTT_5 and session_expiry is not None:
        props["session_expiry_interval"] = session_expiry
    return encode(Disconnect(properties=props), level)


def parse_connack(body: bytes, level: int) -> tuple[bool, int, int | None]:
    """(session present, return/reason code, server Receive Maximum or None) from a CONNACK body.

    Only what the generator needs: a refused connection and the broker's inflight limit
    (5.0 §3.2.2.3.3), which caps the publisher's window at level 5."""
    session_present = bool(body[0] & 1)
    code = body[1]
    receive_maximum = None
    if level == MQTT_5 and len(body) > 2:
        props, _ = decode_properties(memoryview(body), 2, CONNACK)
        receive_maximum = props.get("receive_maximum")
    return session_present, code, receive_maximum


def split_frame(buf: bytes | bytearray, pos: int) -> tuple[int, int, int] | None:
    """(first byte, body start, body end) of the packet at ``pos``, or None if incomplete."""
    if pos + 2 > len(buf):
        return None
    header = decode_remaining_length(buf, pos + 1)
    if header is None:
        return None
    length, start = header
    if start + length > len(buf):
        return None
    return buf[pos], start, start + length


class PublishTemplates:
    """Encoded PUBLISH packets, one per topic, that the publisher stamps and sends in batches.

    Message ``k`` goes to topic ``k % len(topics)``; all templates have the same payload size,
    so a batch is a concatenation whose stamp and packet id offsets are computed once."""

    def __init__(self, topics: list[str], payload_size: int, qos: int, level: int,
                 retain: bool = False) -> None:
        if payload_size < STAMP_SIZE:
            raise ValueError(f"payload size must be at least {STAMP_SIZE} bytes (the stamp)")
        payload = b"x" * payload_size
        self.qos = qos
        self.packets: list[bytes] = []
        self.stamp_offsets: list[int] = []
        self.id_offsets: list[int] = []
        for topic in topics:
            packet = encode_publish(topic, payload, qos, retain, False, 1 if qos else None,
                                    None, level)
            stamp_at = len(packet) - payload_size
            # The packet id sits right after the topic; at level 5 one property-length byte follows.
            id_at = stamp_at - 2 - (1 if level == MQTT_5 else 0)
            self.packets.append(packet)
            self.stamp_offsets.append(stamp_at)
            self.id_offsets.append(id_at)

    def batch(self, publisher: int, first_seq: int, count: int, now_ns: int,
              first_packet_id: int = 1) -> bytes:
        """``count`` packets for sequence numbers first_seq.., all stamped ``now_ns``.

        Packet ids (QoS 1/2) are ``first_packet_id``.. wrapping 65535 -> 1. One timestamp per
        batch: the batch leaves in one write, so its packets share the send time."""
        packets = self.packets
        n_topics = len(packets)
        if n_topics == 1:
            template = packets[0]
            size = len(template)
            buf = bytearray(template * count)
            stamp_at = self.stamp_offsets[0]
            id_at = self.id_offsets[0]
            qos = self.qos
            pid = first_packet_id
            off = 0
            for seq in range(first_seq, first_seq + count):
                _pack_stamp(buf, off + stamp_at, publisher, seq, now_ns)
                if qos:
                    _pack_id(buf, off + id_at, pid)
                    pid = 1 if pid == MAX_PACKET_ID else pid + 1
                off += size
            return bytes(buf)
        parts = []
        pid = first_packet_id
        for seq in range(first_seq, first_seq + count):
            k = seq % n_topics
            one = bytearray(packets[k])
            _pack_stamp(one, self.stamp_offsets[k], publisher, seq, now_ns)
            if self.qos:
                _pack_id(one, self.id_offsets[k], pid)
                pid = 1 if pid == MAX_PACKET_ID else pid + 1
            parts.append(one)
        return b"".join(parts)


def next_packet_id(packet_id: int, count: int) -> int:
    """The packet id ``count`` steps after ``packet_id`` in the 1..65535 cycle."""
    return (packet_id - 1 + count) % MAX_PACKET_ID + 1


@dataclass
class AckScan:
    """What :func:`scan_acks` found in a publisher's receive buffer."""

    completed: int = 0        # QoS 1 PUBACKs and QoS 2 PUBCOMPs: window slots freed
    replies: bytes = b""      # PUBRELs to send for PUBRECs
    consumed: int = 0         # bytes of the buffer that were whole packets
    refused: int = 0          # acks with a failure reason code (level 5, >= 0x80)


def scan_acks(buf: bytes | bytearray, level: int) -> AckScan:
    """Scan a publisher's incoming bytes: count PUBACK/PUBCOMP, answer PUBREC with PUBREL."""
    result = AckScan()
    pos = 0
    end = len(buf)
    replies = bytearray()
    while pos < end:
        frame = split_frame(buf, pos)
        if frame is None:
            break
        first, start, stop = frame
        kind = first >> 4
        if kind in (_PUBACK, _PUBCOMP):
            result.completed += 1
            if stop - start > 2 and buf[start + 2] >= 0x80:
                result.refused += 1
        elif kind == _PUBREC:
            if stop - start > 2 and buf[start + 2] >= 0x80:
                result.completed += 1   # a refused QoS 2 flow ends at PUBREC (5.0 §4.3.3)
                result.refused += 1
            else:
                replies += b"\x62\x02" + bytes(buf[start:start + 2])
        pos = stop
    result.consumed = pos
    result.replies = bytes(replies)
    return result


@dataclass
class ReceiveTally:
    """A subscriber's running figures, fed by :func:`scan_publishes`.

    ``seen`` is one bitmap per publisher (index = sequence number) so duplicates are told from
    new messages and losses are exact; ``latencies_us`` keeps one sample per message (every
    ``stride``-th once :data:`MAX_LATENCY_SAMPLES` is reached)."""

    received: int = 0
    unique: int = 0
    duplicates: int = 0
    retained: int = 0
    unstamped: int = 0
    first_ns: int = 0
    last_ns: int = 0
    seen: dict[int, bytearray] = field(default_factory=dict)
    latencies_us: array = field(default_factory=lambda: array("q"))
    stride: int = 1
    #: The most acknowledgements one read needed (each is 4 bytes). For a QoS 1 stream that
    #: is the most messages the broker had sent unacknowledged at once, as far as the client
    #: can see it: a lower bound of the broker's in-flight window (bench/compare row 8).
    largest_burst: int = 0

    def add(self, now_ns: int, received: int, unique: int, duplicates: int, retained: int, unstamped: int) -> None:
        """Count what one chunk that arrived at ``now_ns`` held (it received something)."""
        if not self.first_ns:
            self.first_ns = now_ns
        self.last_ns = now_ns
        self.received += received
        self.unique += unique
        self.duplicates += duplicates
        self.retained += retained
        self.unstamped += unstamped
        if len(self.latencies_us) > MAX_LATENCY_SAMPLES:
            # keep memory bounded on long runs: halve the samples, double the stride
            del self.latencies_us[1::2]
            self.stride *= 2

    def mark(self, publisher: int, seq: int) -> bool:
        """Record sequence ``seq`` of ``publisher``; False when it was already seen."""
        bitmap = self.seen.get(publisher)
        if bitmap is None:
            bitmap = self.seen[publisher] = bytearray(max(1024, seq + 1))
        elif seq >= len(bitmap):
            bitmap.extend(bytes(max(len(bitmap), seq + 1 - len(bitmap))))
        if bitmap[seq]:
            return False
        bitmap[seq] = 1
        return True


def scan_publishes(buf: bytes | bytearray, level: int, tally: ReceiveTally, now_ns: int,
                   ) -> tuple[int, bytes]:
    """Scan a subscriber's incoming bytes; returns (bytes consumed, acks to send).

    QoS 1 PUBLISH -> PUBACK, QoS 2 PUBLISH -> PUBREC, PUBREL -> PUBCOMP; every whole PUBLISH
    updates ``tally``. ``now_ns`` is when this chunk arrived: latency = now_ns - stamp."""
    pos = 0
    end = len(buf)
    acks = bytearray()
    seen = tally.seen
    lat = tally.latencies_us
    append_latency = lat.append
    stride = tally.stride
    v5 = level == MQTT_5
    received = unique = duplicates = retained = unstamped = 0
    while pos < end:
        # inline split_frame: this loop runs once per message
        if pos + 2 > end:
            break
        first = buf[pos]
        digit = buf[pos + 1]
        if digit < 0x80:
            length = digit
            start = pos + 2
        else:
            frame = split_frame(buf, pos)
            if frame is None:
                break
            first, start, stop = frame
            length = stop - start
        stop = start + length
        if stop > end:
            break
        kind = first >> 4
        if kind == _PUBLISH:
            qos = (first >> 1) & 3
            at = start + 2 + (buf[start] << 8 | buf[start + 1])
            if qos:
                pid = buf[at:at + 2]
                at += 2
                acks += (b"\x40\x02" if qos == 1 else b"\x50\x02") + pid
            if v5:
                plen = buf[at]
                if plen < 0x80:
                    at += 1 + plen
                else:
                    plen, at = decode_varint(buf, at, stop)
                    at += plen
            received += 1
            retained += first & 1  # the RETAIN flag
            if stop - at >= STAMP_SIZE:
                publisher, seq, sent_ns = _unpack_stamp(buf, at)
                bitmap = seen.get(publisher)
                if bitmap is not None and seq < len(bitmap):
                    if bitmap[seq]:
                        duplicates += 1
                    else:
                        bitmap[seq] = 1
                        unique += 1
                elif tally.mark(publisher, seq):
                    unique += 1
                else:
                    duplicates += 1
                if stride == 1 or (tally.received + received) % stride == 0:
                    append_latency((now_ns - sent_ns) // 1000)
            else:
                unstamped += 1
                unique += 1
        elif kind == _PUBREL:
            acks += b"\x70\x02" + buf[start:start + 2]
        pos = stop
    if received:
        tally.add(now_ns, received, unique, duplicates, retained, unstamped)
    return pos, bytes(acks)


def pubrel_packet(packet_id: int, level: int) -> bytes:
    """PUBREL for ``packet_id`` (used by tests to check :func:`scan_acks` answers the same)."""
    return encode(Pubrel(packet_id), level)
