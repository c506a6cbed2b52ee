"""The bridges as a service of the broker process (``relaymq.server.app.SERVICE_MODULES``):
one ``Bridge`` per ``[[bridge]]`` table, started after the broker restored its sessions and
stopped before it saves them."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relaymq.bridge.bridge import Bridge

log = logging.getLogger("relaymq.bridge")


#: Seconds between looks at the bridges' connections for $SYS.
STATE_INTERVAL = 0.5


def state_topic(name: str) -> str:
    """``$SYS/broker/bridges/<name>/state``: 1 while connected to the remote, 0 when not
    (retained; Mosquitto's ``$SYS/broker/connection/<name>/state``)."""
    return f"$SYS/broker/bridges/{name}/state"


class BridgeService:
    def __init__(self, bridges: list[Bridge], broker: Any) -> None:
        self.bridges = bridges
        self.broker = broker
        self._task: asyncio.Task[None] | None = None

    def by_name(self, name: str) -> Bridge | None:
        return next((bridge for bridge in self.bridges if bridge.name == name), None)

    def start(self) -> None:
        if self.bridges:
            self._task = asyncio.create_task(self._watch_states(), name="bridge states")

    async def _watch_states(self) -> None:
        shown: dict[str, bool] = {}
        while True:
            for bridge in self.bridges:
                state = bridge.connected
                if shown.get(bridge.name) != state:
                    shown[bridge.name] = state
                    self.broker.publish(state_topic(bridge.name), b"1" if state else b"0", 0, True)
            await asyncio.sleep(STATE_INTERVAL)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for bridge in self.bridges:
            await bridge.stop()


async def start(context: Any) -> BridgeService:
    configured = context.config.configured("bridge") or ()
    bridges: list[Bridge] = []
    if configured:  # the bridge client is imported only by a broker that has a [[bridge]] (issue 16)
        from relaymq.bridge.bridge import Bridge

        bridges = [Bridge(settings, context.broker) for settings in configured]
    for bridge in bridges:
        bridge.start()
        log.info("bridge %s: to %s:%d, %d topic rule(s)", bridge.name, bridge.settings.host, bridge.settings.port,
                 len(bridge.settings.topic))
    service = BridgeService(bridges, context.broker)
    service.start()
    context.services["bridge"] = service
    return service
