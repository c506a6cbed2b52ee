"""The REST interface, shaped like IBM MQ's messaging REST API v3 so existing scripts work
(issue 5; docs/rest.md):

    POST   /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   put (201)
    DELETE /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   get, destructive (200/204)
    GET    /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/message   browse the first (200/204)
    GET    /ibmmq/rest/v3/messaging/qmgr/{qmgr}/queue/{queue}/messagelist  summaries of the messages
    POST   /ibmmq/rest/v3/messaging/qmgr/{qmgr}/topic/{topic}/message   publish (201)
    GET    /ibmmq/rest/v3/admin/qmgr[/{qmgr}]                            queue managers
    GET    /ibmmq/rest/v3/admin/qmgr/{qmgr}/queue[/{queue}]              queues and depths
    POST   /ibmmq/rest/v3/admin/qmgr/{qmgr}/queue                        define (or replace) a queue
    DELETE /ibmmq/rest/v3/admin/qmgr/{qmgr}/queue/{queue}                delete a queue definition

The two admin writes are for administrators: the caller must pass the HTTP authentication,
be in ``[access] administrators`` (when empty: the broker's own administrator,
relaymq.auth.admin_credential), and call from the loopback
interface unless ``[qmgr] admin_remote`` is true (relaymq.http.admin_guard, as the flow and
subscription admin routes).

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

from relaymq.auth.authorities import request_principal
from relaymq.http.admin_guard import AdminPolicy
from relaymq.http.admin_guard import guard as guard_admin
from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.qmgr.definitions import PROPERTY_NAMES
from relaymq.qmgr.errors import QueueError, QueueExists, UnknownQueue
from relaymq.qmgr.rest_format import (
    RestInputError,
    body_of,
    build_message,
    error_body,
    format_id,
    message_summary,
    parse_id,
    put_options,
    response_headers,
)

PREFIX = "/ibmmq/rest/v3"
MESSAGE_PATH = PREFIX + "/messaging/qmgr/{qmgr}/queue/{queue}/message"
MESSAGE_LIST_PATH = PREFIX + "/messaging/qmgr/{qmgr}/queue/{queue}/messagelist"
#: Topic roots a REST caller may not publish under (seed 003 l.3147-3157; mqtt.md item 5).
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
    2035: 403,  # MQRC_NOT_AUTHORIZED
    2053: 503,  # MQRC_Q_FULL
    2059: 503,  # MQRC_Q_MGR_NOT_AVAILABLE
    2100: 409,  # MQRC_OBJECT_ALREADY_EXISTS
    2055: 409,  # MQRC_Q_NOT_EMPTY
    2162: 503,  # MQRC_Q_MGR_STOPPING
    3306: 400,  # RMQRC_BAD_QUEUE_PROPERTY
    3302: 409,  # RMQRC_DUPLICATE_UID
    3304: 403,  # RMQRC_RULE_VETO
    2063: 403,  # MQRC_SECURITY_ERROR (queue security: a cryptor's key is missing, a message altered)
    3307: 403,  # RMQRC_NOT_AUTHENTICATED
}


def _error(status: int, msg_id: str, message: str, reason: int | None = None) -> HttpResponse:
    return HttpResponse(status, list(_JSON), error_body(msg_id, message, reason=reason))


def queue_error_response(error: QueueError) -> HttpResponse:
    """A QueueError in IBM's error shape, with its reason code."""
    status = STATUS_BY_REASON.get(error.reason, 500)
    return _error(status, f"RMQWB{error.reason}E", f"{error.message} ({error.name})", error.reason)


class RestApi:
    """The handlers; ``services`` is the broker's service registry (qmgr, qmgr.aio); ``auth``
    the HTTP server's BasicAuth (None: no authentication)."""

    def __init__(self, services: Mapping[str, Any], broker: Any = None, auth: Any = None) -> None:
        self.services = services
        self.broker = broker
        self.auth = auth

    # -- helpers ----------------------------------------------------------------------------
    def _qm(self, request: HttpRequest, *, remote: bool = False) -> tuple[Any, HttpResponse | None]:
        """The queue manager; the URL's {qmgr} must be this one (or an alias of it) unless
        ``remote`` (the messaging routes: another name is a destination, item 22)."""
        qm = self.services.get("qmgr")
        if qm is None:
            return None, _error(503, "RMQWB0503E", "the queue manager is not running")
        name = request.path_params.get("qmgr")
        if name is not None and not remote and self._target(qm, name) is not None:
            return None, _error(404, "RMQWB0009E", f"queue manager {name!r} does not exist here (this is {qm.name!r})",
                                2058)
        return qm, None

    @staticmethod
    def _target(qm: Any, name: str) -> str | None:
        """None when ``name`` is this queue manager (or an alias of it, item 27), else the name."""
        return None if name == qm.name or qm.is_local_name(name) else name

    @staticmethod
    def _remote_owner(qm: Any, queue: str) -> str | None:
        """IBM addresses a remote queue definition on the local queue manager (a put to
        /qmgr/QM1/queue/TOQM2); relaymq keys it by the remote queue manager. The owner of the
        one remote definition (or alias) named ``queue``; None when there is none; 404 when
        two queue managers have one (the URL must name which)."""
        owners = sorted({d.owner for d in qm.definitions()
                         if d.kind == "remote" and (d.name == queue or queue in d.aliases)})
        if len(owners) > 1:
            raise UnknownQueue(f"no local queue {queue!r}, and remote definitions of it for {', '.join(owners)}:"
                               " name the queue manager in the URL")
        return owners[0] if owners else None

    def _call_routed(self, qm: Any, request: HttpRequest, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn(queue, *args, qmgr=..., **kwargs)`` for the URL's queue and queue manager:
        another queue manager's name resolves through item 22 (aliases, remote definitions,
        store-and-forward, discovery); a queue unknown here that is a remote definition's
        name goes to that definition (IBM's remote queue definitions)."""
        queue = request.path_params["queue"]
        target = self._target(qm, request.path_params["qmgr"])
        try:
            return fn(queue, *args, qmgr=target, **kwargs)
        except UnknownQueue:
            owner = self._remote_owner(qm, queue) if target is None else None
            if owner is None:
                raise
            return fn(queue, *args, qmgr=owner, **kwargs)

    @staticmethod
    def principal(request: HttpRequest) -> str | None:
        """Who the caller is for the authorities (relaymq.auth.authorities.request_principal)."""
        return request_principal(request)

    def _authorize(self, qm: Any, request: HttpRequest, action: str) -> HttpResponse | None:
        """403 (2035) unless the caller holds ``action`` on the URL's queue (issue 15 finding 6)."""
        try:
            qm.authorize(self.principal(request), action, request.path_params["queue"])
        except QueueError as exc:
            return queue_error_response(exc)
        return None

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
        qm, failure = self._qm(request, remote=True)
        if failure is not None or (failure := self._authorize(qm, request, "put")) is not None:
            return failure
        text = self._text(request)
        if isinstance(text, HttpResponse):
            return text
        try:
            options = put_options(request.header, [v for k, v in request.headers if k == "ibm-mq-usr"])
            message = build_message(text, options)
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        self._identify(request, message)
        try:
            msg_id = await asyncio.to_thread(self._call_routed, qm, request, qm.put, message)
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
        qm, failure = self._qm(request, remote=True)
        if failure is not None or (failure := self._authorize(qm, request, "get")) is not None:
            return failure
        try:
            selection = self._selection(request)
            wait_text = request.query_value("wait") or "0"
            if not wait_text.isdigit() or int(wait_text) > MAX_WAIT_MS:
                raise RestInputError("wait", f"{wait_text!r} is not a number of milliseconds")
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        wait = int(wait_text) / 1000.0
        try:
            if self._target(qm, request.path_params["qmgr"]) is None and wait > 0 \
                    and self.services.get("qmgr.aio") is not None:
                # a local waiting get in slices, so a dropped request frees its thread soon
                aio = self.services["qmgr.aio"]
                try:
                    message = await aio.get(request.path_params["queue"], wait=wait, **selection)
                except UnknownQueue:
                    message = await asyncio.to_thread(self._call_routed, qm, request, qm.get, wait=wait, **selection)
            else:
                message = await asyncio.to_thread(self._call_routed, qm, request, qm.get, wait=wait, **selection)
        except QueueError as exc:
            return queue_error_response(exc)
        return self._message_response(message)

    async def browse(self, request: HttpRequest) -> HttpResponse:
        """GET: the first matching message, left on the queue."""
        qm, failure = self._qm(request, remote=True)
        if failure is not None or (failure := self._authorize(qm, request, "browse")) is not None:
            return failure
        try:
            selection = self._selection(request)
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        try:
            found = await asyncio.to_thread(self._call_routed, qm, request, qm.browse, limit=1, **selection)
        except QueueError as exc:
            return queue_error_response(exc)
        return self._message_response(found[0] if found else None)

    async def message_list(self, request: HttpRequest) -> HttpResponse:
        """GET .../messagelist: summaries of the matching messages in get order, no bodies,
        nothing removed (IBM's messagelist resource; ``limit`` caps the count)."""
        qm, failure = self._qm(request, remote=True)
        if failure is not None or (failure := self._authorize(qm, request, "browse")) is not None:
            return failure
        try:
            selection = self._selection(request)
            limit_text = request.query_value("limit")
            if limit_text is not None and not limit_text.isdigit():
                raise RestInputError("limit", f"{limit_text!r} is not a number of messages")
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        limit = int(limit_text) if limit_text is not None else None
        try:
            found = await asyncio.to_thread(self._call_routed, qm, request, qm.browse, limit=limit, **selection)
        except QueueError as exc:
            return queue_error_response(exc)
        return HttpResponse(200, list(_JSON), json.dumps({"messages": [message_summary(m) for m in found]}).encode())

    @staticmethod
    def _identify(request: HttpRequest, message: Any) -> None:
        """MQMD.UserIdentifier of a REST put is stamped here, never taken from the client
        (issue 15 finding 3): the logged-in user, so a psc command put over REST runs as that
        user; blank (anonymous) for a caller without credentials, whatever its headers
        (JMSXUserID in ibm-mq-usr) claim."""
        from relaymq.message.mqtt_mapping import user_identifier  # the one MQMD.UserIdentifier rule

        user = getattr(request, "user", None)
        message.mq.md.UserIdentifier = user_identifier(user) if user else ""

    @staticmethod
    def _message_response(message: Any) -> HttpResponse:
        if message is None:
            return HttpResponse(204, [])
        body, content_type = body_of(message)
        return HttpResponse(200, [("content-type", content_type), *response_headers(message)], body)

    async def publish(self, request: HttpRequest) -> HttpResponse:
        """POST to a topic: publish through the broker, as an MQTT client would see it, with
        the caller's rights: $SYS and $ISYS are the broker's, and the ACL file and the topic
        ACLs (relaymq.pubsub.topicacl, combined into broker.acl when pub/sub runs) must let
        the logged-in user publish there."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        if self.broker is None:
            return _error(503, "RMQWB0503E", "publish/subscribe is not available")
        text = self._text(request)
        if isinstance(text, HttpResponse):
            return text
        topic = request.path_params["topic"]
        from relaymq.pubsub.topics import TopicError, reserved_for_broker, validate_topic_name

        try:
            validate_topic_name(topic)
            options = put_options(request.header, [v for k, v in request.headers if k == "ibm-mq-usr"])
        except RestInputError as exc:
            return _error(400, "RMQWB0400E", str(exc))
        except TopicError as exc:
            return _error(400, "RMQWB0400E", f"topic {topic!r}: {exc}")
        if reserved_for_broker(topic):
            return _error(403, "RMQWB0403E", f"topic {topic!r}: $SYS and $ISYS are reserved for the broker")
        user = getattr(request, "user", None)
        acl = getattr(self.broker, "acl", None)
        if acl is not None and not acl.can_publish(user, f"rest:{user}" if user else "rest", topic):
            return _error(403, "RMQWB0403E", f"user {user or '(anonymous)'} may not publish to {topic!r}"
                          " (ACL file or topic ACLs)")
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

    # -- admin reads ------------------------------------------------------------------------
    async def qmgrs(self, request: HttpRequest) -> HttpResponse:
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        body = {"qmgr": [{"name": qm.name, "state": qm.state}]}
        return HttpResponse(200, list(_JSON), json.dumps(body).encode())

    async def queues(self, request: HttpRequest) -> HttpResponse:
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        wanted = request.path_params.get("queue")

        principal = self.principal(request)

        def collect() -> list[dict[str, Any]]:  # only the queues the caller may inquire (issue 15)
            return [describe_queue(qm, definition) for definition in qm.definitions()
                    if (wanted is None or definition.name == wanted) and qm.may(principal, "inq", definition.name)]

        try:
            queues = await asyncio.to_thread(collect)
        except QueueError as exc:
            return queue_error_response(exc)
        if wanted is not None and not queues:
            return _error(404, "RMQWB2085E", f"no queue {wanted!r} on queue manager {qm.name!r}", 2085)
        return HttpResponse(200, list(_JSON), json.dumps({"queue": queues}).encode())


    # -- admin writes ---------------------------------------------------------------------
    def admin_guard(self, handler: Any) -> Any:
        """Only administrators define and delete queues (see the module docstring)."""
        return guard_admin(handler, self.admin_policy, lambda reason: _error(403, "RMQWB0403E", reason))

    def admin_policy(self) -> AdminPolicy:
        """Asked per request: ``[qmgr] admin_remote`` is known once the queue manager started."""
        service = self.services.get("qmgr.service")
        admin_remote = bool(getattr(getattr(service, "settings", None), "admin_remote", False))
        config = getattr(self.broker, "config", None)
        administrators = tuple(getattr(getattr(config, "access", None), "administrators", ()) or ())
        return AdminPolicy("queue administration", "[qmgr] admin_remote", admin_remote, administrators)

    async def define(self, request: HttpRequest) -> HttpResponse:
        """POST .../admin/qmgr/{qmgr}/queue: define a queue from IBM's JSON shape (``name``,
        ``type``, ``general.description``, ``general.inhibitPut``, ``storage.maximumDepth``,
        ``storage.maximumMessageLength``, ``remote.qmgrName``) plus relaymq's properties under
        ``relaymq``; an existing queue of the same type takes the properties (IBM replaces
        unless ``noReplace``). 201 with the queue as GET shows it."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        try:
            document = json.loads(request.body.decode("utf-8") or "null")
            name, kind, props = queue_request(document)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            return _error(400, "RMQWB0400E", f"the queue definition: {exc}")
        try:
            qm.authorize(self.principal(request), "define", name)
        except QueueError as exc:
            return queue_error_response(exc)
        replace = request.query_value("noReplace") is None
        principal = self.principal(request)

        def run() -> dict[str, Any]:
            owner = props.get("queue_manager") if kind in ("remote", "home_server") else None
            try:
                qm.define_queue(name, kind, **props)
            except QueueExists:
                existing = qm.queue(name, qmgr=owner)
                if not replace or existing.kind != kind or existing.name != name:
                    raise
                qm.authorize(principal, "set", name)  # replacing the properties alters the queue
                changes = {k: v for k, v in props.items() if k != "queue_manager"}
                qm.alter_queue(name, qmgr=owner, **changes)
            return describe_queue(qm, qm.queue(name, qmgr=owner))

        try:
            queue = await asyncio.to_thread(run)
        except QueueError as exc:
            return queue_error_response(exc)
        return HttpResponse(201, list(_JSON), json.dumps({"queue": [queue]}).encode())

    async def undefine(self, request: HttpRequest) -> HttpResponse:
        """DELETE .../admin/qmgr/{qmgr}/queue/{queue}[?purge=true][&remoteQmgr=NAME]: delete
        a definition; a queue holding messages needs ``purge`` (409 otherwise); a remote
        definition sharing a local queue's name is chosen by ``remoteQmgr``. 204."""
        qm, failure = self._qm(request)
        if failure is not None:
            return failure
        purge = (request.query_value("purge") or "false").lower()
        if purge not in ("true", "false", ""):
            return _error(400, "RMQWB0400E", f"purge: {purge!r} is not true or false")
        owner = request.query_value("remoteQmgr")
        if (failure := self._authorize(qm, request, "delete")) is not None:
            return failure
        try:
            await asyncio.to_thread(qm.delete_queue, request.path_params["queue"], qmgr=owner,
                                    purge=purge in ("true", ""))
        except QueueError as exc:
            return queue_error_response(exc)
        return HttpResponse(204, [])


#: IBM's admin JSON keys and the relaymq property each sets.
_IBM_KEYS = {("general", "description"): "description", ("storage", "maximumDepth"): "max_depth",
             ("storage", "maximumMessageLength"): "max_message_size", ("remote", "qmgrName"): "queue_manager"}


def queue_request(document: Any) -> tuple[str, str, dict[str, Any]]:
    """(name, type, define_queue properties) of an admin POST body; ValueError names what is
    wrong."""
    if not isinstance(document, dict):
        raise ValueError("the body must be a JSON object with at least \"name\"")
    unknown = set(document) - {"name", "type", "general", "storage", "remote", "relaymq"}
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} (known: name, type, general, storage, remote, relaymq)")
    name, kind = document.get("name"), document.get("type", "local")
    if not isinstance(name, str) or not name:
        raise ValueError("\"name\" (a queue name) is required")
    if not isinstance(kind, str):
        raise ValueError("\"type\" must be a string")
    props: dict[str, Any] = {}
    for group in ("general", "storage", "remote", "relaymq"):
        value = document.get(group, {})
        if not isinstance(value, dict):
            raise ValueError(f"\"{group}\" must be an object")
    for (group, key), prop in _IBM_KEYS.items():
        if key in document.get(group, {}):
            props[prop] = document[group][key]
    for group, known in (("general", {"description", "inhibitPut"}), ("storage", {"maximumDepth", "maximumMessageLength"}),
                         ("remote", {"qmgrName", "queueName"})):
        extra = set(document.get(group, {})) - known
        if extra:
            raise ValueError(f"{group}: unknown keys {sorted(extra)} (known: {', '.join(sorted(known))})")
    inhibit = document.get("general", {}).get("inhibitPut")
    if inhibit is not None:
        if not isinstance(inhibit, bool):
            raise ValueError("general.inhibitPut must be true or false")
        props["active"] = not inhibit
    remote_name = document.get("remote", {}).get("queueName")
    if remote_name is not None and remote_name != name:
        raise ValueError("remote.queueName must equal name: a relaymq remote definition is named after the real queue"
                         " (use relaymq.aliases for another local name)")
    extra = document.get("relaymq", {})
    for key in extra:
        if key not in PROPERTY_NAMES:
            raise ValueError(f"relaymq.{key} is not a queue property (known: {', '.join(sorted(PROPERTY_NAMES))})")
    props.update(extra)
    if isinstance(props.get("aliases"), list):
        props["aliases"] = tuple(props["aliases"])
    if isinstance(props.get("target_queue_managers"), list):
        props["target_queue_managers"] = tuple(props["target_queue_managers"])
    return name, kind, props


def describe_queue(qm: Any, definition: Any) -> dict[str, Any]:
    """A queue as the admin GET shows it (IBM's shape, relaymq's types)."""
    item: dict[str, Any] = {"name": definition.name, "type": definition.kind}
    if definition.description:
        item["general"] = {"description": definition.description, "inhibitPut": not definition.active}
    elif not definition.active:
        item["general"] = {"inhibitPut": True}
    if definition.kind in ("remote", "home_server"):
        item["remote"] = {"qmgrName": definition.owner}
        if definition.kind == "remote":
            item["remote"]["mode"] = definition.mode
    if definition.kind == "store_and_forward":
        item["storeAndForward"] = {"targetQmgrs": list(definition.target_queue_managers), "push": definition.push}
    if definition.aliases:
        item["aliases"] = list(definition.aliases)
    security = {k: getattr(definition, k) for k in ("authenticator", "cryptor", "compressor") if getattr(definition, k)}
    if security:  # docs/queues.md "Queue security" (the key's name, never the key)
        item["security"] = security
    if definition.holds_messages:
        owner = definition.owner if definition.owner != qm.name else None
        item["status"] = {"currentDepth": qm.depth(definition.name, qmgr=owner)}
        item["storage"] = {"maximumDepth": definition.max_depth, "maximumMessageLength": definition.max_message_size}
    return item


def add_routes(server: Any, services: Mapping[str, Any], broker: Any = None) -> RestApi:
    """Add the REST routes to ``server`` (an HttpServer), behind its basic authentication."""
    auth = getattr(server, "auth", None)
    api = RestApi(services, broker, auth)

    def guard(handler: Any) -> Any:
        if auth is None:
            return handler
        return auth.protect(handler, lambda request: _error(401, "RMQWB0401E", "authentication required"
                                                            " (HTTP basic, a user of the password file)"))

    server.add_route("POST", MESSAGE_PATH, guard(api.put))
    server.add_route("DELETE", MESSAGE_PATH, guard(api.get))
    server.add_route("GET", MESSAGE_PATH, guard(api.browse))
    server.add_route("GET", MESSAGE_LIST_PATH, guard(api.message_list))
    server.add_route("POST", TOPIC_PATH, guard(api.publish))
    server.add_route("GET", ADMIN_QMGRS, guard(api.qmgrs))
    server.add_route("GET", ADMIN_QMGR, guard(api.qmgrs))
    server.add_route("GET", ADMIN_QUEUES, guard(api.queues))
    server.add_route("GET", ADMIN_QUEUE, guard(api.queues))
    server.add_route("POST", ADMIN_QUEUES, guard(api.admin_guard(api.define)))
    server.add_route("DELETE", ADMIN_QUEUE, guard(api.admin_guard(api.undefine)))
    return api
