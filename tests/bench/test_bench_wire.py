"""The load generator's sans-I/O hot path (relaymq.bench.wire) against relaymq's own MQTT codec.

Everything the generator writes is decoded by the strict decoder the broker uses, and every
ack it answers with is compared byte for byte with the encoder's, so the fast hand-patched
paths cannot drift from the protocol.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from relaymq.bench.report import RunReport, percentile
from relaymq.bench.wire import (
    STAMP, STAMP_SIZE, PublishTemplates, ReceiveTally, next_packet_id, pubrel_packet,
    scan_acks, scan_publishes, split_frame,
)
from relaymq.mqtt.decoder import decode
from relaymq.mqtt.encoder import encode, encode_publish
from relaymq.mqtt.packets import Puback, Pubcomp, Pubrec, Publish
from relaymq.mqtt.wire import encode_varint


def frames(data: bytes) -> list[tuple[int, bytes]]:
    """Split a byte stream into (first byte, body) with the generator's framer."""
    out, pos = [], 0
    while pos < len(data):
        frame = split_frame(data, pos)
        assert frame is not None, "stream ends inside a packet"
        first, start, stop = frame
        out.append((first, data[start:stop]))
        pos = stop
    return out


@pytest.mark.parametrize("level", [4, 5])
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_batch_decodes_as_valid_publishes(level: int, qos: int) -> None:
    """mqtt.md items 27-28 (seed 000 l.1056-1074): topic, then a packet id 1..65535 only at
    QoS > 0; the stamp sits at the start of the payload and ids wrap 65535 -> 1."""
    templates = PublishTemplates(["bench/x/0", "bench/x/1"], 64, qos, level)
    data = templates.batch(7, 100, 5, 123456789, first_packet_id=65534)
    packets = [decode(first, body, level) for first, body in frames(data)]
    assert len(packets) == 5
    for k, packet in enumerate(packets):
        assert isinstance(packet, Publish)
        assert packet.qos == qos and len(packet.payload) == 64
        assert packet.topic == f"bench/x/{(100 + k) % 2}"
        assert STAMP.unpack_from(packet.payload) == (7, 100 + k, 123456789)
    if qos:
        assert [p.packet_id for p in packets] == [65534, 65535, 1, 2, 3]
        assert next_packet_id(65534, 5) == 4


def test_payload_smaller_than_stamp_is_refused() -> None:
    """The latency and loss figures need the stamp in every payload (issue 8: timestamps in
    the payload)."""
    with pytest.raises(ValueError):
        PublishTemplates(["t"], STAMP_SIZE - 1, 0, 4)


@pytest.mark.parametrize("length", [0, 127, 128, 16383, 16384, 2097152])
def test_split_frame_remaining_length_boundaries(length: int) -> None:
    """mqtt.md item 16 (seed 000 l.853-864): 1- to 4-byte Remaining Length, and an incomplete
    packet is reported as such, not misread."""
    packet = b"\x30" + encode_varint(length) + b"\x00" * length
    assert split_frame(packet, 0) == (0x30, len(packet) - length, len(packet))
    assert split_frame(packet[:-1], 0) is None if length else True


def _stream(level: int, qos: int, seqs: list[int], retain: bool = False) -> tuple[bytes, list[int]]:
    """PUBLISH packets encoded by relaymq's encoder, stamped with ``seqs``; and their ids."""
    parts, ids = [], []
    for n, seq in enumerate(seqs):
        pid = n % 65535 + 1 if qos else None
        payload = STAMP.pack(3, seq, time.monotonic_ns()) + b"p" * 48
        props = {"user_property": [("k", "v")]} if level == 5 else None
        parts.append(encode_publish("bench/s/0", payload, qos, retain, False, pid, props, level))
        if pid:
            ids.append(pid)
    return b"".join(parts), ids


@settings(max_examples=60, deadline=None)
@given(level=st.sampled_from([4, 5]), qos=st.sampled_from([0, 1, 2]),
       cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=8))
def test_scan_publishes_any_chunking(level: int, qos: int, cuts: list[int]) -> None:
    """mqtt.md items 8-10 and 29 (seed 000 l.1313-1608): each QoS 1 PUBLISH is answered with
    PUBACK, each QoS 2 with PUBREC, with the packet's own id, whatever TCP chunking splits
    packets; counts, duplicates and uniqueness come out exact."""
    seqs = list(range(40)) + [5, 6]           # two duplicates
    data, ids = _stream(level, qos, seqs)
    tally = ReceiveTally()
    acks = bytearray()
    buf = bytearray()
    points = sorted({c % len(data) for c in cuts} | {len(data)})
    prev = 0
    for point in points:
        buf += data[prev:point]
        prev = point
        used, out = scan_publishes(buf, level, tally, time.monotonic_ns())
        del buf[:used]
        acks += out
    assert not buf
    assert (tally.received, tally.unique, tally.duplicates) == (42, 40, 2)
    if qos == 0:
        assert acks == b""
    else:
        ack_cls = Puback if qos == 1 else Pubrec
        assert bytes(acks) == b"".join(encode(ack_cls(pid), level) for pid in ids)


def test_scan_publishes_answers_pubrel_with_pubcomp() -> None:
    """mqtt.md item 9 (seed 000 l.736-741): the receiver of a QoS 2 flow ends it with PUBCOMP
    for the PUBREL's id."""
    tally = ReceiveTally()
    used, acks = scan_publishes(pubrel_packet(513, 4), 4, tally, 0)
    assert used == 4 and acks == encode(Pubcomp(513), 4)
    assert tally.received == 0


def test_scan_publishes_counts_retained_and_losses() -> None:
    """mqtt.md item 31 (seed 000 l.843): retained deliveries carry RETAIN=1 and are counted
    apart; missing sequence numbers show as the difference between expected and unique."""
    data, _ = _stream(4, 0, [0, 1, 2, 4, 7], retain=True)
    tally = ReceiveTally()
    scan_publishes(data, 4, tally, time.monotonic_ns())
    assert tally.retained == 5 and tally.unique == 5
    report = RunReport(1, 1, 0, 4, 64, sent=8, completed=8, expected=8, received=5, unique=5)
    report.finish(0, 10**9, 2 * 10**9, tally.latencies_us)
    assert report.lost == 3 and report.receive_rate == pytest.approx(2.5)


@pytest.mark.parametrize("level", [4, 5])
def test_scan_acks(level: int) -> None:
    """mqtt.md item 29 (seed 000 l.1313-1608): PUBACK and PUBCOMP free a window slot; PUBREC
    is answered with PUBREL ``62 02 id`` (3.1.1); at level 5 a failure reason code (>= 0x80)
    is counted as refused."""
    stream = (encode(Puback(1), level) + encode(Pubrec(2), level) + encode(Pubcomp(3), level)
              + encode(Puback(4), level)[:1])
    scan = scan_acks(stream, level)
    assert scan.completed == 2 and scan.refused == 0
    assert scan.replies == pubrel_packet(2, level)[:4] == b"\x62\x02\x00\x02"
    assert scan.consumed == len(stream) - 1
    if level == 5:
        refused = scan_acks(encode(Puback(9, reason_code=0x87), 5), 5)
        assert refused.completed == 1 and refused.refused == 1


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=300),
       st.sampled_from([50.0, 90.0, 99.0, 99.9, 100.0]))
def test_percentile_is_nearest_rank(values: list[int], pct: float) -> None:
    """Latency percentiles (issue 8): nearest rank, the smallest value with at least pct% of
    the samples at or below it."""
    ordered = sorted(values)
    got = percentile(ordered, pct)
    assert got in ordered
    at_or_below = sum(1 for v in ordered if v <= got)
    assert at_or_below * 100 >= pct * len(ordered)
    smaller = [v for v in ordered if v < got]
    assert len(smaller) * 100 < pct * len(ordered)
