"""A connection to one neighbour: an MQTT bridge (relaymq.bridge) whose remote subscriptions
are this broker's proxy subscriptions there, and which takes a publication only when the
network's path rules say so (``path.py``).

Persistent sessions at both ends, and subscriptions at QoS 2, so a publication crosses at the
QoS its publisher gave it (PersistenceAsPublisher, seed 003 l.1432-1440): a QoS 2 one once
only across a crash of either broker (the bridge relays it with one identifier), QoS 1 at
least once, QoS 0 (non-persistent) straight through and never stored. On an assured link (the
neighbour's ``qmgr`` is set) the proxy subscriptions take only non-persistent publications;
persistent ones come over the queue managers' channel (``assured.py``).
"""

from __future__ import annotations

from typing import Any

from relaymq.bridge.bridge import Bridge
from relaymq.bridge.settings import BridgeSettings
from relaymq.mqtt import packets as p
from relaymq.network.assured import ASSURED_FILTER
from relaymq.network.path import accept, is_local, path_of, with_hop
from relaymq.network.proxy import proxy_client_id
from relaymq.network.settings import NeighborSettings
from relaymq.network.topology import TOPOLOGY_PREFIX

#: How long a neighbour keeps this broker's proxy session (and what it holds for it) while the
#: link is down: a week.
LINK_SESSION_EXPIRY = 7 * 86400
#: Proxy subscriptions take every QoS the publisher gave (PersistenceAsPublisher).
PROXY_QOS = 2
KEEP_ALIVE = 30


def link_client_id(neighbor: str) -> str:
    """The client id of the link's session in this broker (the one that publishes here)."""
    return f"relaymq-link-{neighbor}"


def link_settings(me: str, neighbor: NeighborSettings) -> BridgeSettings:
    return BridgeSettings(
        name=f"neighbor-{neighbor.name}", host=neighbor.host, port=neighbor.port, protocol="5",
        client_id=proxy_client_id(me), clean_session=False, session_expiry=LINK_SESSION_EXPIRY,
        keep_alive=KEEP_ALIVE, try_private=False, username=neighbor.username, password=neighbor.password,
        tls=neighbor.tls, tls_ca=neighbor.tls_ca, local_username=link_client_id(neighbor.name),
        reconnect_initial_ms=neighbor.reconnect_initial_ms, reconnect_max_ms=neighbor.reconnect_max_ms, topic=())


class PathRule:
    """The bridge's inbound transform for a link to ``neighbor``: drop or take, and record the hop."""

    def __init__(self, me: str, neighbor: str, collective: frozenset[str]) -> None:
        self.me = me
        self.neighbor = neighbor
        self.collective = collective
        self.dropped = 0

    def __call__(self, pkt: p.Publish) -> p.Publish | None:
        user = pkt.properties.get("user_property", [])
        if is_local(user) or not accept(path_of(user), self.me, self.neighbor, self.collective):
            self.dropped += 1
            return None
        return p.Publish(pkt.topic, pkt.payload, pkt.qos, pkt.retain, pkt.dup, pkt.packet_id,
                         {**pkt.properties, "user_property": with_hop(user, self.neighbor)})


class NeighborLink:
    """The link to one neighbour, and what it moved (the statistics' Neighbor section)."""

    def __init__(self, me: str, neighbor: NeighborSettings, collective: frozenset[str], broker: Any) -> None:
        self.neighbor = neighbor
        self.rule = PathRule(me, neighbor.name, collective)
        self.bridge = Bridge(link_settings(me, neighbor), broker, local_client_id=link_client_id(neighbor.name),
                             inbound_transform=self.rule, dynamic=True)

    @property
    def name(self) -> str:
        return self.neighbor.name

    @property
    def connected(self) -> bool:
        return self.bridge.connected

    def start(self) -> None:
        self.bridge.start()

    async def stop(self) -> None:
        await self.bridge.stop()

    def proxy(self, topic_filter: str, subscribe: bool) -> None:
        if subscribe:
            assured = bool(self.neighbor.qmgr) and not topic_filter.startswith("relaymq/network/")
            self.bridge.subscribe_remote(topic_filter, PROXY_QOS, ASSURED_FILTER if assured else None)
        else:
            self.bridge.unsubscribe_remote(topic_filter)

    def statistics(self) -> dict[str, str]:
        counters = self.bridge.counters
        return {"Name": self.name, "Relation": self.neighbor.relation,
                "Connected": "true" if self.connected else "false",
                "ProxySubscriptions": str(sum(1 for f in self.bridge.dynamic if not f.startswith(TOPOLOGY_PREFIX))),
                "MessagesReceived": str(counters.received), "MessagesDropped": str(self.rule.dropped)}
