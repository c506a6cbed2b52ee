"""The telemetry listener behind SCADAInput nodes (flows-http.md items 2, 10; mqtt.md).

Each port is a small broker of its own - the broker core's sessions, the MQTT codec and the
server's listener, reused as they are - with an in-memory store, so devices get the full
MQIsdp v3 / 3.1.1 / 5 protocol (keep-alive, QoS handshakes, wills) while what they publish
goes only into the flow, not to the main broker's subscribers: the flow decides where it
goes. Topics starting with ``$`` (the endpoint's own $SYS) never enter a flow.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from relaymq.broker.broker import Broker
from relaymq.config import ListenerConfig
from relaymq.server.listeners import Listener, ListenerError
from relaymq.store.base import StoredMessage
from relaymq.store.factory import open_store

log = logging.getLogger("relaymq.flows.scada")

TICK_SECONDS = 0.5


class ScadaEndpoint:
    """A telemetry listener on ``host:port``; ``on_publication(stored)`` gets every
    publication a device sends."""

    def __init__(self, config: Any, host: str, port: int,
                 on_publication: Callable[[StoredMessage], None]) -> None:
        self.config = dataclasses.replace(
            config, broker=dataclasses.replace(config.broker, store="memory", sys_interval=0))
        self.host = host
        self.requested_port = port
        self.on_publication = on_publication
        self.broker: Broker | None = None
        self.listener: Listener | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._store: Any = None

    @property
    def port(self) -> int:
        return self.listener.port if self.listener is not None else self.requested_port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._store = open_store("memory", "", loop.call_soon_threadsafe)
        self.broker = Broker(self.config, self._store)
        self.broker.publication_taps.append(self._tap)
        name = f"scada-{self.requested_port}"
        listener = ListenerConfig(name=name, host=self.host, port=self.requested_port)
        self.listener = Listener(listener, self.broker, self.config.limits.max_outbound_buffer)
        try:
            await self.listener.start()
        except ListenerError:
            self._store.close()
            raise
        self._ticker = loop.create_task(self._tick(), name=f"{name} tick")

    def _tap(self, stored: StoredMessage) -> None:
        if not stored.topic.startswith("$"):
            self.on_publication(stored)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            assert self.broker is not None
            self.broker.tick()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.listener is not None:
            await self.listener.stop()
        if self.broker is not None:
            self.broker.shutdown()
        if self._store is not None:
            self._store.close()
