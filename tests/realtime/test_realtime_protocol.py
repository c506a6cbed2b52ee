"""Item 46's protocol without sockets: the framing, the overflow policy of a client's queue and
the session's rules, each case chosen by hand."""

from __future__ import annotations

import pytest

from relaymq.realtime import frames
from relaymq.realtime.frames import Ack, Close, FrameReader, FrameTooLarge, Hello, Ping, Publish, Subscribe, Welcome
from relaymq.realtime.outqueue import HIGH, NORMAL, RESPONSE, OutQueue
from relaymq.realtime.session import HELLO_TIMEOUT, Session
from relaymq.realtime.settings import build


def test_item_46_frames_round_trip_split_anywhere() -> None:
    """Item 46 (the framing of docs/pubsub.md): every frame decodes to itself, fed byte by byte."""
    sent = [Hello("c1"), Welcome(5000, 100000, 1000000), Subscribe(1, "a/#"), Subscribe(2, "a/#", True),
            Ack(1, True), Ack(2, False, "no", True), Publish("a/b", b"\x00payload", 9, b"corr"), Ping(7),
            Ping(7, True), Close(frames.TOO_LARGE, "too big")]
    data = b"".join(frames.encode(frame) for frame in sent)
    reader = FrameReader(1000)
    got = [frame for byte in data for frame in reader.feed(bytes([byte]))]
    assert got == sent


def test_item_46_max_message_size_is_checked_before_the_body() -> None:
    """Item 46, seed 003 l.2052-2058: a frame over the maximum is refused once its length is read."""
    header = frames.encode(Publish("t", b"x" * 5000))[:4]
    with pytest.raises(FrameTooLarge):
        FrameReader(1000).feed(header)


def test_item_46_overflow_policy() -> None:
    """Item 46, seed 003 l.2026-2038: past the limit every queued message goes except the
    latest, the high-priority ones and the responses; the order of those kept is kept;
    0 = no limit."""
    queue = OutQueue(100)
    for index, kind in enumerate([NORMAL, HIGH, NORMAL, RESPONSE, NORMAL, NORMAL]):
        queue.push(b"%d" % index * 20, kind)
    assert [entry.data[:1] for entry in queue.entries] == [b"1", b"3", b"5"]
    assert (queue.dropped, queue.size) == (3, 60)
    assert queue.take(10) == b"1" * 20  # at least one whole frame
    unlimited = OutQueue(0)
    for _ in range(1000):
        unlimited.push(b"x" * 1000)
    assert len(unlimited) == 1000 and unlimited.dropped == 0


def test_item_46_session_rules() -> None:
    """Item 46: HELLO first (else closed), WELCOME states the seed's limits; an invalid filter
    is refused and the session goes on; an oversized frame closes it (seed l.2052-2058)."""
    settings = build({"max_message_size": 200}, "realtime", None)
    rude = Session(settings, "peer", 0.0)
    rude.on_bytes(frames.encode(Publish("t", b"x")), 0.0)
    assert rude.closed is not None and rude.closed.reason == frames.PROTOCOL_ERROR
    session = Session(settings, "peer", 0.0)
    work = session.on_bytes(frames.encode(Hello("c")) + frames.encode(Subscribe(1, "a/+/#"))
                            + frames.encode(Subscribe(2, "a/#/b")) + frames.encode(Publish("a/b", b"hi")), 0.0)
    assert work == [Subscribe(1, "a/+/#"), Publish("a/b", b"hi")]
    replies = FrameReader(1 << 20).feed(session.out.take(1 << 20))
    assert replies[0] == Welcome(5000, 200, 1_000_000)
    assert replies[1] == Ack(1, True) and isinstance(replies[2], Ack) and not replies[2].ok
    session.on_bytes(frames.encode(Publish("a/b", b"x" * 300)), 0.0)
    assert session.closed is not None and session.closed.reason == frames.TOO_LARGE


def test_item_46_pings_and_hello_timeout() -> None:
    """Item 46, seed 003 l.2040-2050: a PING every brokerPingInterval; a client silent for three
    intervals is closed; a connection that never says HELLO is closed after HELLO_TIMEOUT."""
    settings = build({"broker_ping_interval": 1000}, "realtime", None)
    session = Session(settings, "peer", 0.0)
    session.on_bytes(frames.encode(Hello("c")), 0.0)
    session.out.take(1 << 20)
    session.tick(1.0)
    assert FrameReader(1 << 20).feed(session.out.take(1 << 20)) == [Ping(1)]
    session.on_bytes(frames.encode(Ping(1, True)), 1.5)
    session.tick(4.4)
    assert session.closed is None
    session.tick(4.6)
    assert session.closed is not None and session.closed.reason == frames.PING_TIMEOUT
    mute = Session(build({"broker_ping_interval": 0}, "realtime", None), "peer", 0.0)
    mute.tick(HELLO_TIMEOUT - 1)
    assert mute.closed is None
    mute.tick(HELLO_TIMEOUT + 1)
    assert mute.closed is not None and mute.closed.reason == frames.PROTOCOL_ERROR
