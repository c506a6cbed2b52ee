"""The channel protocol's frames and sans-I/O state machines, with real in-memory queue
managers and no sockets (docs/channels.md; everyplace.md items 15, 18-20, 25, 30)."""

from __future__ import annotations

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel import ChannelReceiver, ChannelSender, Delivered, Held, Outgoing, Refused
from relaymq.qmgr.channel_frames import (
    ChannelProtocolError,
    FrameDecoder,
    FrameType,
    decode_all,
    encode_frame,
    hello,
)
from relaymq.qmgr.errors import UnknownUID

from .helpers import body, text_message


def test_frames_are_length_prefixed_and_split_anywhere():
    """Item 30 (seed 004 l.3955-4490): 4-byte big-endian length + payload; a stream cut at any
    byte decodes to the same frames."""
    wire = encode_frame(FrameType.PUT, {"uid": "a"}, b"\x00body") + encode_frame(FrameType.ACK, {"uid": "a"})
    assert int.from_bytes(wire[:4], "big") == len(wire) - 4 - len(encode_frame(FrameType.ACK, {"uid": "a"}))
    for cut in range(len(wire) + 1):
        decoder = FrameDecoder()
        frames = decoder.feed(wire[:cut]) + decoder.feed(wire[cut:])
        assert [(f.type, f.header, f.body) for f in frames] == [
            (FrameType.PUT, {"uid": "a"}, b"\x00body"), (FrameType.ACK, {"uid": "a"}, b"")]


def test_bad_frames_are_protocol_errors():
    """docs/channels.md: unknown type, oversize length, non-JSON header, truncated body."""
    with pytest.raises(ChannelProtocolError):
        decode_all(b"\x00\x00\x00\x05\x63\x00\x00\x00\x00")  # type 99
    with pytest.raises(ChannelProtocolError):
        FrameDecoder(max_frame=10).feed(b"\x00\x00\x01\x00")
    with pytest.raises(ChannelProtocolError):
        decode_all(b"\x00\x00\x00\x07\x01\x00\x00\x00\x02{x")
    with pytest.raises(ChannelProtocolError):
        decode_all(encode_frame(FrameType.ACK, {"uid": "a"})[:-1])


def _pair(source: QueueManager, target: QueueManager) -> tuple[ChannelSender, ChannelReceiver]:
    sender, receiver = ChannelSender(source.name, target.name), ChannelReceiver(target, principal="")
    for frame in decode_all(receiver.handle(decode_all(sender.hello())[0])):
        sender.receive(frame)
    assert sender.welcomed and receiver.peer == source.name
    return sender, receiver


def _exchange(sender: ChannelSender, receiver: ChannelReceiver, wire: bytes) -> list:
    """Carry frames both ways until nothing is left; return the sender's events."""
    events = []
    while wire:
        replies = b"".join(receiver.handle(frame) for frame in decode_all(wire))
        wire = b""
        for frame in decode_all(replies):
            new, more = sender.receive(frame)
            events += new
            wire += more
    return events


@pytest.fixture
def pair():
    source, target = QueueManager.open("DEV", None), QueueManager.open("TGT", None)
    target.define_queue("IN")
    yield source, target
    source.close()
    target.close()


def test_two_phase_transfer_puts_unconfirmed_then_confirms(pair):
    """Items 18-19 (seed l.2619, 2631-2860): PUT stores invisibly, ACK, CONFIRM shows it."""
    source, target = pair
    sender, receiver = _pair(source, target)
    wire = sender.send_batch([Outgoing("u1", "TGT", "IN", text_message("one").to_bytes())])
    replies = decode_all(b"".join(receiver.handle(f) for f in decode_all(wire)))
    assert [f.type for f in replies] == [FrameType.ACK]
    assert target.depth("IN") == 1 and target.browse("IN") == []  # put-unconfirmed: invisible
    events, confirm = sender.receive(replies[0])
    assert events == [] and [f.type for f in decode_all(confirm)] == [FrameType.CONFIRM]
    events = _exchange(sender, receiver, confirm)
    assert events == [Delivered("u1")] and sender.batch_done
    assert body(target.get("IN")) == "one"


def test_resend_replaces_unconfirmed_copy_and_duplicate_is_removed(pair):
    """Item 19 (l.2631-2860, 5876): a retry with Resend replaces the unconfirmed copy; a PUT of
    a UID confirmed before is answered CONFIRMED (digest decision), never stored twice."""
    source, target = pair
    sender, receiver = _pair(source, target)
    receiver.handle(decode_all(sender.send_batch([Outgoing("u1", "TGT", "IN", text_message("a").to_bytes())]))[0])
    # The connection drops before the ACK arrives; a new sender retries without knowing.
    sender2, receiver2 = _pair(source, target)
    events = _exchange(sender2, receiver2, sender2.send_batch(
        [Outgoing("u1", "TGT", "IN", text_message("a").to_bytes(), resend=False)]))
    assert events == [Held("u1")]  # refused as a duplicate without Resend: goes again with it
    events = _exchange(sender2, receiver2, sender2.send_batch(
        [Outgoing("u1", "TGT", "IN", text_message("a").to_bytes(), resend=True)]))
    assert events == [Delivered("u1")]
    events = _exchange(sender2, receiver2, sender2.send_batch(
        [Outgoing("u1", "TGT", "IN", text_message("a").to_bytes(), resend=True)]))
    assert events == [Delivered("u1", already=True)]
    assert target.depth("IN") == 1 and receiver2.duplicates == 1


def test_confirm_of_unknown_uid_is_an_error_and_the_message_is_held(pair):
    """Digest decision: a confirm whose message is not found and not remembered is an error
    (RMQRC_UNKNOWN_UID), so the sender keeps the message instead of losing it."""
    source, target = pair
    sender, receiver = _pair(source, target)
    sender.send_batch([Outgoing("u9", "TGT", "IN", text_message("x").to_bytes())])
    # Pretend the ACK arrived, but the receiver never stored it.
    from relaymq.qmgr.channel_frames import Frame

    _, confirm = sender.receive(Frame(FrameType.ACK, {"uid": "u9"}))
    reply = decode_all(receiver.handle(decode_all(confirm)[0]))[0]
    assert reply.type is FrameType.ERROR and reply.header["reason"] == UnknownUID.reason
    events, _ = sender.receive(reply)
    assert events == [Held("u9")]


def test_refused_message_blocks_later_ones_in_the_batch(pair):
    """Item 25 (l.3328) and item 15: an undeliverable message stops the confirms after it;
    the messages before it are delivered, those after it held (stored unconfirmed)."""
    source, target = pair
    target.define_queue("FULL", max_depth=0)  # full is not dead-lettered: it may take messages later
    sender, receiver = _pair(source, target)
    items = [Outgoing("a", "TGT", "IN", text_message("a").to_bytes()),
             Outgoing("b", "TGT", "FULL", text_message("b").to_bytes()),
             Outgoing("c", "TGT", "IN", text_message("c").to_bytes())]
    events = _exchange(sender, receiver, sender.send_batch(items))
    refused = [e for e in events if isinstance(e, Refused)]
    assert [e for e in events if isinstance(e, Delivered)] == [Delivered("a")]
    assert [(e.uid, e.name) for e in refused] == [("b", "MQRC_Q_FULL")]
    assert sender.held() == ["c"] and sender.batch_done
    assert [body(m) for m in target.browse("IN")] == ["a"]


def test_hello_checks_version_and_peer(pair):
    """docs/channels.md: versioned protocol; HELLO naming another queue manager is refused."""
    _, target = pair
    receiver = ChannelReceiver(target, principal="")
    reply = decode_all(receiver.handle(decode_all(hello("DEV", "OTHER"))[0]))[0]
    assert reply.type is FrameType.ERROR and reply.header["name"] == "MQRC_UNKNOWN_REMOTE_Q_MGR"
    old = encode_frame(FrameType.HELLO, {"protocol": "relaymq-channel", "versions": [99], "qmgr": "DEV"})
    reply = decode_all(ChannelReceiver(target, principal="").handle(decode_all(old)[0]))[0]
    assert reply.type is FrameType.ERROR and reply.header["reply_to"] == "HELLO"
    with pytest.raises(ChannelProtocolError):
        ChannelReceiver(target, principal="").handle(decode_all(encode_frame(FrameType.PUT, {"uid": "x"}))[0])


def test_put_through_store_and_forward_queue_keeps_destination(pair):
    """Item 22 (l.3586-3653): at an intermediate queue manager a PUT for another queue
    manager lands on the store-and-forward queue listing it, confirmed-only for pushing."""
    source, server = pair
    server.define_queue("SF", "store_and_forward", target_queue_managers=["FAR"])
    sender, receiver = _pair(source, server)
    wire = sender.send_batch([Outgoing("u1", "FAR", "Q", text_message("hop").to_bytes())])
    replies = b"".join(receiver.handle(f) for f in decode_all(wire))
    assert server.pending_transmission("FAR") == []  # unconfirmed: not transmitted yet
    _, confirm = sender.receive(decode_all(replies)[0])
    _exchange(sender, receiver, confirm)
    [(uid, queue, message)] = server.pending_transmission("FAR")
    assert (uid, queue, body(message)) == ("u1", "Q", "hop")


def test_a_version_1_peer_gets_version_1_frames(pair):
    """docs/channels.md versioning: when the peer chose version 1, the sender leaves out the
    version 2 keys (expire_at on PUT, the destination on CONFIRM), and the receiver refuses
    version 2 frames on a version 1 conversation."""
    source, target = pair
    sender = ChannelSender(source.name, target.name)
    sender.receive(decode_all(encode_frame(FrameType.WELCOME, {"version": 1, "qmgr": target.name}))[0])
    (put,) = decode_all(sender.send_batch([Outgoing("u1", "TGT", "IN", text_message("a").to_bytes(),
                                                    expire_at=1_900_000_000_000)]))
    assert "expire_at" not in put.header
    _, confirm = sender.receive(decode_all(encode_frame(FrameType.ACK, {"uid": "u1"}))[0])
    assert decode_all(confirm)[0].header == {"uid": "u1"}
    receiver = ChannelReceiver(target, principal="")
    old = encode_frame(FrameType.HELLO, {"protocol": "relaymq-channel", "versions": [1], "qmgr": "DEV"})
    receiver.handle(decode_all(old)[0])
    with pytest.raises(ChannelProtocolError, match="version 2"):
        receiver.handle(decode_all(encode_frame(FrameType.GET, {"req": 1, "qmgr": "TGT", "queue": "IN"}))[0])
