"""The configured listeners, each startable and stoppable at run time (listener control,
mqtt.md item 5)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from relaymq.broker.broker import Broker
from relaymq.server.mqtt_protocol import MQTTProtocol
from relaymq.server.tls import server_context
from relaymq.server.websocket import WebSocketProtocol

log = logging.getLogger("relaymq.listeners")


class ListenerError(Exception):
    """A listener could not be opened (port in use, permission, bad address)."""


class Listener:
    def __init__(self, config: Any, broker: Broker, high_water: int) -> None:
        self.config = config
        self.broker = broker
        self.high_water = high_water
        self.server: asyncio.base_events.Server | None = None
        self.ssl = server_context(config)
        self.port = config.port  # the bound port once started (config port 0 = any free port)

    @property
    def url(self) -> str:
        scheme = {"mqtt": "mqtts" if self.ssl else "mqtt", "websocket": "wss" if self.ssl else "ws"}
        path = self.config.path if self.config.protocol == "websocket" else ""
        return f"{scheme[self.config.protocol]}://{self.config.host}:{self.port}{path}"

    async def start(self) -> None:
        if self.server is not None:
            return
        loop = asyncio.get_running_loop()
        cfg = self.config
        if cfg.protocol == "websocket":
            factory = lambda: WebSocketProtocol(self.broker, cfg.name, cfg.path, self.high_water)  # noqa: E731
        else:
            factory = lambda: MQTTProtocol(self.broker, cfg.name, self.high_water)  # noqa: E731
        try:
            self.server = await loop.create_server(factory, cfg.host, self.port, ssl=self.ssl,
                                                   reuse_address=True, backlog=1024)
        except OSError as err:
            raise ListenerError(f"cannot listen on {cfg.host}:{self.port} "
                                f"(listener {cfg.name!r}): {err.strerror or err}") from None
        self.port = self.server.sockets[0].getsockname()[1]
        log.info("listening on %s", self.url)

    async def stop(self) -> None:
        if self.server is None:
            return
        self.server.close()
        await self.server.wait_closed()
        self.server = None
        log.info("stopped listening on %s", self.url)


class Listeners:
    def __init__(self, configs: list, broker: Broker, high_water: int) -> None:
        self.items = [Listener(c, broker, high_water) for c in configs]

    async def start_all(self) -> None:
        for item in self.items:
            await item.start()

    async def stop_all(self) -> None:
        for item in self.items:
            await item.stop()

    def control(self, target: str, on: bool) -> bool:
        """Start/stop the listener on port ``target`` or ``all`` (administrators' publication)."""
        chosen = [i for i in self.items if target == "all" or str(i.port) == target
                  or str(i.config.port) == target]
        for item in chosen:
            coro = item.start() if on else item.stop()
            task = asyncio.get_running_loop().create_task(coro)
            task.add_done_callback(_report)
        return bool(chosen)


def _report(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s", task.exception())
