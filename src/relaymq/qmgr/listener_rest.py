"""The admin API of channel listeners (everyplace.md item 29; docs/rest.md "Listeners"):

    GET    /ibmmq/rest/v3/admin/qmgr/{qmgr}/listener[/{name}]   the listeners and their states
    POST   /ibmmq/rest/v3/admin/qmgr/{qmgr}/listener            create one, stopped:
                                                                {"name", "port", "adapter", "host"}
    POST   /ibmmq/rest/v3/admin/qmgr/{qmgr}/listener/{name}/start
    POST   /ibmmq/rest/v3/admin/qmgr/{qmgr}/listener/{name}/stop
    DELETE /ibmmq/rest/v3/admin/qmgr/{qmgr}/listener/{name}

Behind the same guards as the queue admin writes (relaymq.qmgr.rest): the HTTP server's
authentication, then an administrator calling from the loopback interface unless ``[qmgr]
admin_remote``; reads need only the authentication. The listeners are
``services["qmgr.listeners"]`` (relaymq.qmgr.listener_registry).
"""

from __future__ import annotations

import json
from typing import Any

from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.qmgr.errors import QueueError
from relaymq.qmgr.rest import ADMIN_QMGR, RestApi, _error, queue_error_response

ADMIN_LISTENERS = ADMIN_QMGR + "/listener"
ADMIN_LISTENER = ADMIN_LISTENERS + "/{name}"
ADMIN_LISTENER_ACTION = ADMIN_LISTENER + "/{action}"
_JSON = [("content-type", "application/json;charset=utf-8")]


class ListenerApi:
    """The handlers, over the queue REST interface's ``api`` (its queue manager check and guards)."""

    def __init__(self, api: RestApi) -> None:
        self.api = api

    def _registry(self, request: HttpRequest) -> tuple[Any, HttpResponse | None]:
        _, failure = self.api._qm(request)  # noqa: SLF001 - the {qmgr} check of the queue routes
        if failure is not None:
            return None, failure
        registry = self.api.services.get("qmgr.listeners")
        if registry is None:
            return None, _error(503, "RMQWB0503E", "the channel listeners are not running")
        return registry, None

    @staticmethod
    def _answer(status: int, listeners: list[dict[str, Any]]) -> HttpResponse:
        return HttpResponse(status, list(_JSON), json.dumps({"listener": listeners}).encode())

    async def show(self, request: HttpRequest) -> HttpResponse:
        registry, failure = self._registry(request)
        if failure is not None:
            return failure
        try:
            return self._answer(200, registry.describe(request.path_params.get("name")))
        except QueueError as exc:
            return queue_error_response(exc)

    async def create(self, request: HttpRequest) -> HttpResponse:
        registry, failure = self._registry(request)
        if failure is not None:
            return failure
        try:
            document = json.loads(request.body.decode("utf-8") or "null")
            if not isinstance(document, dict) or set(document) - {"name", "port", "adapter", "host"}:
                raise ValueError("expected an object with name, port and optionally adapter and host")
            if "name" not in document or "port" not in document:
                raise ValueError("name and port are required")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return _error(400, "RMQWB0400E", f"the listener definition: {exc}")
        try:
            definition = await registry.create(**document)
        except QueueError as exc:
            return queue_error_response(exc)
        return self._answer(201, registry.describe(definition.name))

    async def act(self, request: HttpRequest) -> HttpResponse:
        registry, failure = self._registry(request)
        if failure is not None:
            return failure
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ("start", "stop"):
            return _error(404, "RMQWB0404E", f"no listener action {action!r} (start or stop)")
        try:
            await (registry.start(name) if action == "start" else registry.stop(name))
        except QueueError as exc:
            return queue_error_response(exc)
        except OSError as exc:
            return _error(409, "RMQWB0409E", f"listener {name!r} cannot listen: {exc.strerror or exc}")
        return self._answer(200, registry.describe(name))

    async def delete(self, request: HttpRequest) -> HttpResponse:
        registry, failure = self._registry(request)
        if failure is not None:
            return failure
        try:
            await registry.delete(request.path_params["name"])
        except QueueError as exc:
            return queue_error_response(exc)
        return HttpResponse(204, [])


def add_listener_routes(server: Any, api: RestApi) -> ListenerApi:
    """Add the listener routes to ``server`` beside the queue routes of ``api``."""
    handlers = ListenerApi(api)
    auth = api.auth

    def guard(handler: Any) -> Any:
        if auth is None:
            return handler
        return auth.protect(handler, lambda request: _error(401, "RMQWB0401E", "authentication required"))

    server.add_route("GET", ADMIN_LISTENERS, guard(handlers.show))
    server.add_route("GET", ADMIN_LISTENER, guard(handlers.show))
    server.add_route("POST", ADMIN_LISTENERS, guard(api.admin_guard(handlers.create)))
    server.add_route("POST", ADMIN_LISTENER_ACTION, guard(api.admin_guard(handlers.act)))
    server.add_route("DELETE", ADMIN_LISTENER, guard(api.admin_guard(handlers.delete)))
    return handlers
