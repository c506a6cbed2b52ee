"""``GET /metrics``: the broker's metrics in Prometheus' text exposition format, on the broker's
HTTP server, behind its authentication (as the REST interface's reads: with a password file,
Prometheus sends ``basic_auth``; docs/monitoring.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from relaymq.broker.broker import Broker
from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.metrics.mqtt import MqttCollector
from relaymq.metrics.services import ServicesCollector

def registry_for(broker: Broker, services: dict[str, Any]) -> CollectorRegistry:
    """A registry of its own (not prometheus_client's global one: several brokers may run in
    one test process) with the broker's, the services' and the process' collectors."""
    registry = CollectorRegistry()
    registry.register(MqttCollector(broker, services.get("listeners")))
    registry.register(ServicesCollector(services))
    ProcessCollector(namespace="relaymq", registry=registry)
    return registry


def handler_for(broker: Broker, services: dict[str, Any]) -> Callable[[HttpRequest], Awaitable[HttpResponse]]:
    """The handler of ``GET /metrics``. The collectors run in it, on the event loop that owns
    the broker's state."""
    registry = registry_for(broker, services)

    async def metrics(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, [("content-type", CONTENT_TYPE_LATEST)], generate_latest(registry))

    return metrics
