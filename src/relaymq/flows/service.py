"""The flows service in the broker process (relaymq.services.registry SERVICE_MODULES).

At start: build the FlowManager over the broker, the queue manager (``services["qmgr.aio"]``)
and the HTTP server (``services["http"]``), redeploy the flows stored under ``<data_dir>/flows``,
deploy the ``[flows] deploy`` files, then add the admin routes (so an answering admin route
means the flows are back). Registers the manager
as ``context.services["flows"]``. At stop: the flows drain and stop (they stay stored).
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

from relaymq.flows.admin import FlowAdmin
from relaymq.flows.errors import FlowDefinitionError
from relaymq.flows.manager import DeployError, FlowManager
from relaymq.flows.pending import PendingReplies
from relaymq.flows.settings import FlowsSettings
from relaymq.services.contract import ServiceError

log = logging.getLogger("relaymq.flows")


class FlowsService:
    def __init__(self, manager: FlowManager | None, admin: FlowAdmin | None, server: Any) -> None:
        self.manager = manager
        self.admin = admin
        self.server = server

    async def stop(self) -> None:
        if self.admin is not None and self.server is not None:
            self.admin.uninstall(self.server)
        if self.manager is not None:
            await self.manager.stop()


def _broker_ports(broker: Any, services: dict[str, Any], pending: PendingReplies) -> Any:
    """The flows' ports to this broker process, imported by the first flow deployed."""
    from relaymq.flows.ports import BrokerPorts

    return BrokerPorts(broker, services, pending)


async def start(context: Any) -> FlowsService:
    config = context.config
    settings: FlowsSettings = config.section("flows")
    if not settings.enabled:
        return FlowsService(None, None, None)
    server = context.services.get("http")
    pending = PendingReplies()
    store_dir = None if config.broker.store == "memory" else os.path.join(config.broker.data_dir, "flows")
    response_type = None
    if server is not None:
        from relaymq.http.server import HttpResponse

        response_type = HttpResponse
    ports = functools.partial(_broker_ports, context.broker, context.services, pending)
    manager = FlowManager(config=config, ports=ports, pending=pending, http_server=server,
                          aio=context.services.get("qmgr.aio"), store_dir=store_dir, response_type=response_type, broker=context.broker)
    context.services["flows"] = manager
    restored = await manager.restore()
    for path in settings.deploy:
        from relaymq.flows.definition import load_definition

        try:
            await manager.deploy(load_definition(path), settings.default_group, path)
        except (FlowDefinitionError, DeployError) as err:
            await manager.stop()
            raise ServiceError(f"flows: {err}") from None
    # The admin routes come last: once they answer, the stored flows are running again.
    admin = None
    if server is not None:
        admin = FlowAdmin(manager, default_group=settings.default_group, admin_remote=settings.admin_remote,
                          administrators=tuple(config.access.administrators))
        admin.install(server)
    log.info("flows: %d deployed (%d restored)", len(manager.flows), restored)
    return FlowsService(manager, admin, server)
