"""A receiver's end of multicast: ordering, gap detection, NAKs, losses. No I/O.

``relaymq.multicast.listen`` feeds it every packet of the streams an ACCEPT gave and calls
``due`` on time; it returns the NAKs to send to the broker and, from ``on_packet``, what to
deliver.

Reliable stream: packets are delivered in sequence order, a message once all its fragments
are in. A sequence number seen missing (a later packet arrived, or a heartbeat announced a
later latest) is NAKed after a random wait of up to ``backoff_ms`` (seed 003 l.812-818: so
that not every receiver NAKs the same loss at once) and again every ``nack_check_period_ms``
plus the broker's accumulation time while it stays missing (l.820-826); the broker repairs it
or says LOST (out of its window), and after ``MAX_NAKS`` unanswered NAKs the receiver gives it
up itself. Unreliable stream: delivered as they come; a gap, or a heartbeat past the last
packet, is counted lost at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from relaymq.multicast import packets
from relaymq.multicast.packets import Accept, Data, Heartbeat, Ranges

#: NAKs for one packet before the receiver gives it up.
MAX_NAKS = 10
#: The most packets a reliable stream waits for at once: a jump past it (a long outage, or a
#: forged sequence number) gives up everything before the new packet instead of NAKing it, so
#: one datagram can never make the receiver track billions of numbers.
MAX_GAP = 100_000


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    stream: int
    seq: int


@dataclass(frozen=True)
class Loss:
    """Packets that will never arrive: ``ranges`` of (first sequence number, count)."""

    stream: int
    ranges: tuple[tuple[int, int], ...]

    @property
    def count(self) -> int:
        return sum(count for _, count in self.ranges)

    @property
    def seqs(self) -> list[int]:
        return [first + i for first, count in self.ranges for i in range(count)]


Event = Message | Loss


@dataclass
class ReceiverStats:
    messages: int = 0
    lost_packets: int = 0
    lost_messages: int = 0
    repaired: int = 0
    naks: int = 0
    duplicates: int = 0
    heartbeats: int = 0


@dataclass
class _Stream:
    reliable: bool
    expected: int
    highest: int
    buffer: dict[int, Data | None] = field(default_factory=dict)  # None: a lost packet
    missing: dict[int, float] = field(default_factory=dict)        # seq -> when to NAK it
    naks: dict[int, int] = field(default_factory=dict)
    partial: list[Data] = field(default_factory=list)


class Receiver:
    def __init__(self, accept: Accept, now: float, jitter: Callable[[], float] = random.random) -> None:
        self.streams = {info.stream: _Stream(bool(info.flags & packets.RELIABLE), info.next_seq, info.next_seq - 1)
                        for info in accept.streams}
        self.backoff = accept.backoff_ms / 1000
        self.retry = (accept.nack_check_period_ms + accept.nack_accumulation_ms) / 1000
        self.heartbeat_timeout = accept.heartbeat_timeout
        self.last_control = now
        self.jitter = jitter
        self.stats = ReceiverStats()

    # ------------------------------------------------------------------ packets in
    def on_packet(self, packet: packets.Packet, now: float) -> list[Event]:
        stream = self.streams.get(getattr(packet, "stream", -1))
        if stream is None:  # another stream on the same group
            return []
        if isinstance(packet, Data):
            return self._data(packet, stream, now)
        self.last_control = now
        if isinstance(packet, Heartbeat):
            self.stats.heartbeats += 1
            return self._heartbeat(packet, stream, now)
        if isinstance(packet, Ranges) and packet.kind == packets.LOST:
            return self._lost(packet.stream, stream, packets.from_ranges(packet.ranges))
        return []

    def _data(self, data: Data, stream: _Stream, now: float) -> list[Event]:
        seq = data.seq
        if seq < stream.expected or seq in stream.buffer:
            self.stats.duplicates += 1
            return []
        if not stream.reliable:
            events: list[Event] = []
            if seq > stream.expected:
                events += self._give_up(data.stream, stream, stream.expected, seq)
            stream.expected = seq + 1
            stream.highest = max(stream.highest, seq)
            return events + self._assemble(data, stream)
        jumped = self._resync(data.stream, stream, seq) if seq - stream.highest > MAX_GAP else []
        if stream.missing.pop(seq, None) is not None:
            stream.naks.pop(seq, None)
            if data.flags & packets.REPAIR:
                self.stats.repaired += 1
        stream.buffer[seq] = data
        self._seen_up_to(stream, seq, now)
        return jumped + self._deliver(data.stream, stream)

    def _seen_up_to(self, stream: _Stream, latest: int, now: float) -> None:
        """Everything up to ``latest`` was sent: what is not here is missing."""
        for seq in range(stream.highest + 1, latest):
            if seq not in stream.buffer:
                stream.missing[seq] = now + self.backoff * self.jitter()
        stream.highest = max(stream.highest, latest)

    def _heartbeat(self, beat: Heartbeat, stream: _Stream, now: float) -> list[Event]:
        if not stream.reliable:
            if beat.latest >= stream.expected:  # the tail of a burst never came
                first = stream.expected
                stream.expected = beat.latest + 1
                stream.highest = beat.latest
                return self._give_up(beat.stream, stream, first, beat.latest + 1)
            return []
        if beat.latest - stream.highest > MAX_GAP:
            return self._resync(beat.stream, stream, beat.latest + 1)
        if beat.latest > stream.highest:
            self._seen_up_to(stream, beat.latest + 1, now)
            stream.highest = beat.latest
        gone = [seq for seq in stream.missing if seq < beat.oldest]  # out of the broker's window
        return self._lost(beat.stream, stream, gone) if gone else []

    def _lost(self, stream_id: int, stream: _Stream, seqs: list[int]) -> list[Event]:
        gone = [seq for seq in seqs if seq in stream.missing]
        for seq in gone:
            del stream.missing[seq]
            stream.naks.pop(seq, None)
            stream.buffer[seq] = None
        if not gone:
            return []
        self.stats.lost_packets += len(gone)
        return [Loss(stream_id, packets.to_ranges(gone)), *self._deliver(stream_id, stream)]

    def _give_up(self, stream_id: int, stream: _Stream, first: int, end: int) -> list[Event]:
        """Unreliable: packets first..end-1 are lost (a message they were part of too)."""
        self.stats.lost_packets += end - first
        if stream.partial:
            stream.partial = []
            self.stats.lost_messages += 1
        return [Loss(stream_id, ((first, end - first),))]

    def _resync(self, stream_id: int, stream: _Stream, end: int) -> list[Event]:
        """Reliable, after a jump past MAX_GAP: deliver what is held in order, give up every
        other packet before ``end``, and go on from ``end``."""
        events: list[Event] = []
        lost: list[tuple[int, int]] = []
        seq = stream.expected
        for held in sorted(stream.buffer):
            data = stream.buffer[held]
            if held > seq:
                lost.append((seq, held - seq))
                if stream.partial:
                    stream.partial = []
                    self.stats.lost_messages += 1
            if data is not None:
                events += self._assemble(data, stream)
            seq = held + 1
        if end > seq:
            lost.append((seq, end - seq))
        if stream.partial and lost and lost[-1][0] + lost[-1][1] == end:
            stream.partial = []
            self.stats.lost_messages += 1
        stream.buffer.clear()
        stream.missing.clear()
        stream.naks.clear()
        stream.expected, stream.highest = end, end - 1
        loss = Loss(stream_id, tuple(lost))
        self.stats.lost_packets += loss.count
        return [*events, loss] if lost else events

    def _deliver(self, stream_id: int, stream: _Stream) -> list[Event]:
        events: list[Event] = []
        while stream.expected in stream.buffer:
            data = stream.buffer.pop(stream.expected)
            stream.expected += 1
            if data is None:
                if stream.partial:
                    self.stats.lost_messages += 1
                stream.partial = []
                continue
            events += self._assemble(data, stream)
        return events

    def _assemble(self, data: Data, stream: _Stream) -> list[Event]:
        """A message once its last fragment is in; fragments of a broken one are dropped."""
        if data.fragment == 0:
            if stream.partial:
                self.stats.lost_messages += 1
            stream.partial = [data]
        elif stream.partial and stream.partial[-1].fragment == data.fragment - 1:
            stream.partial.append(data)
        else:
            stream.partial = []
            return []
        if len(stream.partial) < data.fragments:
            return []
        payload = b"".join(part.payload for part in stream.partial)
        first = stream.partial[0]
        stream.partial = []
        self.stats.messages += 1
        return [Message(first.topic, payload, first.stream, first.seq)]

    # ------------------------------------------------------------------ time
    def due(self, now: float) -> tuple[list[Ranges], list[Event]]:
        """The NAKs to send now (one per stream), and the packets given up after MAX_NAKS."""
        naks: list[Ranges] = []
        events: list[Event] = []
        for stream_id, stream in self.streams.items():
            asked = [seq for seq, when in stream.missing.items() if when <= now]
            given_up = [seq for seq in asked if stream.naks.get(seq, 0) >= MAX_NAKS]
            if given_up:
                events += self._lost(stream_id, stream, given_up)
            asked = [seq for seq in asked if seq in stream.missing]
            for seq in asked:
                stream.naks[seq] = stream.naks.get(seq, 0) + 1
                stream.missing[seq] = now + self.retry
            ranges = packets.to_ranges(asked)
            for start in range(0, len(ranges), packets.MAX_RANGES):
                naks.append(Ranges(packets.NAK, stream_id, ranges[start:start + packets.MAX_RANGES]))
        self.stats.naks += len(naks)
        return naks, events

    def suspect(self, now: float) -> bool:
        """No control packet for twice the heartbeat timeout: the broker or the network failed
        (l.620-633)."""
        return now - self.last_control > 2 * self.heartbeat_timeout

    def pending(self) -> int:
        """Packets still missing on reliable streams."""
        return sum(len(stream.missing) for stream in self.streams.values())
