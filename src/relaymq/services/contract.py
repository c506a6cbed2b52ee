"""What a service gets at start, and how it says it cannot start.

A service module has ``async def start(context: ServiceContext) -> service`` where the service
has ``async def stop()``; it may register itself in ``context.services`` under its name so later
services find it (the HTTP server, where the queue manager, pub/sub and flows add their routes;
the queue manager, which pub/sub and flows put to). The modules and their order are
``relaymq.services.registry.SERVICE_MODULES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relaymq.broker.broker import Broker
from relaymq.services.reload import Reloader


class ServiceError(Exception):
    """A service cannot start (port in use, bad state on disk): one line for the operator."""


@dataclass
class ServiceContext:
    """What a service gets at start: the configuration, the broker, and the services so far."""

    config: Any
    broker: Broker
    services: dict[str, Any] = field(default_factory=dict)
    #: The queue, flow and admin authorities (relaymq.auth.authorities.AuthorityFile).
    authorities: Any = None
    #: What SIGHUP reads again (relaymq.services.reload); services add their own.
    reloaders: list[Reloader] = field(default_factory=list)
