"""The services beside the MQTT listeners, started in order and stopped in reverse.

The broker process knows them by module name only: each module imports what it needs, so the
process start-up (relaymq.server.app) depends on none of them (docs/architecture.md, layers).
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from relaymq.services.contract import ServiceContext

log = logging.getLogger("relaymq")

#: Parts of the product that run beside the MQTT listeners, in start order (contract:
#: relaymq.services.contract).
SERVICE_MODULES: tuple[str, ...] = (
    "relaymq.http.service",
    "relaymq.metrics.service",  # GET /metrics (issue 18)
    "relaymq.console.service",  # the web console at /console (issue 18)
    "relaymq.qmgr.service",
    "relaymq.pubsub.service",
    "relaymq.flows.service",
    "relaymq.pipeline.service",
    "relaymq.bridge.service",
    "relaymq.network.service",
    "relaymq.amqp.service",
    "relaymq.multicast.service",  # item 47: publications on enabled topics multicast
    "relaymq.realtime.service",  # item 46: the real-time transport
)


def _service_modules() -> list[ModuleType]:
    return [importlib.import_module(qualified) for qualified in SERVICE_MODULES]


async def start_services(context: ServiceContext) -> list[Any]:
    """Start every installed service in order; on a failure stop those already started."""
    started: list[Any] = []
    try:
        for module in _service_modules():
            started.append(await module.start(context))
    except BaseException:
        await stop_services(started)
        raise
    return started


async def stop_services(started: list[Any]) -> None:
    for service in reversed(started):
        try:
            await service.stop()
        except Exception:  # one service failing to stop must not keep the others running
            log.exception("stopping %r failed", service)
