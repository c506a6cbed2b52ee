"""bench/scale.py's background work: the subscriptions it holds are the ones its docstring names
(wildcards mixed, none matching the measured stream), and the SUBSCRIBE packets that carry them
are what relaymq's own decoder reads back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from relaymq.bench.wire import subscribe_many_packet, subscribe_packet
from relaymq.mqtt.decoder import decode
from relaymq.pubsub.topics import topic_matches, validate_topic_filter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
scale = pytest.importorskip("scale")


def test_scale_filters_are_distinct_valid_mixed_and_miss_the_stream() -> None:
    filters = list(scale.scale_filters(4_000))
    assert len(set(filters)) == 4_000
    for topic_filter in filters:
        validate_topic_filter(topic_filter)
    stream_topic = f"{scale.STREAM_TOPIC}/0"
    assert not [f for f in filters if topic_matches(f, stream_topic)]
    assert sum("+" in f for f in filters) == 2_000 and sum(f.endswith("/#") for f in filters) == 1_000


@pytest.mark.parametrize("level", [4, 5])
def test_subscribe_many_packet_decodes_to_every_filter(level: int) -> None:
    filters = list(scale.scale_filters(scale.FILTERS_PER_PACKET))
    packet = subscribe_many_packet(filters, 1, level, packet_id=7)
    decoded = decode(packet[0], _body(packet), level)
    assert decoded.packet_id == 7
    assert [(s.topic_filter, s.qos) for s in decoded.subscriptions] == [(f, 1) for f in filters]
    assert subscribe_packet("a/b", 0, level) == subscribe_many_packet(["a/b"], 0, level)


def _body(packet: bytes) -> bytes:
    """The packet after its fixed header (the Remaining Length is a varint)."""
    pos = 1
    while packet[pos] & 0x80:
        pos += 1
    return packet[pos + 1:]


def test_growth_compares_cost_per_message_with_the_work() -> None:
    points = [{"x": 1_000, "figures": {"throughput": 20_000.0}},
              {"x": 1_000_000, "figures": {"throughput": 10_000.0}}]
    assert scale.growth(points) == "1,000x the work, 2.00x the time per message"
    assert scale.growth(points[:1]) == ""


def test_connection_points_fit_under_the_open_file_limit() -> None:
    assert scale.fitting([1_000, 10_000, 50_000], 20_000) == [1_000, 10_000, 19_000]
    assert scale.fitting([1_000, 10_000, 50_000], 1_048_576) == [1_000, 10_000, 50_000]
