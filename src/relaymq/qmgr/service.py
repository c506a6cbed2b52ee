"""The queue manager inside the broker process (issue 5; relaymq.services.registry SERVICE_MODULES).

``start`` opens the queue manager named by ``[qmgr] name`` on the broker's storage engine (its
queues live in ``<data_dir>/relaymq.db``; with ``--store memory`` in memory), defines the configured queues (a queue already stored keeps its
messages; its properties follow the configuration), and registers ``context.services["qmgr"]``
(the :class:`QueueManager`) and ``context.services["qmgr.aio"]`` (its asyncio face).

The channel listener (``relaymq.qmgr.channel_service``) starts after the queue manager is
open and stops before it closes; it finds the queue manager as ``qmgr_service.qm`` and the
settings (``channel_port``, ``channel_host``, ``connection``) as ``qmgr_service.settings``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from relaymq.clock import Clock
from relaymq.config import ConfigError
from relaymq.qmgr import channel_service
from relaymq.qmgr.adapters import open_queue_manager
from relaymq.qmgr.aio import AsyncQueueManager
from relaymq.qmgr.errors import QueueError, QueueExists
from relaymq.qmgr.manager import QueueManager
from relaymq.qmgr.listener_registry import start_listeners
from relaymq.qmgr.listener_rest import add_listener_routes
from relaymq.qmgr.rest import add_routes
from relaymq.qmgr.settings import QmgrSettings, load_security
from relaymq.services.contract import ServiceError

log = logging.getLogger("relaymq.qmgr")

#: Seconds between sweeps that remove expired messages (seed 004 l.354-374 checks on access;
#: the sweep keeps depth honest for queues nobody reads).
EXPIRY_SWEEP_SECONDS = 30.0
#: The channel part's service module (listener and links), started inside this service.


class QmgrService:
    """The running queue manager and what stops it."""

    def __init__(self, qm: QueueManager, settings: QmgrSettings) -> None:
        self.qm = qm
        self.aio = AsyncQueueManager(qm)
        self.settings = settings
        #: Coroutines run first at stop (the channel listener registers its own here).
        self.on_stop: list[Callable[[], Awaitable[None]]] = []
        self._sweeper: asyncio.Task[None] | None = None

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(EXPIRY_SWEEP_SECONDS)
            await asyncio.to_thread(self.qm.purge_expired)

    async def stop(self) -> None:
        for fn in reversed(self.on_stop):
            try:
                await fn()
            except Exception:  # one part failing to stop must not keep the queue manager open
                log.exception("stopping a queue manager part failed")
        if self._sweeper is not None:
            self._sweeper.cancel()
        await asyncio.to_thread(self.qm.close)


def apply_definitions(qm: QueueManager, settings: QmgrSettings) -> None:
    """Define each configured queue; one already defined takes the configured properties."""
    for definition in settings.queue:
        try:
            qm.define_queue(definition.name, definition.kind, **definition.properties())
        except QueueExists:
            owner = definition.owner if definition.owner != qm.name else None
            props = definition.properties()
            props.pop("queue_manager", None)
            qm.alter_queue(definition.name, qmgr=owner, **props)


async def start(context: Any) -> QmgrService:
    """Open the queue manager, define the configured queues, register it and add the REST
    routes to the HTTP server."""
    config = context.config
    settings: QmgrSettings = config.section("qmgr")
    broker = config.broker
    try:
        # Inside the broker the queue manager's store is the broker's database: a publication's
        # copies for queue subscribers commit with its other copies (issue 14).
        qm = await asyncio.to_thread(
            open_queue_manager, settings.name, broker.data_dir, store_adapter=settings.store_adapter,
            store=broker.store,
            engine=getattr(getattr(context.broker, "store", None), "engine", None),
            synchronous=broker.sqlite_synchronous, confirm_window=float(settings.confirm_window),
            rule=settings.rule or None, dead_letter_undeliverable=settings.dead_letter_undeliverable,
            security=load_security(settings),  # the cryptor keys of [qmgr] key_file
            administrators=tuple(config.access.administrators),  # empty: admin messages are refused
            clock=getattr(context.broker, "clock", Clock()).wall)  # the broker's clock (relaymq.clock)
    except (QueueError, OSError, ValueError, ConfigError) as exc:
        raise ServiceError(f"queue manager {settings.name}: cannot open: {exc}") from exc
    try:
        await asyncio.to_thread(apply_definitions, qm, settings)
    except QueueError as exc:
        await asyncio.to_thread(qm.close)
        raise ServiceError(f"queue manager {settings.name}: {exc}") from exc
    qm.authorities = getattr(context, "authorities", None)  # issue 15: the one authority model
    service = QmgrService(qm, settings)
    service._sweeper = asyncio.get_running_loop().create_task(service._sweep())
    context.services["qmgr"] = qm
    context.services["qmgr.aio"] = service.aio
    context.services["qmgr.service"] = service
    http = context.services.get("http")
    if http is not None:  # the REST interface finds the queue manager per request in the registry
        add_listener_routes(http, add_routes(http, context.services, context.broker))
    try:
        started = await channel_service.start(context, service)
    except BaseException:
        await service.stop()
        raise
    service.on_stop.append(started.stop)
    try:  # item 29: the listeners created at run time, restored as they were left
        service.on_stop.append((await start_listeners(context, service, started)).close)
    except QueueError as exc:
        await service.stop()
        raise ServiceError(f"queue manager {settings.name}: {exc}") from exc
    log.info("queue manager %s open (%s, %d queues)", qm.name, broker.store, len(qm.queue_names()))
    return service
