"""The metrics as a service of the broker process (relaymq.services.registry): ``GET /metrics``
on the HTTP server, when it runs. Started after the HTTP service; the collectors read the
other services from the registry at scrape time, so those may start later.

The route is added at start; ``prometheus_client`` and the collectors (relaymq.metrics.endpoint)
are imported on the first scrape: with what it imports (http.server, wsgiref, email) it costs a
process some 13 MB, which a broker nobody scrapes need not carry (issue 16, a smaller base)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from relaymq.http.server import HttpRequest, HttpResponse

PATH = "/metrics"


class MetricsService:
    async def stop(self) -> None:
        return None


def install(server: Any, broker: Any, services: dict[str, Any]) -> None:
    """Add ``GET /metrics`` to ``server``, behind its authentication when it has one."""
    handler: Callable[[HttpRequest], Awaitable[HttpResponse]] | None = None

    async def metrics(request: HttpRequest) -> HttpResponse:
        nonlocal handler
        if handler is None:
            from relaymq.metrics.endpoint import handler_for

            handler = handler_for(broker, services)
        return await handler(request)

    auth = getattr(server, "auth", None)
    server.add_route("GET", PATH, auth.protect(metrics) if auth is not None else metrics)


async def start(context: Any) -> MetricsService:
    server = context.services.get("http")
    if server is not None:
        install(server, context.broker, context.services)
    return MetricsService()
