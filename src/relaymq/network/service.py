"""The broker network as a service of the broker process (``SERVICE_MODULES``): one
``NeighborLink`` per ``[[network.neighbor]]``, the proxy subscriptions kept in step with the
subscription tree, and the neighbours shown in ``$SYS/broker/network/...`` and in the pub/sub
statistics' Neighbor section (pubsub.md item 44)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from relaymq.network import clone_list
from relaymq.network.admin import NetworkAdmin
from relaymq.network.assured import AssuredPath
from relaymq.network.clones import CLONE_PREFIX, CloneReplication, clone_filter
from relaymq.network.proxy import ProxyTable
from relaymq.network.settings import NeighborSettings, NetworkSettings, clone_problem
from relaymq.network.topology import (
    TOPOLOGY_FILTER,
    Topology,
    announcement,
    parse_announcement,
)
from relaymq.pubsub.model import DEFAULT_SUBPOINT
from relaymq.qmgr.channel_settings import ConnectionSettings, route_of
from relaymq.pubsub.topics import parse_shared

if TYPE_CHECKING:
    from relaymq.network.link import NeighborLink

log = logging.getLogger("relaymq.network")

#: Seconds between looks at the links' states for $SYS.
STATE_INTERVAL = 0.5
#: The network's own topics: what links subscribe to for the network itself, never proxied.
NETWORK_TOPICS = "relaymq/network/"


def sys_topic(me: str, neighbor: str) -> str:
    return f"$SYS/broker/network/{me}/neighbors/{neighbor}"


class NetworkService:
    def __init__(self, settings: NetworkSettings, broker: Any, qm: Any = None,
                 connections: tuple[ConnectionSettings, ...] = ()) -> None:
        self.settings = settings
        #: The queue manager's connection definitions: an assured neighbour's queue manager needs one.
        self.connections = connections
        self.broker = broker
        me = settings.broker
        collective = frozenset(n.name for n in settings.neighbor if n.in_collective)
        self.links: dict[str, NeighborLink] = {}
        if settings.neighbor:  # the links (MQTT bridges) are imported by a broker that has neighbours (issue 16)
            from relaymq.network.link import NeighborLink

            self.links = {n.name: NeighborLink(me, n, collective, broker) for n in settings.neighbor}
        self.proxies = ProxyTable(settings.neighbor)
        self.clones = CloneReplication(me, settings.clones, broker)
        #: Persistent publications over the queue managers' channels (with a queue manager).
        self.assured = AssuredPath(me, settings.neighbor, self.proxies, broker, qm) if qm is not None else None
        self._states: dict[str, bool | None] = {name: None for name in self.links}
        self._task: asyncio.Task[None] | None = None
        self.topology = Topology()
        #: Links stopped because they close a cycle (item 40), by neighbour name.
        self.refused: set[str] = set()
        self._stopping: list[asyncio.Task[None]] = []
        self.admin: NetworkAdmin | None = None
        self.http: Any = None

    def start(self, pubsub: Any) -> None:
        """Proxy what is subscribed now, follow every change from here on, and connect."""
        for client_id, session in list(self.broker.sessions.items()):
            for full_filter in session.subscriptions:
                group, topic_filter = parse_shared(full_filter)
                key: Hashable = client_id if group is None else ("$share", group)
                self._apply(self.proxies.change(True, topic_filter, key, False))
        if pubsub is not None:
            for sub in list(pubsub.engine.subscriptions.values()):
                if sub.sub_point == DEFAULT_SUBPOINT:
                    self._apply(self.proxies.change(True, sub.topic, sub.tree_key, "Local" in sub.flags))
        self.broker.subscriptions.observers.append(self._observe)
        self.broker.publication_taps.append(self._tap)
        self.clones.start()
        if self.assured is not None and self.assured.targets:
            self.assured.start()
        if self.links:
            self._announce()  # item 40: every broker tells the network its neighbours, and learns everybody's
        for link in self.links.values():
            link.proxy(TOPOLOGY_FILTER, True)
            if link.name in self.clones.clones:
                link.proxy(clone_filter(link.name), True)  # item 43: its subscription table, replicated here
            link.start()
        self._task = asyncio.create_task(self._watch_states(), name="network states")

    def _observe(self, added: bool, topic_filter: str, key: Hashable, value: Any) -> None:
        """Every change of the broker's subscription tree (MQTT and psc at the default point)."""
        self._apply(self.proxies.change(added, topic_filter, key, "Local" in getattr(value, "flags", ())))
        self.clones.changed(key)
        if self.assured is not None:
            self.assured.proxy_changed(added, topic_filter, key, value)

    def _tap(self, stored: Any) -> None:
        """Every publication: the network's topology announcements and the clones'
        subscription tables are learnt."""
        if not stored.topic.startswith(NETWORK_TOPICS):
            return
        if stored.topic.startswith(CLONE_PREFIX):
            self.clones.learn(stored.topic, stored.payload)
            return
        parsed = parse_announcement(stored.topic, stored.payload)
        if parsed is not None and self.topology.learn(*parsed):
            self._refuse_cycles()
        return

    def _refuse_cycles(self) -> None:
        """Stop this broker's links that close a cycle (item 40), naming their configuration."""
        me = self.settings.broker
        for index, neighbor in enumerate(self.settings.neighbor):
            if neighbor.in_collective or neighbor.name in self.refused:
                continue
            if self.topology.on_cycle(me, neighbor.name):
                self.refused.add(neighbor.name)
                log.error("network.neighbor[%d]: the link to %s (%s) closes a cycle in the broker network: publications"
                          " would go round it (item 40); the link is stopped", index, neighbor.name, neighbor.relation)
                self._stopping.append(asyncio.get_running_loop().create_task(self.links[neighbor.name].stop()))

    def _apply(self, changes: list[tuple[str, str, bool]]) -> None:
        for neighbor, topic_filter, subscribe in changes:
            if topic_filter.startswith(NETWORK_TOPICS):
                continue  # held for the network's own announcements whatever clients do
            log.debug("proxy subscription %s at %s: %s", "made" if subscribe else "withdrawn", neighbor, topic_filter)
            self.links[neighbor].proxy(topic_filter, subscribe)

    async def _watch_states(self) -> None:
        me = self.settings.broker
        while True:
            for name, link in list(self.links.items()):
                state = link.connected
                if state != self._states[name]:
                    self._states[name] = state
                    log.info("neighbour %s (%s) %s", name, link.neighbor.relation,
                             "connected" if state else "not connected")
                    self.broker.publish(sys_topic(me, name), b"1" if state else b"0", 0, True)
            await asyncio.sleep(STATE_INTERVAL)

    # ------------------------------------------------------------------ changes at run time
    def add_neighbor(self, neighbor: NeighborSettings) -> None:
        """Connect to a new neighbour now (the admin API; the file is not changed). Raises
        ValueError when it would break what start-up checks (item 40)."""
        me = self.settings.broker
        if not me:
            raise ValueError("this broker has no [network] broker name")
        if neighbor.name == me or neighbor.name in self.links:
            raise ValueError(f"{neighbor.name!r} is this broker or already a neighbour")
        if neighbor.relation == "parent" and any(n.relation == "parent" for n in self.settings.neighbor):
            raise ValueError("a second parent: a hierarchy is a tree (item 40)")
        if neighbor.qmgr and (self.assured is None or route_of(neighbor.qmgr, self.connections) is None):
            raise ValueError(f"neighbor.qmgr: no [[qmgr.connection]] of this broker's queue manager leads to"
                             f" {neighbor.qmgr!r} (the assured path goes over it)")
        self.settings = dataclasses.replace(self.settings, neighbor=(*self.settings.neighbor, neighbor))
        collective = frozenset(n.name for n in self.settings.neighbor if n.in_collective)
        for link in self.links.values():
            link.rule.collective = collective
        from relaymq.network.link import NeighborLink

        link = NeighborLink(me, neighbor, collective, self.broker)
        self.links[neighbor.name] = link
        if self.assured is not None:
            if neighbor.qmgr:
                self.assured.define_remote(neighbor.qmgr)
                if not self.assured.started:
                    self.assured.start()
            self.assured.neighbors(self.settings.neighbor)
        self._states[neighbor.name] = None
        for topic_filter in self.proxies.add(neighbor):
            link.proxy(topic_filter, True)
        link.proxy(TOPOLOGY_FILTER, True)
        link.start()
        self._announce()
        log.info("neighbour %s (%s) added at %s:%d", neighbor.name, neighbor.relation, neighbor.host, neighbor.port)

    async def remove_neighbor(self, name: str) -> None:
        """Disconnect from a neighbour now (the admin API). Raises KeyError when there is none,
        ValueError when it is a clone (it is removed from the clones first)."""
        if name in self.links and name in self.clones.clones:
            raise ValueError(f"{name!r} is a clone: remove it from the clones first (\"-{name}\")")
        link = self.links.pop(name)
        self._apply(self.proxies.remove(name))
        self.settings = dataclasses.replace(self.settings,
                                            neighbor=tuple(n for n in self.settings.neighbor if n.name != name))
        collective = frozenset(n.name for n in self.settings.neighbor if n.in_collective)
        for other in self.links.values():
            other.rule.collective = collective
        if self.assured is not None:
            self.assured.neighbors(self.settings.neighbor)
        self._states.pop(name, None)
        self.refused.discard(name)
        await link.stop()
        self.broker.publish(sys_topic(self.settings.broker, name), b"", 0, True)  # its $SYS state cleared
        self._announce()
        log.info("neighbour %s removed", name)

    def change_clones(self, change: str) -> None:
        """Item 43, the seed's mqsichangeproperties ... clonedPubSubBrokerList: ``change`` in the
        list syntax (``"b,qm,..."``, ``"+b,qm"``, ``"-b"``, ``""``). Raises ValueError."""
        me = self.settings.broker
        before = self.clones.clones
        after = clone_list.apply(before, change, me)
        why = clone_problem(after, self.settings.neighbor)
        if why is not None:
            raise ValueError(why)
        for name in before.keys() - after.keys():
            self.links[name].proxy(clone_filter(name), False)
            self.clones.replicas = {client: {b: r for b, r in found.items() if b != name}
                                    for client, found in self.clones.replicas.items()}
        for name in after.keys() - before.keys():
            self.links[name].proxy(clone_filter(name), True)
        self.clones.clones = dict(after)
        if after.keys() - before.keys():
            self.clones.announce_all()
        self.settings = dataclasses.replace(self.settings, cloned_brokers=clone_list.render(after))
        log.info("clones of %s: %s", me, self.settings.cloned_brokers or "none")

    def _announce(self) -> None:
        topic, payload = announcement(self.settings.broker, {n.name: n.relation for n in self.settings.neighbor})
        self.broker.publish(topic, payload, 1, True)

    def describe(self) -> dict[str, Any]:
        """What the admin API shows: this broker, its neighbours, the links refused (item 40)."""
        assured = self.assured
        shown = ({"sent": dict(assured.sent), "received": assured.received, "dropped": assured.dropped}
                 if assured is not None else None)
        return {"broker": self.settings.broker, "cloned_brokers": self.settings.cloned_brokers, "assured": shown,
                "neighbors": [{**link.statistics(), "host": link.neighbor.host, "port": link.neighbor.port,
                               "refused": name in self.refused} for name, link in self.links.items()]}

    def statistics_rows(self) -> list[dict[str, str]]:
        """One row per neighbour for the statistics report's Neighbor section."""
        return [link.statistics() for link in self.links.values()]

    async def stop(self) -> None:
        if self.admin is not None:
            self.admin.uninstall(self.http)
        if self._observe in self.broker.subscriptions.observers:
            self.broker.subscriptions.observers.remove(self._observe)
        if self._tap in self.broker.publication_taps:
            self.broker.publication_taps.remove(self._tap)
        self.clones.stop()
        if self.assured is not None:
            await self.assured.stop()
        await asyncio.gather(*self._stopping, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for link in self.links.values():
            await link.stop()


async def start(context: Any) -> NetworkService:
    settings: NetworkSettings = context.config.section("network")
    qm = context.services.get("qmgr")
    connections = context.config.section("qmgr").connection if qm is not None else ()
    service = NetworkService(settings, context.broker, qm, connections)
    service.start(context.services.get("pubsub"))
    http = context.services.get("http")
    if http is not None:
        service.admin = NetworkAdmin(service, admin_remote=settings.admin_remote,
                                     administrators=tuple(context.config.access.administrators))
        service.admin.install(http)
        service.http = http
    if settings.neighbor:
        log.info("broker %s in a network of %d neighbour(s): %s%s", settings.broker, len(settings.neighbor),
                 ", ".join(f"{n.name} ({n.relation})" for n in settings.neighbor),
                 f"; clones {settings.cloned_brokers}" if settings.cloned_brokers else "")
    context.services["network"] = service
    return service
