"""The administrator's REST routes for MQTT objects (issue 18; docs/rest.md "MQTT objects"):

=======  ========================================  =============================================
GET      /relaymq/mqtt/clients[?search=&limit=]    connected clients
GET      /relaymq/mqtt/clients/{clientId}          one (404 when not connected)
DELETE   /relaymq/mqtt/clients/{clientId}[?will=false]  disconnect it (MQTT 5: reason 0x98)
GET      /relaymq/mqtt/sessions[?search=&state=online|offline&limit=]  sessions, queued counts, expiry
DELETE   /relaymq/mqtt/sessions/{clientId}         discard the session (disconnecting its client)
GET      /relaymq/mqtt/subscriptions[?search=&clientId=&limit=]  MQTT subscriptions
GET      /relaymq/mqtt/retained[?filter=#&limit=&maxPayload=]  retained messages
DELETE   /relaymq/mqtt/retained/{topic}            clear one (the topic URL-encoded, / allowed)
GET      /relaymq/mqtt/listeners                   the MQTT listeners and their state
POST     /relaymq/mqtt/listeners/{name}/stop|start stop or start one (as $SYS/SCADA/MQIsdpListener)
GET      /relaymq/mqtt/sys                         what $SYS/broker/... says, as JSON
=======  ========================================  =============================================

Every route is an administrator's (relaymq.http.admin_guard): the HTTP authentication, an
administrator, the loopback interface unless ``[http] admin_remote`` is true. Lists are
``{"<kind>": [...], "total": n}`` with at most ``limit`` items (default 1000); errors are
``{"error": "one line"}``. The handlers run on the event loop that owns the broker's state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from relaymq.broker import administration as admin
from relaymq.broker.broker import Broker
from relaymq.broker.sys_tree import stats_values
from relaymq.http import admin_guard
from relaymq.http.admin_guard import AdminPolicy, Route, json_response
from relaymq.http.server import HttpRequest, HttpResponse

BASE = "/relaymq/mqtt"
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


class BadQuery(ValueError):
    """A query parameter the routes cannot take (400)."""


def _int_arg(request: HttpRequest, name: str, default: int, high: int) -> int:
    raw = request.query_value(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadQuery(f"{name} must be an integer, not {raw!r}") from None
    if not 0 <= value <= high:
        raise BadQuery(f"{name} must be between 0 and {high}, not {value}")
    return value


def _page(kind: str, items: Iterable[dict[str, Any]], request: HttpRequest) -> HttpResponse:
    limit = _int_arg(request, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    listed = list(items)
    return json_response(200, {kind: listed[:limit], "total": len(listed)})


class MqttAdmin:
    """The routes over one broker and its MQTT listeners (``relaymq.server.listeners.Listeners``,
    or None where the broker is embedded without them)."""

    def __init__(self, broker: Broker, listeners: Any, policy: AdminPolicy) -> None:
        self.broker = broker
        self.listeners = listeners
        self.policy = policy

    def routes(self) -> list[Route]:
        return [
            ("GET", BASE + "/clients", self.list_clients),
            ("GET", BASE + "/clients/{clientId}", self.show_client),
            ("DELETE", BASE + "/clients/{clientId}", self.disconnect_client),
            ("GET", BASE + "/sessions", self.list_sessions),
            ("DELETE", BASE + "/sessions/{clientId}", self.discard_session),
            ("GET", BASE + "/subscriptions", self.list_subscriptions),
            ("GET", BASE + "/retained", self.list_retained),
            ("DELETE", BASE + "/retained/{topic:path}", self.clear_retained),
            ("GET", BASE + "/listeners", self.list_listeners),
            ("POST", BASE + "/listeners/{name}/{action}", self.control_listener),
            ("GET", BASE + "/sys", self.sys),
        ]

    def install(self, server: Any) -> None:
        routes = [(method, pattern, _answering_bad_queries(handler)) for method, pattern, handler in self.routes()]
        admin_guard.install(server, routes, self.policy)

    # -- clients ------------------------------------------------------------------------------
    async def list_clients(self, request: HttpRequest) -> HttpResponse:
        return _page("clients", admin.clients(self.broker, request.query_value("search")), request)

    async def show_client(self, request: HttpRequest) -> HttpResponse:
        client_id = request.path_params["clientId"]
        conn = admin.connection_of(self.broker, client_id)
        if conn is None:
            return json_response(404, {"error": f"no client {client_id!r} is connected"})
        return json_response(200, admin.client_view(conn, self.broker.clock.monotonic()))

    async def disconnect_client(self, request: HttpRequest) -> HttpResponse:
        client_id = request.path_params["clientId"]
        will = request.query_value("will")
        if will not in (None, "true", "false"):
            raise BadQuery(f"will must be true or false, not {will!r}")
        if not admin.disconnect(self.broker, client_id, request.user, publish_will=will != "false"):
            return json_response(404, {"error": f"no client {client_id!r} is connected"})
        return json_response(200, {"clientId": client_id, "disconnected": True})

    # -- sessions -----------------------------------------------------------------------------
    async def list_sessions(self, request: HttpRequest) -> HttpResponse:
        state = request.query_value("state")
        if state not in (None, "online", "offline"):
            raise BadQuery(f"state must be online or offline, not {state!r}")
        return _page("sessions", admin.sessions(self.broker, request.query_value("search"), state), request)

    async def discard_session(self, request: HttpRequest) -> HttpResponse:
        client_id = request.path_params["clientId"]
        if not admin.discard_session(self.broker, client_id, request.user):
            return json_response(404, {"error": f"no session {client_id!r}"})
        return json_response(200, {"clientId": client_id, "discarded": True})

    # -- subscriptions and retained messages ------------------------------------------------------
    async def list_subscriptions(self, request: HttpRequest) -> HttpResponse:
        return _page("subscriptions", admin.subscriptions(self.broker, request.query_value("search"),
                                                          request.query_value("clientId")), request)

    async def list_retained(self, request: HttpRequest) -> HttpResponse:
        topic_filter = request.query_value("filter") or "#"
        max_payload = _int_arg(request, "maxPayload", 4096, 1 << 24)
        from relaymq.pubsub.topics import TopicError, validate_topic_filter

        try:
            validate_topic_filter(topic_filter)
        except TopicError as error:
            raise BadQuery(f"filter: {error.reason}") from None
        return _page("retained", admin.retained(self.broker, topic_filter, max_payload), request)

    async def clear_retained(self, request: HttpRequest) -> HttpResponse:
        topic = request.path_params["topic"]
        if not admin.clear_retained(self.broker, topic):
            return json_response(404, {"error": f"no retained message on {topic!r}"})
        return json_response(200, {"topic": topic, "cleared": True})

    # -- listeners and $SYS -------------------------------------------------------------------
    def _listener_items(self) -> list[Any]:
        return list(self.listeners.items) if self.listeners is not None else []

    async def list_listeners(self, request: HttpRequest) -> HttpResponse:
        return json_response(200, {"listeners": [listener_view(item) for item in self._listener_items()]})

    async def control_listener(self, request: HttpRequest) -> HttpResponse:
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ("stop", "start"):
            return json_response(404, {"error": f"no action {action!r}: stop or start"})
        chosen = next((item for item in self._listener_items() if item.config.name == name), None)
        if chosen is None:
            return json_response(404, {"error": f"no MQTT listener named {name!r}"})
        # seed 000's listener control ($SYS/SCADA/MQIsdpListener/<port> ON|OFF), by the same mechanism
        self.listeners.control(str(chosen.port), action == "start")
        return json_response(202, {"listener": name, "requested": action})

    async def sys(self, request: HttpRequest) -> HttpResponse:
        return json_response(200, {f"$SYS/broker/{name}": value for name, value in stats_values(self.broker).items()})


def listener_view(item: Any) -> dict[str, Any]:
    return {"name": item.config.name, "protocol": item.config.protocol, "url": item.url, "port": item.port,
            "state": "listening" if item.server is not None else "stopped", "connections": len(item.protocols)}


def _answering_bad_queries(handler: Any) -> Any:
    async def handle(request: HttpRequest) -> HttpResponse:
        try:
            return await handler(request)
        except BadQuery as error:
            return json_response(400, {"error": str(error)})

    return handle


def install(server: Any, context: Any) -> None:
    """Add the routes to ``server`` for ``context``'s broker (called by relaymq.http.service)."""
    config = context.config
    policy = AdminPolicy("MQTT administration", "[http] admin_remote", config.section("http").admin_remote,
                         tuple(config.access.administrators))
    MqttAdmin(context.broker, context.services.get("listeners"), policy).install(server)
