"""What a bridge does with each packet, sans I/O: publications carried between this broker
(the *local* end, an in-process client session) and the remote broker, with every QoS 1/2
acknowledgement passed back only once the other side has taken the message over.

Outbound (local -> remote): a local QoS 1 delivery is acknowledged to this broker when the
remote's PUBACK arrives, a QoS 2 one (PUBREC) when the remote's PUBCOMP arrives. Until then it
is unacknowledged in the bridge's local session, which is persistent: across a lost remote, a
restart or a crash of this broker it is delivered again (issue 17: QoS 1/2 out of the bridge
is not lost across a restart). While the remote is away, the messages in flight wait here and
are sent again when it is back (with DUP, and the same packet identifiers, to a session that
is still there); those behind them wait in the local session (the store).

Inbound (remote -> local): a remote QoS 1 publication is acknowledged to the remote once this
broker acknowledged it (after it is durable: spec decision 4); QoS 2 once this broker's
PUBCOMP arrived.

QoS 0 goes straight through, and is dropped (and counted) when the other side is away.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from relaymq.bridge.client import ClientEnd
from relaymq.bridge.topic_map import TopicMap
from relaymq.mqtt import packets as p

log = logging.getLogger("relaymq.bridge")

#: MQTT 5 properties that belong to one hop and are never carried across.
HOP_PROPERTIES = frozenset({"topic_alias", "subscription_identifier"})

Send = Callable[[p.Packet], None]
#: The source identifier of a publication whose source session is gone (identifiers are 1-65535).
ORPHAN = 0


@dataclass(slots=True)
class Carried:
    """One QoS 1/2 publication on its way across: its identifier on the side it came from,
    the PUBLISH for the other side, and how far the other side's handshake got."""

    source_id: int
    publish: p.Publish
    target_id: int | None = None
    released: bool = False  # QoS 2: the target's PUBREC came and our PUBREL went


@dataclass(slots=True)
class BridgeCounters:
    """What a bridge moved (shown in $SYS/broker/bridges/<name>/...)."""

    sent: int = 0
    received: int = 0
    dropped_qos0: int = 0
    unrouted: int = 0
    refused: int = 0
    connects: int = 0


@dataclass
class Direction:
    """One way across the bridge: from ``source`` to ``target``."""

    name: str
    source: ClientEnd
    target: ClientEnd
    send_source: Send
    send_target: Send
    up: bool = False  # the target is connected
    #: By the target's packet identifier: sent, waiting for the target's acknowledgement.
    in_flight: dict[int, Carried] = field(default_factory=dict)
    #: Not sent yet (target away or its Receive Maximum reached), in order.
    waiting: deque[Carried] = field(default_factory=deque)
    #: Source identifiers being carried (a DUP of one of them is not carried twice).
    sources: set[int] = field(default_factory=set)
    #: QoS 2 source identifiers acknowledged with PUBREC, waiting for the source's PUBREL.
    released_sources: set[int] = field(default_factory=set)


class Forwarder:
    """The two directions of one bridge. ``outbound`` runs from the local session to the remote,
    ``inbound`` from the remote to the local session."""

    def __init__(self, topics: TopicMap, local: ClientEnd, remote: ClientEnd, send_local: Send,
                 send_remote: Send, counters: BridgeCounters) -> None:
        self.topics = topics
        self.counters = counters
        self.outbound = Direction("out", local, remote, send_local, send_remote)
        self.inbound = Direction("in", remote, local, send_remote, send_local)

    # ------------------------------------------------------------------ publications
    def local_publish(self, pkt: p.Publish) -> None:
        self._carry(self.outbound, pkt, self.topics.to_remote(pkt.topic))

    def remote_publish(self, pkt: p.Publish) -> None:
        self._carry(self.inbound, pkt, self.topics.to_local(pkt.topic))

    def _carry(self, way: Direction, pkt: p.Publish, topic: str | None) -> None:
        if topic is None:
            # A subscription left over from an earlier configuration, or a remote that sends
            # what was not asked for: acknowledged, not carried.
            self.counters.unrouted += 1
            self._acknowledge_source(way, pkt.qos, pkt.packet_id)
            return
        properties = ({k: v for k, v in pkt.properties.items() if k not in HOP_PROPERTIES}
                      if way.target.level == p.MQTT_5 else {})
        out = p.Publish(topic, pkt.payload, pkt.qos, pkt.retain, False, None, properties)
        if pkt.qos == 0:
            if way.up:
                way.send_target(out)
                self._count(way)
            else:
                self.counters.dropped_qos0 += 1
            return
        assert pkt.packet_id is not None
        if pkt.packet_id in way.sources:
            return  # a DUP of one on its way: its acknowledgement comes once
        if pkt.qos == 2 and pkt.packet_id in way.released_sources:
            way.send_source(p.Pubrec(pkt.packet_id))  # already carried: PUBREC again
            return
        way.sources.add(pkt.packet_id)
        way.waiting.append(Carried(pkt.packet_id, out))
        self._send_waiting(way)

    def _count(self, way: Direction) -> None:
        if way is self.outbound:
            self.counters.sent += 1
        else:
            self.counters.received += 1

    def _send_waiting(self, way: Direction) -> None:
        target = way.target
        while way.up and way.waiting and len(way.in_flight) < target.send_quota:
            carried = way.waiting.popleft()
            carried.target_id = target.allocate_id()
            carried.publish.packet_id = carried.target_id
            way.in_flight[carried.target_id] = carried
            way.send_target(carried.publish)
            self._count(way)

    def _acknowledge_source(self, way: Direction, qos: int, packet_id: int | None) -> None:
        if not packet_id or qos == 0:  # None (QoS 0) or ORPHAN
            return
        if qos == 1:
            way.send_source(p.Puback(packet_id))
        else:
            way.released_sources.add(packet_id)
            way.send_source(p.Pubrec(packet_id))

    # ------------------------------------------------------------------ acknowledgements
    def local_ack(self, pkt: p.Puback | p.Pubrec | p.Pubrel | p.Pubcomp) -> None:
        self._ack(self.inbound, self.outbound, pkt)

    def remote_ack(self, pkt: p.Puback | p.Pubrec | p.Pubrel | p.Pubcomp) -> None:
        self._ack(self.outbound, self.inbound, pkt)

    def _ack(self, towards: Direction, from_side: Direction, pkt: p.Puback | p.Pubrec | p.Pubrel | p.Pubcomp) -> None:
        """``pkt`` came from the target of ``towards`` (about a publication we carried to it),
        or is a PUBREL from the source of ``from_side`` (about one it sent us)."""
        if isinstance(pkt, p.Pubrel):
            # The end of a QoS 2 publication the other side sent us: ours to complete.
            from_side.released_sources.discard(pkt.packet_id)
            from_side.send_source(p.Pubcomp(pkt.packet_id))
            return
        carried = towards.in_flight.get(pkt.packet_id)
        if carried is None:
            return  # an acknowledgement of something no longer ours (a clean reconnect)
        if isinstance(pkt, p.Pubrec):
            if pkt.reason_code >= 0x80:
                self._refused(towards, carried, pkt.reason_code)
                self._done(towards, carried)
                return
            carried.released = True
            towards.send_target(p.Pubrel(pkt.packet_id))
            return
        if isinstance(pkt, p.Puback) and pkt.reason_code >= 0x80:
            self._refused(towards, carried, pkt.reason_code)
        self._done(towards, carried)

    def _refused(self, way: Direction, carried: Carried, reason_code: int) -> None:
        self.counters.refused += 1
        log.warning("bridge %s: %s refused %r (reason 0x%02x); acknowledged, not carried", way.name,
                    "the remote broker" if way is self.outbound else "this broker", carried.publish.topic,
                    reason_code)

    def _done(self, way: Direction, carried: Carried) -> None:
        assert carried.target_id is not None
        del way.in_flight[carried.target_id]
        way.target.release_id(carried.target_id)
        way.sources.discard(carried.source_id)
        self._acknowledge_source(way, carried.publish.qos, carried.source_id)
        self._send_waiting(way)

    # ------------------------------------------------------------------ connections
    def target_up(self, way: Direction, session_present: bool) -> None:
        """The target of ``way`` (re)connected: what was in flight goes again, first. To a
        session that is still there, with its identifiers (DUP, or the PUBREL); to a new one,
        as new publications."""
        way.up = True
        resend = sorted(way.in_flight.values(), key=lambda c: c.target_id or 0)
        if session_present:
            for carried in resend:
                assert carried.target_id is not None
                if carried.released:
                    way.send_target(p.Pubrel(carried.target_id))
                else:
                    carried.publish.dup = True
                    way.send_target(carried.publish)
            self._send_waiting(way)
            return
        for carried in resend:
            assert carried.target_id is not None
            way.target.release_id(carried.target_id)
            carried.target_id, carried.released, carried.publish.dup = None, False, False
        way.in_flight.clear()
        way.waiting.extendleft(reversed(resend))
        self._send_waiting(way)

    def target_down(self, way: Direction) -> None:
        way.up = False

    def source_up(self, way: Direction, session_present: bool) -> None:
        """The source of ``way`` (re)connected. A session that was kept sends its
        unacknowledged publications again, recognised by their identifiers. A new session
        will not: what was carried for the old one is no longer acknowledged to anybody (its
        identifiers may now name new publications)."""
        if session_present:
            return
        way.sources.clear()
        way.released_sources.clear()
        for carried in (*way.in_flight.values(), *way.waiting):
            carried.source_id = ORPHAN
