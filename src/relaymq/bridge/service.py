"""The bridges as a service of the broker process (``relaymq.server.app.SERVICE_MODULES``):
one ``Bridge`` per ``[[bridge]]`` table, started after the broker restored its sessions and
stopped before it saves them."""

from __future__ import annotations

import logging
from typing import Any

from relaymq.bridge.bridge import Bridge

log = logging.getLogger("relaymq.bridge")


class BridgeService:
    def __init__(self, bridges: list[Bridge]) -> None:
        self.bridges = bridges

    def by_name(self, name: str) -> Bridge | None:
        return next((bridge for bridge in self.bridges if bridge.name == name), None)

    async def stop(self) -> None:
        for bridge in self.bridges:
            await bridge.stop()


async def start(context: Any) -> BridgeService:
    bridges = [Bridge(settings, context.broker) for settings in context.config.section("bridge")]
    for bridge in bridges:
        bridge.start()
        log.info("bridge %s: to %s:%d, %d topic rule(s)", bridge.name, bridge.settings.host, bridge.settings.port,
                 len(bridge.settings.topic))
    service = BridgeService(bridges)
    context.services["bridge"] = service
    return service
