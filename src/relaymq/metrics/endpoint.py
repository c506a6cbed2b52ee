"""``GET /metrics``: the broker's metrics in Prometheus' text exposition format, on the broker's
HTTP server, behind its authentication (as the REST interface's reads: with a password file,
Prometheus sends ``basic_auth``; docs/monitoring.md)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.process_collector import ProcessCollector

from relaymq.broker.broker import Broker
from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.metrics.mqtt import MqttCollector
from relaymq.metrics.services import ServicesCollector

PATH = "/metrics"


def registry_for(broker: Broker, services: dict[str, Any]) -> CollectorRegistry:
    """A registry of its own (not prometheus_client's global one: several brokers may run in
    one test process) with the broker's, the services' and the process' collectors."""
    registry = CollectorRegistry()
    registry.register(MqttCollector(broker, services.get("listeners")))
    registry.register(ServicesCollector(services))
    ProcessCollector(namespace="relaymq", registry=registry)
    return registry


def install(server: Any, broker: Broker, services: dict[str, Any]) -> None:
    """Add ``GET /metrics`` to ``server``. The collectors run in the handler, on the event loop
    that owns the broker's state."""
    registry = registry_for(broker, services)

    async def metrics(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, [("content-type", CONTENT_TYPE_LATEST)], generate_latest(registry))

    auth = getattr(server, "auth", None)
    server.add_route("GET", PATH, auth.protect(metrics) if auth is not None else metrics)
