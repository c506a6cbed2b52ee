"""The metrics as a service of the broker process (relaymq.services.registry): ``GET /metrics``
on the HTTP server, when it runs. Started after the HTTP service; the collectors read the
other services from the registry at scrape time, so those may start later."""

from __future__ import annotations

from typing import Any

from relaymq.metrics.endpoint import install


class MetricsService:
    async def stop(self) -> None:
        return None


async def start(context: Any) -> MetricsService:
    server = context.services.get("http")
    if server is not None:
        install(server, context.broker, context.services)
    return MetricsService()
