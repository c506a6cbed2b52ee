"""The REST interface, shaped like IBM MQ's messaging REST API v3 so existing scripts work
(issue 5; docs/rest.md):

    POST   /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   put (201)
    DELETE /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   get, destructive (200/204)
    GET    /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   browse the first (200/204)
    POST   /ibmmq/rest/v3/messaging/qmgr/{qmgr}/topic/{topic}/message   publish (201)
    GET    /ibmmq/rest/v3/admin/qmgr[/{qmgr}]                            queue managers
    GET    /ibmmq/rest/v3/admin/qmgr/{qmgr}/queue[/{queue}]              queues and depths

Every route needs HTTP basic authentication when the HTTP service has a password file (see
relaymq.http.settings). Routes are added when the HTTP service starts; the queue manager is
looked up per request in the service registry (it starts after HTTP), so a request that
arrives before it is up gets 503.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.qmgr.errors import QueueError
from relaymq.qmgr.rest_format import (
    RestInputError,
    body_of,
    build_message,
    error_body,
    format_id,
    parse_id,
    put_options,
    response_headers,
)

PREFIX = "/ibmmq/rest/v3"
MESSAGE_PATH = PREFIX + "/messaging/qmgr/{qmgr}/queue/{queue}/message"
TOPIC_PATH = PREFIX + "/messaging/qmgr/{qmgr}/topic/{topic:path}/message"
ADMIN_QMGRS = PREFIX + "/admin/qmgr"
ADMIN_QMGR = PREFIX + "/admin/qmgr/{qmgr}"
ADMIN_QUEUES = PREFIX + "/admin/qmgr/{qmgr}/queue"
ADMIN_QUEUE = PREFIX + "/admin/qmgr/{qmgr}/queue/{queue}"
#: Longest wait a DELETE may ask for (ms); IBM caps the wait too.
MAX_WAIT_MS = 2_147_483_647
_JSON = [("content-type", "application/json;charset=utf-8")]

#: HTTP status of each queue manager reason code; anything else is 500.
STATUS_BY_REASON: dict[int, int] = {
    2085: 404,  # MQRC_UNKNOWN_OBJECT_NAME
    2087: 404,  # MQRC_UNKNOWN_REMOTE_Q_MGR
    2152: 400,  # MQRC_OBJECT_NAME_ERROR
    2045: 400,  # MQRC_OPTION_NOT_VALID_FOR_TYPE
    2459: 400,  # MQRC_SELECTOR_SYNTAX_ERROR
    2013: 400,  # MQRC_EXPIRY_ERROR
    2030: 413,  # MQRC_MSG_TOO_BIG_FOR_Q
    2053: 503,  # MQRC_Q_FULL
    2059: 503,  # MQRC_Q_MGR_NOT_AVAILABLE
    2162: 503,  # MQRC_Q_MGR_STOPPING
    3302: 409,  # RMQRC_DUPLICATE_UID
    3304: 403,  # RMQRC_RULE_VETO
}


def _error(status: int, msg_id: str, message: str, reason: int | None = None) -> HttpResponse:
    return HttpResponse(status, list(_JSON), error_body(msg_id, message, reason=reason))


def queue_error_response(error: QueueError) -> HttpResponse:
    """A QueueError in IBM's error shape, with its reason code."""
    status = STATUS_BY_REASON.get(error.reason, 500)
    return _error(status, f"RMQWB{error.reason}E", f"{error.message} ({error.name})", error.reason)


class RestApi:
    """The handlers; ``services`` is the broker's service registry (qmgr, qmgr.aio)."""

    def __init__(self, services: Mapping[str, Any], broker: Any = None) -> None:
        self.services = services
        self.broker = broker

    # -- helpers ----------------------------------------------------------------------------
    def _qm(self, request: HttpRequest) -> tuple[Any, HttpResponse | None]:
        qm = self.services.get("qmgr")
        if qm is None:
            return None, _error(503, "RMQWB0503E", "the queue manager is not running")
        name = request.path_params.get("qmgr")
        if name is not None and name != qm.name:
            return None, _error(404, "RMQWB0009E", f"queue manager {name!r} does not exist here (this is {qm.name!r})",
                                2058)
        return qm, None

    @staticmethod
    def _text(request: HttpRequest) -> str | HttpResponse:
        content_type = (request.header("content-type") or "text/plain").lower()
        if not content_type.startswith(("text/", "application/json", "application/xml")):
            return _error(415, "RMQWB0415E", f"content type {content_type!r} is not text"
                          " (text/plain, text/html, text/xml, application/json, application/xml)")
        try:
            return request.body.decode("utf-8")
        except UnicodeDecodeError:
            return _error(400, "RMQWB0400E", "the request body is not UTF-8 text")

    # -- messaging --------------------------------------------------------------------------
    async def put(self, request: HttpRequest) -> HttpResponse:
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        text = self._text(request)
        if isinstance(text, HttpResponse):
            return text
        try:
            options = put_options(request.header, [v for k, v in request.headers if k == "ibm-mq-usr"])
            message = build_message(text, options)
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        try:
            msg_id = await asyncio.to_thread(qm.put, request.path_params["queue"], message)
        except QueueError as exc:
            return queue_error_response(exc)
        return HttpResponse(201, [("ibm-mq-md-messageId", format_id(msg_id))])

    def _selection(self, request: HttpRequest) -> dict[str, Any]:
        selection: dict[str, Any] = {}
        message_id = request.query_value("messageId")
        if message_id is not None:
            selection["msg_id"] = parse_id(message_id, "messageId", allow_text=False)
        correlation_id = request.query_value("correlationId")
        if correlation_id is not None:
            selection["correl_id"] = parse_id(correlation_id, "correlationId", allow_text=True)
        return selection

    async def get(self, request: HttpRequest) -> HttpResponse:
        """DELETE: destructive get, waiting up to ``wait`` ms."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        try:
            selection = self._selection(request)
            wait_text = request.query_value("wait") or "0"
            if not wait_text.isdigit() or int(wait_text) > MAX_WAIT_MS:
                raise RestInputError("wait", f"{wait_text!r} is not a number of milliseconds")
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        queue = request.path_params["queue"]
        aio = self.services.get("qmgr.aio")
        try:
            if aio is not None:
                message = await aio.get(queue, wait=int(wait_text) / 1000.0, **selection)
            else:
                message = await asyncio.to_thread(qm.get, queue, wait=int(wait_text) / 1000.0, **selection)
        except QueueError as exc:
            return queue_error_response(exc)
        return self._message_response(message)

    async def browse(self, request: HttpRequest) -> HttpResponse:
        """GET: the first matching message, left on the queue."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        try:
            selection = self._selection(request)
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        try:
            found = await asyncio.to_thread(qm.browse, request.path_params["queue"], limit=1, **selection)
        except QueueError as exc:
            return queue_error_response(exc)
        return self._message_response(found[0] if found else None)

    @staticmethod
    def _message_response(message: Any) -> HttpResponse:
        if message is None:
            return HttpResponse(204, [])
        body, content_type = body_of(message)
        return HttpResponse(200, [("content-type", content_type), *response_headers(message)], body)

    async def publish(self, request: HttpRequest) -> HttpResponse:
        """POST to a topic: publish through the broker, as an MQTT client would see it."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        if self.broker is None:
            return _error(503, "RMQWB0503E", "publish/subscribe is not available")
        text = self._text(request)
        if isinstance(text, HttpResponse):
            return text
        topic = request.path_params["topic"]
        from relaymq.pubsub.topics import TopicError, validate_topic_name

        try:
            validate_topic_name(topic)
            options = put_options(request.header, [v for k, v in request.headers if k == "ibm-mq-usr"])
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        except TopicError as exc:
            return _error(400, "RMQWB0400E", f"topic {topic!r}: {exc}")
        properties: dict[str, Any] = {"content_type": request.header("content-type") or "text/plain"}
        if options.usr:
            properties["user_property"] = [(name, str(value).lower() if isinstance(value, bool) else str(value))
                                           for name, value, _ in options.usr]
        if options.correl_id is not None:
            properties["correlation_data"] = options.correl_id.rstrip(b"\0")
        expiry = None if options.expiry_ms is None else max(1, options.expiry_ms // 1000)
        self.broker.publish(topic, text.encode("utf-8"), qos=1 if options.persistent else 0,
                            properties=properties, expiry_interval=expiry)
        return HttpResponse(201, [])

    # -- admin (read-only) ------------------------------------------------------------------
    async def qmgrs(self, request: HttpRequest) -> HttpResponse:
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        body = {"qmgr": [{"name": qm.name, "state": "running"}]}
        return HttpResponse(200, list(_JSON), json.dumps(body).encode())

    async def queues(self, request: HttpRequest) -> HttpResponse:
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        wanted = request.path_params.get("queue")

        def collect() -> list[dict[str, Any]]:
            out = []
            for definition in qm.definitions():
                if definition.owner != qm.name and definition.kind not in ("remote", "home_server"):
                    continue
                if wanted is not None and definition.name != wanted:
                    continue
                item: dict[str, Any] = {"name": definition.name, "type": definition.kind}
                if definition.kind == "remote":
                    item["remote"] = {"qmgrName": definition.owner, "mode": definition.mode}
                if definition.holds_messages:
                    owner = definition.owner if definition.owner != qm.name else None
                    item["status"] = {"currentDepth": qm.depth(definition.name, qmgr=owner)}
                    item["storage"] = {"maximumDepth": definition.max_depth,
                                       "maximumMessageLength": definition.max_message_size}
                out.append(item)
            return out

        try:
            queues = await asyncio.to_thread(collect)
        except QueueError as exc:
            return queue_error_response(exc)
        if wanted is not None and not queues:
            return _error(404, "RMQWB2085E", f"no queue {wanted!r} on queue manager {qm.name!r}", 2085)
        return HttpResponse(200, list(_JSON), json.dumps({"queue": queues}).encode())


def add_routes(server: Any, services: Mapping[str, Any], broker: Any = None) -> RestApi:
    """Add the REST routes to ``server`` (an HttpServer), behind its basic authentication."""
    api = RestApi(services, broker)
    auth = server.auth

    def guard(handler: Any) -> Any:
        if auth is None:
            return handler
        return auth.protect(handler, lambda request: _error(401, "RMQWB0401E", "authentication required"
                                                            " (HTTP basic, a user of the password file)"))

    server.add_route("POST", MESSAGE_PATH, guard(api.put))
    server.add_route("DELETE", MESSAGE_PATH, guard(api.get))
    server.add_route("GET", MESSAGE_PATH, guard(api.browse))
    server.add_route("POST", TOPIC_PATH, guard(api.publish))
    server.add_route("GET", ADMIN_QMGRS, guard(api.qmgrs))
    server.add_route("GET", ADMIN_QMGR, guard(api.qmgrs))
    server.add_route("GET", ADMIN_QUEUES, guard(api.queues))
    server.add_route("GET", ADMIN_QUEUE, guard(api.queues))
    return api
