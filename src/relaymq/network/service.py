"""The broker network as a service of the broker process (``SERVICE_MODULES``): one
``NeighborLink`` per ``[[network.neighbor]]``, the proxy subscriptions kept in step with the
subscription tree, and the neighbours shown in ``$SYS/broker/network/...`` and in the pub/sub
statistics' Neighbor section (pubsub.md item 44)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from typing import Any

from relaymq.network.link import NeighborLink
from relaymq.network.proxy import ProxyTable
from relaymq.network.settings import NetworkSettings
from relaymq.pubsub.model import DEFAULT_SUBPOINT
from relaymq.pubsub.topics import parse_shared

log = logging.getLogger("relaymq.network")

#: Seconds between looks at the links' states for $SYS.
STATE_INTERVAL = 0.5


def sys_topic(me: str, neighbor: str) -> str:
    return f"$SYS/broker/network/{me}/neighbors/{neighbor}"


class NetworkService:
    def __init__(self, settings: NetworkSettings, broker: Any) -> None:
        self.settings = settings
        self.broker = broker
        me = settings.broker
        collective = frozenset(n.name for n in settings.neighbor if n.in_collective)
        self.links = {n.name: NeighborLink(me, n, collective, broker) for n in settings.neighbor}
        self.proxies = ProxyTable(settings.neighbor)
        self._states: dict[str, bool | None] = {name: None for name in self.links}
        self._task: asyncio.Task[None] | None = None

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
        for link in self.links.values():
            link.start()
        self._task = asyncio.create_task(self._watch_states(), name="network states")

    def _observe(self, added: bool, topic_filter: str, key: Hashable, value: Any) -> None:
        """Every change of the broker's subscription tree (MQTT and psc at the default point)."""
        self._apply(self.proxies.change(added, topic_filter, key, "Local" in getattr(value, "flags", ())))

    def _apply(self, changes: list[tuple[str, str, bool]]) -> None:
        for neighbor, topic_filter, subscribe in changes:
            log.debug("proxy subscription %s at %s: %s", "made" if subscribe else "withdrawn", neighbor, topic_filter)
            self.links[neighbor].proxy(topic_filter, subscribe)

    async def _watch_states(self) -> None:
        me = self.settings.broker
        while True:
            for name, link in self.links.items():
                state = link.connected
                if state != self._states[name]:
                    self._states[name] = state
                    log.info("neighbour %s (%s) %s", name, link.neighbor.relation,
                             "connected" if state else "not connected")
                    self.broker.publish(sys_topic(me, name), b"1" if state else b"0", 0, True)
            await asyncio.sleep(STATE_INTERVAL)

    def statistics_rows(self) -> list[dict[str, str]]:
        """One row per neighbour for the statistics report's Neighbor section."""
        return [link.statistics() for link in self.links.values()]

    async def stop(self) -> None:
        if self._observe in self.broker.subscriptions.observers:
            self.broker.subscriptions.observers.remove(self._observe)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for link in self.links.values():
            await link.stop()


async def start(context: Any) -> NetworkService:
    settings: NetworkSettings = context.config.section("network")
    service = NetworkService(settings, context.broker)
    service.start(context.services.get("pubsub"))
    if settings.neighbor:
        log.info("broker %s in a network of %d neighbour(s): %s", settings.broker, len(settings.neighbor),
                 ", ".join(f"{n.name} ({n.relation})" for n in settings.neighbor))
    context.services["network"] = service
    return service
