"""What a bridge does with each packet, sans I/O: publications relayed between this broker
(the *local* end, an in-process client session) and the remote broker.

A QoS 1/2 publication keeps its packet identifier across the bridge, and each step of its
handshake is relayed to the side it concerns, so that both brokers' own durable state makes
the guarantee (issue 17):

    source -> PUBLISH(id) -> bridge -> PUBLISH(id) -> target
    source <- PUBACK/PUBREC(id) <- bridge <- PUBACK/PUBREC(id) <- target
    source -> PUBREL(id) -> bridge -> PUBREL(id) -> target
    source <- PUBCOMP(id) <- bridge <- PUBCOMP(id) <- target

Identifiers are unique per direction of a connection; the source chose them among its
publications in flight to the bridge, so they are unique among the bridge's to the target.
Nothing is acknowledged to the source before the target took the message over. A QoS 1
publication is acknowledged to this broker only after the remote's PUBACK; until then it is in
the bridge's persistent local session, delivered again after a lost connection or a crash. A
QoS 2 publication sent again after a crash of the bridge's broker carries the same identifier,
which the target still holds (it answered PUBREC after storing it): the target recognises it
and does not deliver it twice. So QoS 2 is once only across a crash of either broker, as long
as both sessions are persistent.

The bridge keeps in memory only what is in flight (the target's Receive Maximum bounds it, and
the source's in-flight window the rest: the broker keeps those in the session); what was in
flight when the target went away goes again when it is back. QoS 0 goes straight through, and
is dropped (and counted) while the target is away.
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
#: A change to a publication on its way in (the broker network's path: relaymq.network), or
#: None to drop it; the identity when nothing needs changing.
Transform = Callable[[p.Publish], p.Publish | None]


@dataclass(slots=True)
class Carried:
    """One QoS 1/2 publication on its way across, by its packet identifier."""

    publish: p.Publish
    released: bool = False  # QoS 2: past PUBREC; the PUBREL is what goes again
    orphan: bool = False  # its source session is gone: nobody to acknowledge to


@dataclass(slots=True)
class BridgeCounters:
    """What a bridge moved."""

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
    #: By packet identifier: in flight at the target, or waiting for it, in arrival order.
    carried: dict[int, Carried] = field(default_factory=dict)
    #: Identifiers not sent yet (target away or its Receive Maximum reached), in order.
    waiting: deque[int] = field(default_factory=deque)
    in_flight: int = 0


class Forwarder:
    """The two directions of one bridge: ``outbound`` from the local session to the remote,
    ``inbound`` from the remote to the local session."""

    def __init__(self, topics: TopicMap, local: ClientEnd, remote: ClientEnd, send_local: Send,
                 send_remote: Send, counters: BridgeCounters, inbound_transform: Transform | None = None) -> None:
        self.topics = topics
        self.counters = counters
        self.inbound_transform = inbound_transform
        self.outbound = Direction("out", local, remote, send_local, send_remote)
        self.inbound = Direction("in", remote, local, send_remote, send_local)

    # ------------------------------------------------------------------ publications
    def local_publish(self, pkt: p.Publish) -> None:
        self._carry(self.outbound, pkt, self.topics.to_remote(pkt.topic))

    def remote_publish(self, pkt: p.Publish) -> None:
        topic = self.topics.to_local(pkt.topic)
        if topic is not None and self.inbound_transform is not None:
            changed = self.inbound_transform(pkt)
            if changed is None:  # not for this broker (a loop, a copy that comes another way)
                self._acknowledge_unrouted(self.inbound, pkt)
                return
            pkt = changed
        self._carry(self.inbound, pkt, topic)

    def _carry(self, way: Direction, pkt: p.Publish, topic: str | None) -> None:
        if topic is None:
            # A subscription left over from an earlier configuration, or a remote that sends
            # what was not asked for: acknowledged, not carried.
            self.counters.unrouted += 1
            self._acknowledge_unrouted(way, pkt)
            return
        properties = ({k: v for k, v in pkt.properties.items() if k not in HOP_PROPERTIES}
                      if way.target.level == p.MQTT_5 else {})
        if pkt.qos == 0:
            if way.up:
                way.send_target(p.Publish(topic, pkt.payload, 0, pkt.retain, False, None, properties))
                self._count(way)
            else:
                self.counters.dropped_qos0 += 1
            return
        packet_id = pkt.packet_id
        assert packet_id is not None
        known = way.carried.get(packet_id)
        if known is not None and not known.orphan:
            # Sent again by the source: an answer of ours may have been lost with its last
            # connection. Past PUBREC, the PUBREC goes again; before, the target is asked again
            # (it answers once more; a QoS 2 target recognises the identifier).
            if known.released:
                way.send_source(p.Pubrec(packet_id))
            elif way.up and packet_id not in way.waiting:
                sent = known.publish
                way.send_target(p.Publish(sent.topic, sent.payload, sent.qos, sent.retain, True, sent.packet_id,
                                          sent.properties))
            return
        if known is not None:  # the identifier of a publication of a lost session, now a new one
            self._forget(way, packet_id)
        # dup: sent before a restart, maybe received; the target's state tells (QoS 2)
        way.carried[packet_id] = Carried(p.Publish(topic, pkt.payload, pkt.qos, pkt.retain, pkt.dup, packet_id,
                                                   properties))
        way.waiting.append(packet_id)
        self._send_waiting(way)

    def _acknowledge_unrouted(self, way: Direction, pkt: p.Publish) -> None:
        if pkt.packet_id is None:
            return
        way.send_source(p.Puback(pkt.packet_id) if pkt.qos == 1 else p.Pubrec(pkt.packet_id))

    def _count(self, way: Direction) -> None:
        if way is self.outbound:
            self.counters.sent += 1
        else:
            self.counters.received += 1

    def _send_waiting(self, way: Direction) -> None:
        while way.up and way.waiting and way.in_flight < way.target.send_quota:
            packet_id = way.waiting.popleft()
            carried = way.carried.get(packet_id)
            if carried is None:
                continue
            way.in_flight += 1
            way.send_target(p.Pubrel(packet_id) if carried.released else carried.publish)
            if not carried.released:
                self._count(way)

    def _forget(self, way: Direction, packet_id: int) -> Carried | None:
        carried = way.carried.pop(packet_id, None)
        if carried is not None:
            if packet_id in way.waiting:
                way.waiting.remove(packet_id)
            else:
                way.in_flight -= 1
        return carried

    # ------------------------------------------------------------------ acknowledgements
    def local_ack(self, pkt: p.Puback | p.Pubrec | p.Pubrel | p.Pubcomp) -> None:
        # PUBREL from this broker is about a publication it sent the bridge (outbound); the
        # others answer one the bridge sent it (inbound).
        if isinstance(pkt, p.Pubrel):
            self._release(self.outbound, pkt)
        else:
            self._answer(self.inbound, pkt)

    def remote_ack(self, pkt: p.Puback | p.Pubrec | p.Pubrel | p.Pubcomp) -> None:
        if isinstance(pkt, p.Pubrel):
            self._release(self.inbound, pkt)
        else:
            self._answer(self.outbound, pkt)

    def _answer(self, way: Direction, pkt: p.Puback | p.Pubrec | p.Pubcomp) -> None:
        """The target's acknowledgement: passed back to the source."""
        carried = way.carried.get(pkt.packet_id)
        if carried is None:
            if isinstance(pkt, p.Pubcomp):
                # The end of a PUBREL relayed before a restart of this process: the source
                # still waits for its PUBCOMP.
                way.send_source(pkt)
            return
        if isinstance(pkt, p.Pubrec) and pkt.reason_code < 0x80:
            carried.released = True  # the source's PUBREL comes next, the target waits for it
            if not carried.orphan:
                way.send_source(p.Pubrec(pkt.packet_id, pkt.reason_code if way.source.level == p.MQTT_5 else 0))
            else:
                self._release(way, p.Pubrel(pkt.packet_id))  # nobody will: the bridge does
            return
        if pkt.reason_code >= 0x80:
            self.counters.refused += 1
            log.warning("bridge %s: %s refused %r (reason 0x%02x)", way.name,
                        "the remote broker" if way is self.outbound else "this broker", carried.publish.topic,
                        pkt.reason_code)
        self._forget(way, pkt.packet_id)
        if not carried.orphan:
            level = way.source.level
            code = pkt.reason_code if level == p.MQTT_5 else 0
            way.send_source(p.Puback(pkt.packet_id, code) if carried.publish.qos == 1 else
                            p.Pubrec(pkt.packet_id, code) if isinstance(pkt, p.Pubrec) else p.Pubcomp(pkt.packet_id))
        self._send_waiting(way)

    def _release(self, way: Direction, pkt: p.Pubrel) -> None:
        """The source's PUBREL for a QoS 2 publication: relayed to the target (which answers
        PUBCOMP, passed back by ``_answer``). After a restart of this process the bridge knows
        nothing of it and relays it all the same."""
        carried = way.carried.get(pkt.packet_id)
        if carried is None:
            way.carried[pkt.packet_id] = Carried(p.Publish("", b"", 2, packet_id=pkt.packet_id), released=True)
            way.waiting.append(pkt.packet_id)
            self._send_waiting(way)
            return
        carried.released = True
        if way.up and pkt.packet_id not in way.waiting:
            way.send_target(p.Pubrel(pkt.packet_id))  # still counted in flight since its PUBLISH
        # else: it goes as a PUBREL when its turn comes, or when the target is back

    # ------------------------------------------------------------------ connections
    def target_up(self, way: Direction, session_present: bool) -> None:
        """The target of ``way`` (re)connected: what was in flight goes again, first: to a
        session that is still there, as it was (DUP, or the PUBREL); to a new one, as new
        publications."""
        way.up = True
        in_flight = [packet_id for packet_id in way.carried if packet_id not in way.waiting]
        way.in_flight = 0
        for packet_id in in_flight:
            carried = way.carried[packet_id]
            # A new session does not know a publication past PUBREC: the PUBREL goes all the
            # same, and its PUBCOMP (or "identifier not found") completes it at the source.
            carried.publish.dup = session_present and not carried.released
        way.waiting.extendleft(reversed(in_flight))
        self._send_waiting(way)

    def target_down(self, way: Direction) -> None:
        way.up = False

    def source_up(self, way: Direction, session_present: bool) -> None:
        """The source of ``way`` (re)connected. A session that was kept sends its
        unacknowledged publications again, recognised by their identifiers. A new session
        will not: what was carried for the old one is acknowledged to nobody (its identifiers
        may now name new publications)."""
        if session_present:
            return
        for carried in way.carried.values():
            carried.orphan = True
