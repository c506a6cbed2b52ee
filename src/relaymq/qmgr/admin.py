"""The administration queue: admin messages put to SYSTEM.ADMIN.QUEUE are processed by the
queue manager, one at a time in arrival order, and answered on their ReplyToQ
(everyplace.md item 8; seed 004 l.630-632, 160-178 for the admin message properties).

An admin message is an MQ message whose body is a JSON object (UTF-8; MQFMT_STRING or any
format: only the body is read)::

    {"action": "define", "resource": "queue", "name": "ORDERS", "type": "local",
     "qmgr": "QM2",                # remote and home-server definitions: the owner
     "params": {"max_depth": 1000}, # define_queue properties (docs/queues.md)
     "purge": false}                # delete: also delete its messages

``action`` is ``define``, ``update`` (alter the properties), ``delete``, ``inquire`` (one
queue) or ``inquire_all`` (every queue) for ``resource`` ``queue`` (the default),
``inquire`` for ``resource`` ``qmgr``, and ``create`` (``params``: ``port``, ``adapter``,
``host``), ``start``, ``stop``, ``delete``, ``inquire``, ``inquire_all`` for ``resource``
``listener`` (relaymq.qmgr.listener_registry). The reply, when the request names a ReplyToQ, is an
MQSTR message with CorrelId = the request's MsgId (MQ's convention) and the body::

    {"rc": 0, "action": "define", "resource": "queue", "name": "ORDERS", "result": {...}}
    {"rc": 1, "action": "define", "resource": "queue", "name": "ORDERS",
     "reason": 2100, "reasonName": "MQRC_OBJECT_ALREADY_EXISTS", "message": "..."}

``rc`` follows MQeAdminMsg's return code (0 success, 1 failure) and ``reason`` the queue
manager's reason code. Applications cannot get, browse or delete messages of the admin
queue (NotAllowed); the processor takes each one with a get-unconfirmed (two-phase get),
answers, then confirms it, so a crash in between processes that message again at the next
start (at least once: a repeated define answers 2100).

Who may administer: when ``administrators`` is given (the broker passes ``[access]
administrators``), only messages whose MQMD.UserIdentifier is one of them (its first 12
characters) are obeyed; others are answered with 2035 (MQRC_NOT_AUTHORIZED). An empty
``administrators`` obeys nobody: the broker's default when ``[access] administrators`` is not
set, since anyone who can put to the queue (REST, MQTT, a channel peer) would otherwise
administer the queue manager; the broker's trusted paths (the REST admin endpoints behind the
admin guard, ``relaymq queue --data-dir``) change definitions directly, not through this queue.
``None`` obeys everybody: an embedded queue manager trusts the application it runs in.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from relaymq.message.message import Message
from relaymq.qmgr.definitions import SYSTEM_ADMIN_QUEUE, QueueDefinition
from relaymq.qmgr.errors import NoMessage, QueueError

log = logging.getLogger("relaymq.qmgr.admin")

#: The confirm id of the processor's two-phase gets (and of the undo at start-up).
ADMIN_CONFIRM_ID = 0x41444D4E  # "ADMN"
RC_SUCCESS, RC_FAIL = 0, 1
NOT_AUTHORIZED = (2035, "MQRC_NOT_AUTHORIZED")
FORMAT_ERROR = (2110, "MQRC_FORMAT_ERROR")
BAD_REQUEST = (2046, "MQRC_OPTIONS_ERROR")
QUEUE_ACTIONS = ("define", "update", "delete", "inquire", "inquire_all")


class AdminRequestError(Exception):
    """The admin message cannot be obeyed as written; ``reason``/``name`` for the reply."""

    def __init__(self, reason: tuple[int, str], message: str) -> None:
        super().__init__(message)
        self.reason, self.name = reason
        self.message = message


def describe_definition(qm: Any, definition: QueueDefinition) -> dict[str, Any]:
    """A definition as JSON: its properties and, for a queue that holds messages, its depth
    (also what ``relaymq queue show`` prints)."""
    data = definition.to_dict()
    owner = None if definition.owner == qm.name else definition.owner
    data["depth"] = qm.depth(definition.name, qmgr=owner) if definition.holds_messages else None
    return data


def parse_request(message: Message) -> dict[str, Any]:
    """The JSON request in an admin message's body (AdminRequestError when it is not one)."""
    try:
        request = json.loads(message.mq.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise AdminRequestError(FORMAT_ERROR, f"the admin message body is not a JSON object: {exc}") from None
    if not isinstance(request, dict):
        raise AdminRequestError(FORMAT_ERROR, "the admin message body is not a JSON object")
    return request


def execute(qm: Any, request: dict[str, Any]) -> Any:
    """Carry out one admin request on ``qm``; its result for the reply. Raises QueueError or
    AdminRequestError."""
    action, resource = request.get("action"), request.get("resource", "queue")
    if resource == "qmgr":
        if action != "inquire":
            raise AdminRequestError(BAD_REQUEST, f"action {action!r} is not possible on resource qmgr (inquire)")
        return {"name": qm.name, "state": qm.state, "queues": len(qm.definitions())}
    if resource == "listener":  # item 29: the seed's listener admin message (l.1619-1640)
        from relaymq.qmgr.listener_registry import administer

        return administer(qm, request)
    if resource != "queue":
        raise AdminRequestError(BAD_REQUEST, f"resource {resource!r} is not queue, qmgr or listener")
    if action not in QUEUE_ACTIONS:
        raise AdminRequestError(BAD_REQUEST, f"action {action!r} is not one of {', '.join(QUEUE_ACTIONS)}")
    if action == "inquire_all":
        return [describe_definition(qm, d) for d in sorted(qm.definitions(), key=lambda d: (d.owner, d.name))]
    name, owner = request.get("name"), request.get("qmgr")
    if not isinstance(name, str) or not name:
        raise AdminRequestError(BAD_REQUEST, f"{action} needs \"name\", the queue's name")
    if owner is not None and not isinstance(owner, str):
        raise AdminRequestError(BAD_REQUEST, "\"qmgr\" must be a queue manager name")
    params = request.get("params", {})
    if not isinstance(params, dict):
        raise AdminRequestError(BAD_REQUEST, "\"params\" must be an object of queue properties")
    if action == "define":
        kind = request.get("type", "local")
        props = {**params, **({"queue_manager": owner} if owner is not None else {})}
        return describe_definition(qm, qm.define_queue(name, kind, **_tuples(props)))
    if action == "update":
        return describe_definition(qm, qm.alter_queue(name, qmgr=owner, **_tuples(params)))
    if action == "delete":
        qm.delete_queue(name, qmgr=owner, purge=bool(request.get("purge", False)))
        return None
    return describe_definition(qm, qm.queue(name, qmgr=owner))


def _tuples(props: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in props.items()}


def reply_body(request: dict[str, Any] | None, result: Any = None, error: Any = None) -> bytes:
    request = request or {}
    body: dict[str, Any] = {"rc": RC_SUCCESS if error is None else RC_FAIL,
                            "action": request.get("action"), "resource": request.get("resource", "queue")}
    if "name" in request:
        body["name"] = request["name"]
    if error is None:
        if result is not None:
            body["result"] = result
    else:
        body.update({"reason": error.reason, "reasonName": error.name, "message": error.message})
    return json.dumps(body).encode("utf-8")


class AdminProcessor:
    """Processes the admin queue of one queue manager in a thread of its own, started when
    the first admin message arrives (or at start when some are waiting)."""

    def __init__(self, qm: Any, administrators: tuple[str, ...] | None = None) -> None:
        self.qm = qm
        self.administrators = administrators
        self.processed = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"qmgr-admin:{self.qm.name}", daemon=True)
                self._thread.start()
        self._wake.set()

    def recover(self) -> None:
        """At start: admin messages a crash left get-unconfirmed are processed again."""
        try:
            self.qm.undo(SYSTEM_ADMIN_QUEUE, ADMIN_CONFIRM_ID)
        except QueueError:
            pass

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                while not self._stopping and self._process_one():
                    pass
            except QueueError as exc:  # the queue manager is closing, or its store failed
                if not self._stopping:
                    log.warning("admin queue of %s: %s", self.qm.name, exc)
            self._wake.wait(1.0)

    def _process_one(self) -> bool:
        """Take, obey, answer and confirm the next admin message; False when there is none."""
        envelope = self.qm.get_envelope(SYSTEM_ADMIN_QUEUE, confirm_id=ADMIN_CONFIRM_ID, _admin=True)
        if envelope is None:
            return False
        message = envelope.message
        request: dict[str, Any] | None = None
        result: Any = None
        error: Any = None
        try:
            request = parse_request(message)
            self._check_sender(message.mq.md.UserIdentifier.strip())
            result = execute(self.qm, request)
        except (AdminRequestError, QueueError) as exc:
            error = exc
        except Exception as exc:  # a bad parameter type must not stop the processor
            error = AdminRequestError(BAD_REQUEST, f"{type(exc).__name__}: {exc}")
        outcome = "ok" if error is None else f"failed: {error.message}"
        refused = isinstance(error, AdminRequestError) and error.reason == NOT_AUTHORIZED[0]
        log.log(logging.WARNING if refused else logging.INFO, "admin message %s (%s %s %s): %s", envelope.uid,
                (request or {}).get("action"), (request or {}).get("resource", "queue"),
                (request or {}).get("name", ""), outcome)
        self._reply(message, reply_body(request, result, error))
        try:
            self.qm.confirm_get(envelope.uid)
        except NoMessage:
            pass
        self.processed += 1
        return True

    def _check_sender(self, user: str) -> None:
        """Raise AdminRequestError(2035) unless ``user`` may administer (module docstring)."""
        if self.administrators is None:
            return
        if not self.administrators:
            raise AdminRequestError(NOT_AUTHORIZED, "admin messages are refused: no administrators are configured"
                                                    " (the broker's [access] administrators)")
        if user not in {a[:12] for a in self.administrators}:
            raise AdminRequestError(NOT_AUTHORIZED, f"user {user or '(none)'!r} is not an administrator")

    def _reply(self, request: Message, body: bytes) -> None:
        md = request.mq.md
        reply_q = md.ReplyToQ.strip()
        if not reply_q:
            return
        reply = Message()
        reply.mq.md.Format = "MQSTR"
        reply.mq.md.CodedCharSetId = 1208
        reply.mq.md.CorrelId = md.MsgId
        reply.mq.body = body
        reply_qm = md.ReplyToQMgr.strip() or None
        try:
            self.qm.put(reply_q, reply, qmgr=reply_qm)
        except QueueError as exc:
            log.warning("admin reply to %s@%s not delivered: %s", reply_q, reply_qm or self.qm.name, exc)
