"""The broker's end of multicast: numbering, the repair window, NAKs, joins. No I/O.

Every method takes the time (``now``, monotonic seconds) and returns the datagrams to send as
``(bytes, (address, port))``; ``relaymq.multicast.transport`` puts them on the socket.

Reliable streams (seed 003 l.1074-1080, "Reliable") keep what they sent in one repair window
shared by every reliable stream, bounded by ``minimal_history_kb`` (l.864-872): oldest out
first. A receiver NAKs the sequence numbers it misses; NAKs are gathered for
``nack_accumulation_ms`` (l.874-880) and then each missing packet goes out once, flagged as a
repair, however many receivers asked for it; what has left the window is announced LOST so
receivers stop waiting. Every ``control_interval_ms`` each stream's heartbeat carries its latest
sequence number, so a receiver that lost the last packets of a burst finds out (l.620-633).

A reverted subscription (overlapping behaviour Revert) is a reliable stream of its own sent to
the receiver's address; it lives while the receiver renews its JOIN (at least every heartbeat
timeout) and ends with LEAVE or after twice the heartbeat timeout without one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from relaymq.multicast import packets
from relaymq.multicast.packets import Accept, Data, Heartbeat, Join, Leave, Ranges, StreamInfo
from relaymq.multicast.settings import MulticastSettings
from relaymq.multicast.topics import MULTICAST, UNICAST, TopicPlan
from relaymq.pubsub.topics import TopicError, topic_matches, validate_topic_filter

Address = tuple[str, int]
Datagram = tuple[bytes, Address]
#: Offset of the flags byte in a DATA packet (header 4, stream 4, seq 4).
_FLAGS_AT = 12
#: Unicast streams are numbered from here, the topic regions below it.
_FIRST_UNICAST = 1_000_000
#: The most reverted (unicast) subscriptions at once: each is a stream the broker sends to, so
#: their number is bounded like every other per-client state (docs/architecture.md).
MAX_REVERTED = 1024


@dataclass
class Stream:
    stream: int
    destination: Address
    reliable: bool
    next_seq: int = 1
    #: the oldest sequence number still in the repair window
    oldest: int = 1
    #: reverted subscriptions only: the filter, and when the receiver last renewed it
    topic_filter: str | None = None
    renewed: float = 0.0
    #: NAKed sequence numbers waiting for the accumulation time to pass
    naked: set[int] = field(default_factory=set)
    nak_due: float | None = None


@dataclass
class SenderStats:
    messages: int = 0
    packets: int = 0
    naks: int = 0
    repairs: int = 0
    lost: int = 0
    too_long: int = 0
    joins: int = 0


class Sender:
    def __init__(self, settings: MulticastSettings, plan: TopicPlan) -> None:
        self.settings = settings
        self.plan = plan
        self.port = settings.data_port
        self.streams: dict[int, Stream] = {}
        for region in plan.enabled_regions():
            self.streams[region.stream] = Stream(region.stream, (region.group, settings.data_port), region.reliable)
        self.unicast: dict[tuple[Address, int], Stream] = {}
        self._next_unicast = _FIRST_UNICAST
        #: the repair window: (stream, seq) -> packet, oldest first, and its size in bytes
        self.history: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self.history_bytes = 0
        self.history_limit = settings.minimal_history_kb * 1024
        self.stats = SenderStats()

    # ------------------------------------------------------------------ publications
    def publish(self, topic: str, payload: bytes) -> list[Datagram]:
        """A publication the broker routed: on its region's stream if that is enabled, and on
        every reverted subscription it matches."""
        targets = [s for s in self.unicast.values() if s.topic_filter is not None
                   and topic_matches(s.topic_filter, topic)]
        region = self.plan.stream_for(topic)
        if region is not None:
            targets.append(self.streams[region.stream])
        out: list[Datagram] = []
        for stream in targets:
            out += self._send(stream, topic, payload)
        return out

    def _send(self, stream: Stream, topic: str, payload: bytes) -> list[Datagram]:
        room = self.settings.packet_size - packets.DATA_OVERHEAD - len(topic.encode())
        fragments = max(1, -(-len(payload) // room)) if room > 0 else 0
        if not 0 < fragments <= 0xFFFF:
            self.stats.too_long += 1
            return []
        self.stats.messages += 1
        flags = packets.RELIABLE if stream.reliable else 0
        out: list[Datagram] = []
        for index in range(fragments):
            seq = stream.next_seq
            stream.next_seq += 1
            data = packets.encode(Data(stream.stream, seq, flags, index, fragments, topic,
                                       payload[index * room:(index + 1) * room]))
            if stream.reliable:
                self._remember(stream.stream, seq, data)
            out.append((data, stream.destination))
        self.stats.packets += len(out)
        return out

    def _remember(self, stream: int, seq: int, data: bytes) -> None:
        self.history[(stream, seq)] = data
        self.history_bytes += len(data)
        while self.history_bytes > self.history_limit and len(self.history) > 1:
            (stream_id, old_seq), old = self.history.popitem(last=False)
            self.history_bytes -= len(old)
            evicted = self._find(stream_id, None)
            if evicted is not None:
                evicted.oldest = max(evicted.oldest, old_seq + 1)

    def _oldest(self, stream: Stream) -> int:
        """The oldest sequence number the window can still repair (next_seq: none)."""
        return stream.oldest if stream.reliable else stream.next_seq

    # ------------------------------------------------------------------ datagrams in
    def on_datagram(self, data: bytes, source: Address, now: float) -> list[Datagram]:
        """A datagram on the data port: a JOIN, NAK or LEAVE (anything else is ignored)."""
        try:
            packet = packets.decode(data)
        except packets.PacketError:
            return []
        if isinstance(packet, Join):
            return [(packets.encode(self._join(packet, source, now)), source)]
        if isinstance(packet, Ranges) and packet.kind == packets.NAK:
            self._nak(packet, source, now)
        elif isinstance(packet, Leave):
            self.unicast.pop((source, packet.request), None)
        return []

    def _join(self, join: Join, source: Address, now: float) -> Accept:
        self.stats.joins += 1
        try:
            validate_topic_filter(join.topic_filter)
        except TopicError as error:
            return self._accept(join, packets.MODE_REJECTED, str(error), ())
        decision = self.plan.decide(join.topic_filter)
        infos: list[StreamInfo] = []
        mode = packets.MODE_REJECTED
        if decision.mode == MULTICAST:
            mode = packets.MODE_MULTICAST
            for region in decision.regions:
                stream = self.streams[region.stream]
                infos.append(StreamInfo(stream.stream, region.group, self.port, _flags(stream), stream.next_seq))
        elif decision.mode == UNICAST:
            key = (source, join.request)
            reverted = self.unicast.get(key)
            if reverted is None and len(self.unicast) >= MAX_REVERTED:
                return self._accept(join, packets.MODE_REJECTED, f"{MAX_REVERTED} unicast subscriptions already", ())
            mode = packets.MODE_UNICAST
            if reverted is None:
                reverted = Stream(self._next_unicast, source, True, topic_filter=join.topic_filter)
                self._next_unicast += 1
                self.unicast[key] = reverted
            reverted.renewed = now
            infos.append(StreamInfo(reverted.stream, "0.0.0.0", source[1], _flags(reverted), reverted.next_seq))
        return self._accept(join, mode, decision.reason, tuple(infos))

    def _accept(self, join: Join, mode: int, reason: str, infos: tuple[StreamInfo, ...]) -> Accept:
        s = self.settings
        return Accept(join.request, mode, reason, s.heartbeat_timeout, s.backoff_time_ms, s.nack_check_period_ms,
                      s.nack_accumulation_ms, s.socket_buffer_size_kb, infos)

    def _find(self, stream_id: int, source: Address | None) -> Stream | None:
        """A stream by number; a reverted one only for its own receiver (``source``; None:
        any)."""
        stream = self.streams.get(stream_id)
        if stream is not None:
            return stream
        return next((s for (addr, _), s in self.unicast.items()
                     if s.stream == stream_id and source in (None, addr)), None)

    def _nak(self, nak: Ranges, source: Address, now: float) -> None:
        stream = self._find(nak.stream, source)
        if stream is None or not stream.reliable:
            return
        self.stats.naks += 1
        for first, count in nak.ranges:
            last = min(first + count, stream.next_seq)  # nothing past what was sent
            stream.naked.update(range(max(first, 1), last))
        if stream.naked and stream.nak_due is None:
            stream.nak_due = now + self.settings.nack_accumulation_ms / 1000

    # ------------------------------------------------------------------ time
    def due(self, now: float) -> list[Datagram]:
        """Repairs whose accumulation time passed, and the end of unrenewed reverted streams."""
        out: list[Datagram] = []
        for stream in self._all():
            if stream.nak_due is not None and stream.nak_due <= now:
                out += self._repair(stream)
        limit = 2 * self.settings.heartbeat_timeout
        for key, stream in list(self.unicast.items()):
            if now - stream.renewed > limit:
                del self.unicast[key]
        return out

    def _repair(self, stream: Stream) -> list[Datagram]:
        out: list[Datagram] = []
        gone: list[int] = []
        for seq in sorted(stream.naked):
            data = self.history.get((stream.stream, seq))
            if data is None:
                gone.append(seq)
                continue
            repair = bytearray(data)
            repair[_FLAGS_AT] |= packets.REPAIR
            out.append((bytes(repair), stream.destination))
        self.stats.repairs += len(out)
        if gone:
            self.stats.lost += len(gone)
            ranges = packets.to_ranges(gone)
            for start in range(0, len(ranges), packets.MAX_RANGES):
                lost = Ranges(packets.LOST, stream.stream, ranges[start:start + packets.MAX_RANGES])
                out.append((packets.encode(lost), stream.destination))
        stream.naked.clear()
        stream.nak_due = None
        return out

    def heartbeats(self) -> list[Datagram]:
        """One control packet per stream: its latest sequence number (l.620-633)."""
        return [(packets.encode(Heartbeat(stream.stream, stream.next_seq - 1, self._oldest(stream), _flags(stream),
                                          self.settings.heartbeat_timeout)), stream.destination)
                for stream in self._all()]

    def next_due(self) -> float | None:
        times = [s.nak_due for s in self._all() if s.nak_due is not None]
        return min(times) if times else None

    def _all(self) -> list[Stream]:
        return [*self.streams.values(), *self.unicast.values()]


def _flags(stream: Stream) -> int:
    return packets.RELIABLE if stream.reliable else 0
