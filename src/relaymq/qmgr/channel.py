"""The two ends of a channel as sans-I/O state machines: the sender that moves confirmed
messages off this queue manager and the receiver that stores them on the other
(everyplace.md items 18-20; seed 004 l.2597-3136; docs/channels.md).

Assured transfer is always two-phase (item 18, seed l.2619, 3136)::

    sender                              receiver
    PUT(uid, qmgr, queue, resend) --->  put unconfirmed (durable, invisible)
                                  <---  ACK(uid)
    CONFIRM(uid)                  --->  confirmPut (durable, visible)
                                  <---  CONFIRMED(uid)
    remove the message here (QueueManager.transmitted)

Failures at any point leave the message on the sender, which sends it again with ``resend``
set: the receiver replaces an unconfirmed copy (item 19), answers CONFIRMED at once for a UID
it remembers as confirmed (duplicate removal, the digest's confirm-window decision), and
answers ERROR (RMQRC_UNKNOWN_UID) to a CONFIRM for a UID it never stored, so the sender puts
the message again instead of deleting it (the seed's "not found = success", l.3132-3134,
would lose it).

Order: the sender confirms a batch in the order it was taken (priority, then arrival, item
15) and stops at the first message the receiver refused: the ones after it stay here (item 25:
an undeliverable message blocks the rest of the route), so per source the receiver makes
messages visible in the sender's order.

Who the peer is: the transport authenticates it (relaymq.qmgr.channel_auth) and gives the
receiver its ``principal``; a receiver without one refuses the HELLO with MQRC_NOT_AUTHORIZED
and serves nothing. Every request the receiver then makes of the queue manager is first shown
to ``authority`` as a :class:`ChannelRequest` carrying that principal (the seam where queue
authorities are checked, docs/channels.md "Peer authentication"), and a message arriving over
the channel gets the principal as its MQMD.UserIdentifier: what the peer wrote there is not
trusted.

No sockets here. :class:`ChannelSender` is pure; :class:`ChannelReceiver` calls a
QueueManager (whose store may write to disk, so a transport runs it off the event loop). The
receiver never waits for a message: a GET with ``wait_ms`` is answered by :meth:`ChannelReceiver.poll`
with None while nothing is there, and the transport waits for an arrival without a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from relaymq.message.message import Message
from relaymq.qmgr.channel_frames import (
    PROTOCOL,
    REQUEST_FRAMES,
    VERSIONS,
    ChannelProtocolError,
    Frame,
    FrameType,
    encode_frame,
    error_frame,
    hello,
    result_frame,
)
from relaymq.qmgr.channel_peers import ANONYMOUS, Authority, ChannelRequest
from relaymq.qmgr.errors import (
    AlreadyDelivered,
    DuplicateMessage,
    NotAllowed,
    NotAuthorized,
    QueueError,
    UnknownQueueManager,
    UnknownUID,
)
from relaymq.qmgr.expiry import ExpireTime
from relaymq.qmgr.resolution import SYNCHRONOUS_ROUTES

#: Reason code of a body that is not an MQ-format message (MQRC_FORMAT_ERROR).
FORMAT_ERROR = (2110, "MQRC_FORMAT_ERROR")
#: Reason code of a HELLO this side cannot serve (no common version: MQRC_CHANNEL_CONFIG_ERROR).
VERSION_ERROR = (2539, "MQRC_CHANNEL_CONFIG_ERROR")


#: The authority each request needs on its queue (IBM MQ's put/get/browse, seed 000
#: l.336-371): what a ChannelRequest's ``operation`` says.
OPERATIONS: dict[FrameType, str] = {
    FrameType.PUT: "put", FrameType.GET: "get", FrameType.DELETE: "get", FrameType.CONFIRM_GET: "get",
    FrameType.UNDO: "get", FrameType.BROWSE: "browse", FrameType.UNLOCK: "browse",
}


class ReceivingQueueManager(Protocol):
    """What the receiver needs of a queue manager (relaymq.qmgr.manager.QueueManager has it)."""

    name: str

    def put(self, queue: str, message: Message, *, qmgr: str | None = None, confirm_id: int = 0,
            uid: str | None = None, resend: bool = False, expire_time: ExpireTime | None = None,
            transmission: bool = False) -> bytes: ...
    def confirm_put(self, uid: str, *, qmgr: str | None = None, queue: str | None = None) -> bool: ...
    def is_confirmed(self, uid: str) -> bool: ...
    def resolve(self, queue: str, qmgr: str | None = None) -> Any: ...


def negotiate(header: dict[str, Any]) -> int | None:
    """The highest version both sides speak, None when there is none."""
    if header.get("protocol") != PROTOCOL:
        return None
    offered = header.get("versions")
    if not isinstance(offered, list):
        return None
    common = [v for v in VERSIONS if v in offered]
    return max(common) if common else None


def _optional_bytes(header: dict[str, Any], key: str) -> bytes | None:
    value = header.get(key)
    if value is None:
        return None
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise ChannelProtocolError(f"{key} is not hex") from None


def envelope_facts(envelope: Any) -> tuple[dict[str, Any], bytes]:
    """What a RESULT carries of an Envelope (relaymq.qmgr.states): its facts and bytes."""
    facts = {"uid": envelope.uid, "queue": envelope.queue, "priority": envelope.priority}
    if envelope.lock_id:
        facts["lock_id"] = envelope.lock_id
    return facts, envelope.message.to_bytes()


class ChannelReceiver:
    """The receiving end of one connection (or of one HTTP request).

    ``handle(frame)`` returns the wire bytes of the reply. The first frame must be HELLO;
    afterwards PUT and CONFIRM are served, and from version 2 the requests on synchronous
    remote queues (GET, BROWSE, DELETE, UNLOCK, CONFIRM_GET, UNDO). ``peer`` is the calling
    queue manager's name once the HELLO is accepted.
    """

    #: Longest wait a GET may ask for (ms); the wait holds no thread (see :meth:`poll`).
    MAX_WAIT_MS = 300_000

    def __init__(self, qm: ReceivingQueueManager, *, principal: str | None = None, aliases: tuple[str, ...] = (),
                 dead_letter: bool | None = None, authorize: Callable[[str], str | None] | None = None,
                 authority: Authority | None = None, keep_context: bool = False) -> None:
        self.qm = qm
        #: Who the transport authenticated (ANONYMOUS where allowed); None: the HELLO is
        #: refused. The authz seam reads it from each ChannelRequest.
        self.principal = principal
        #: ``authority(request)`` for every request on a queue (None: everything allowed).
        self.authority = authority
        #: Messages keep their MQMD.UserIdentifier ([qmgr] channel_trusted_context lists the
        #: principal); otherwise it becomes the principal.
        self.keep_context = keep_context
        #: True once the HELLO was refused: the transport sends the refusal and closes.
        self.refused = False
        self.names = (qm.name, *aliases)
        #: ``authorize(caller)``: None when the authenticated peer may speak for the queue
        #: manager its HELLO names, else why not (ChannelIdentities.authorizer); None: anyone.
        self.authorize = authorize
        #: Put a message for this queue manager that cannot be delivered here on the dead-
        #: letter queue (QueueManager.dead_letter) instead of refusing it: always for a pull
        #: (seed l.622), for pushes as ``[qmgr] dead_letter_undeliverable`` says.
        self.dead_letter = (bool(getattr(qm, "dead_letter_undeliverable", False)) if dead_letter is None
                            else dead_letter)
        self.peer: str | None = None
        self.version: int | None = None
        #: Check each PUT against the security requirements of the queue that stores it (item
        #: 26); a home-server pull does not (seed l.3582: no channel to its destination queue).
        self.hop_checks = True
        #: Counters for statistics and tests.
        self.puts = 0
        self.confirms = 0
        self.duplicates = 0
        self.requests = 0
        #: Destinations of the PUTs seen on this connection, for a version 1 CONFIRM that
        #: does not name it (a relayed synchronous put is confirmed at its destination).
        self._destinations: dict[str, tuple[str, str]] = {}

    @property
    def ready(self) -> bool:
        return self.version is not None

    def handle(self, frame: Frame) -> bytes:
        if frame.type is FrameType.HELLO:
            return self._hello(frame)
        if not self.ready:
            raise ChannelProtocolError(f"{frame.type.name} before HELLO")
        if frame.type is FrameType.PUT:
            return self._put(frame)
        if frame.type is FrameType.CONFIRM:
            return self._confirm(frame)
        if frame.type in REQUEST_FRAMES:
            if (self.version or 0) < 2:
                raise ChannelProtocolError(f"{frame.type.name} needs protocol version 2")
            reply = self._request(frame)
            assert reply is not None  # final: an empty RESULT rather than None
            return reply
        raise ChannelProtocolError(f"unexpected {frame.type.name} frame at the receiver")

    def _hello(self, frame: Frame) -> bytes:
        if self.ready:
            raise ChannelProtocolError("second HELLO on one connection")
        version = negotiate(frame.header)
        if version is None:
            return error_frame(*VERSION_ERROR, f"no common protocol version (this side speaks {list(VERSIONS)})",
                               reply_to=FrameType.HELLO)
        peer = frame.header.get("peer")
        if peer is not None and peer not in self.names:
            error = UnknownQueueManager(f"this is queue manager {self.qm.name!r}, not {peer!r}")
            return error_frame(error.reason, error.name, error.message, reply_to=FrameType.HELLO)
        caller = frame.header.get("qmgr")
        if not isinstance(caller, str) or not caller:
            raise ChannelProtocolError("HELLO without the caller's queue manager name")
        if self.principal is None:
            refusal: str | None = (f"queue manager {self.qm.name} accepts channels only from authenticated peers"
                                   " (a client certificate, or a user and password it knows)")
        else:
            refusal = self.authorize(caller) if self.authorize is not None else None
        if refusal is not None:
            self.refused = True
            denied = NotAuthorized(refusal)
            return error_frame(denied.reason, denied.name, denied.message, reply_to=FrameType.HELLO)
        self.peer, self.version = caller, version
        return encode_frame(FrameType.WELCOME, {"version": version, "qmgr": self.qm.name})

    @staticmethod
    def _uid(frame: Frame) -> str:
        uid = frame.header.get("uid")
        if not isinstance(uid, str) or not uid:
            raise ChannelProtocolError(f"{frame.type.name} without a uid")
        return uid

    def _put(self, frame: Frame) -> bytes:
        uid = self._uid(frame)
        queue, qmgr = frame.header.get("queue"), frame.header.get("qmgr")
        if not isinstance(queue, str) or not isinstance(qmgr, str):
            raise ChannelProtocolError("PUT without queue and qmgr")
        try:
            self._check(FrameType.PUT, qmgr, queue)
        except NotAuthorized as denied:  # refused outright: never dead-lettered
            return error_frame(denied.reason, denied.name, denied.message, uid=uid, reply_to=FrameType.PUT)
        if self.qm.is_confirmed(uid):
            # Already delivered once; the sender lost our CONFIRMED. Tell it again.
            return self._already_delivered(uid)
        expire_at, confirm_id = self._put_options(frame)
        try:
            body = self._open(uid, qmgr, queue, frame.body)
        except QueueError as refused:  # queue security (item 26): refused outright, never dead-lettered
            return error_frame(refused.reason, refused.name, refused.message, uid=uid, reply_to=FrameType.PUT)
        try:
            message = Message.from_bytes(body)
        except Exception as exc:  # any decode failure is the sender's bad data, not ours
            return error_frame(*FORMAT_ERROR, f"message {uid} is not MQ format: {exc}", uid=uid,
                               reply_to=FrameType.PUT)
        if not self.keep_context:
            from relaymq.message.mqtt_mapping import user_identifier  # the one MQMD.UserIdentifier rule

            message.mq.md.UserIdentifier = user_identifier(self.principal or "")
        refusal = self._store(frame, message, uid, qmgr, queue, expire_at, confirm_id)
        if refusal is not None:
            return refusal
        self._destinations[uid] = (qmgr, queue)
        self.puts += 1
        return encode_frame(FrameType.ACK, {"uid": uid})

    @staticmethod
    def _put_options(frame: Frame) -> tuple[int | None, int]:
        """A PUT's ``expire_at`` (epoch ms, or None) and ``confirm_id`` (default 1)."""
        expire_at = frame.header.get("expire_at")
        if expire_at is not None and (isinstance(expire_at, bool) or not isinstance(expire_at, int)):
            raise ChannelProtocolError("PUT expire_at is not epoch milliseconds")
        confirm_id = frame.header.get("confirm_id", 1)
        if isinstance(confirm_id, bool) or not isinstance(confirm_id, int) or confirm_id < 1:
            raise ChannelProtocolError("PUT confirm_id is not an integer > 0")
        return expire_at, confirm_id

    def _already_delivered(self, uid: str) -> bytes:
        self.duplicates += 1
        return encode_frame(FrameType.CONFIRMED, {"uid": uid, "already": True})

    def _store(self, frame: Frame, message: Message, uid: str, qmgr: str, queue: str, expire_at: int | None,
               confirm_id: int) -> bytes | None:
        """Put the message of a PUT here unconfirmed (or on the dead-letter queue); the reply
        when it is not (an error, or CONFIRMED for a message delivered already), else None."""
        sync = bool(frame.header.get("sync"))  # a synchronous put: its sender handles refusals
        resend = bool(frame.header.get("resend"))
        try:
            if (self.version or 0) < 2 and self.qm.resolve(queue, qmgr).kind in SYNCHRONOUS_ROUTES:
                # A version 1 sender confirms by UID alone over HTTP, so the confirm could not
                # follow the message to its destination: keep it on the sender instead.
                raise NotAllowed(f"message {uid} for {queue!r} on {qmgr!r}: this queue manager reaches {qmgr!r}"
                                 " only synchronously, which needs channel protocol version 2 from the sender;"
                                 " the message stays on the sender")
            self.qm.put(queue, message, qmgr=qmgr, confirm_id=confirm_id, uid=uid, resend=resend,
                        expire_time=ExpireTime(expire_at, absolute=True) if expire_at is not None else None,
                        transmission=not sync)
        except QueueError as error:
            if isinstance(error, AlreadyDelivered) or self.qm.is_confirmed(uid):
                # confirmed at a synchronous destination earlier, or by a parallel connection
                return self._already_delivered(uid)
            if sync or not (self.dead_letter and self._dead_letter(error, message, qmgr, queue, uid, confirm_id,
                                                                  resend)):
                return error_frame(error.reason, error.name, error.message, uid=uid, reply_to=FrameType.PUT)
        return None

    def _open(self, uid: str, qmgr: str, queue: str, body: bytes) -> bytes:
        """The PUT's message opened (a queue's cryptor and compressor sealed it) once the queue
        that stores it here accepts this channel (relaymq.qmgr.queue_security)."""
        security = getattr(self.qm, "security", None)
        if security is None:
            return body
        opened: bytes = security.accept(self.qm, uid=uid, qmgr=qmgr, queue=queue, body=body,
                                        principal=self.principal, check=self.hop_checks)
        return opened

    def _dead_letter(self, error: QueueError, message: Message, qmgr: str, queue: str, uid: str,
                     confirm_id: int, resend: bool) -> bool:
        """Store an undeliverable message on the dead-letter queue, unconfirmed like any PUT;
        False when it does not apply or the dead-letter queue refuses it too."""
        dead_letter = getattr(self.qm, "dead_letter", None)
        if dead_letter is None:
            return False
        try:
            return bool(dead_letter(message, error, qmgr=qmgr, queue=queue, uid=uid, confirm_id=confirm_id,
                                    resend=resend))
        except QueueError:
            return False

    def _confirm(self, frame: Frame) -> bytes:
        uid = self._uid(frame)
        qmgr, queue = frame.header.get("qmgr"), frame.header.get("queue")
        if not (isinstance(qmgr, str) and isinstance(queue, str)):
            qmgr, queue = self._destinations.get(uid, (None, None))
        try:
            fresh = self.qm.confirm_put(uid, qmgr=qmgr, queue=queue)
        except QueueError as error:
            return error_frame(error.reason, error.name, error.message, uid=uid, reply_to=FrameType.CONFIRM)
        self._destinations.pop(uid, None)
        self.confirms += 1
        return encode_frame(FrameType.CONFIRMED, {"uid": uid, "already": not fresh})

    # -- synchronous remote queues (version 2; items 10, 20) ------------------------------
    def _request(self, frame: Frame, *, final: bool = True) -> bytes | None:
        header = frame.header
        req = header.get("req")
        if isinstance(req, bool) or not isinstance(req, int):
            raise ChannelProtocolError(f"{frame.type.name} without a req number")
        queue, qmgr = header.get("queue"), header.get("qmgr")
        if not isinstance(queue, str) or not isinstance(qmgr, str):
            raise ChannelProtocolError(f"{frame.type.name} without queue and qmgr")
        self.requests += 1
        try:
            self._check(frame.type, qmgr, queue)
            reply = self._serve(frame.type, req, header, qmgr, queue, final=final)
        except QueueError as error:
            return error_frame(error.reason, error.name, error.message, reply_to=frame.type, req=req)
        if reply is None:
            self.requests -= 1  # asked again when a message arrives
        return reply

    def _check(self, kind: FrameType, qmgr: str, queue: str) -> None:
        """Raise NotAuthorized when ``authority`` refuses this request."""
        if self.authority is None:
            return
        request = ChannelRequest(self.principal or ANONYMOUS, self.peer or "", OPERATIONS[kind], qmgr, queue)
        refusal = self.authority(request)
        if refusal is not None:
            raise NotAuthorized(refusal)

    def get_wait(self, frame: Frame) -> float:
        """Seconds a GET frame asks to wait for a message (capped at MAX_WAIT_MS); 0 for any
        other frame."""
        if frame.type is not FrameType.GET or not self.ready:
            return 0.0
        wait_ms = frame.header.get("wait_ms", 0)
        if isinstance(wait_ms, bool) or not isinstance(wait_ms, int):
            return 0.0  # handle() reports it
        return min(max(wait_ms, 0), self.MAX_WAIT_MS) / 1000.0

    def poll(self, frame: Frame, *, final: bool) -> bytes | None:
        """Answer a GET without waiting: its RESULT or ERROR, or None when no message is there
        yet and this is not the ``final`` attempt (the transport asks again when one arrives,
        until the GET's wait is over, then with ``final``)."""
        if frame.type is not FrameType.GET:
            return self.handle(frame)
        return self._request(frame, final=final)

    @staticmethod
    def _int(header: dict[str, Any], key: str, default: int = 0) -> int:
        value = header.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ChannelProtocolError(f"{key} is not an integer")
        return value

    def _selection(self, header: dict[str, Any]) -> dict[str, Any]:
        selector, fields = header.get("selector"), header.get("fields")
        if selector is not None and not isinstance(selector, str):
            raise ChannelProtocolError("selector is not a string")
        if fields is not None and not isinstance(fields, dict):
            raise ChannelProtocolError("fields is not an object")
        return {"msg_id": _optional_bytes(header, "msg_id"), "correl_id": _optional_bytes(header, "correl_id"),
                "selector": selector, "fields": fields}

    def _serve(self, kind: FrameType, req: int, header: dict[str, Any], qmgr: str, queue: str, *,
               final: bool = True) -> bytes | None:
        qm: Any = self.qm
        if kind is FrameType.GET:
            uid = header.get("uid")
            if uid is not None and not isinstance(uid, str):
                raise ChannelProtocolError("GET uid is not a string")
            self._int(header, "wait_ms")  # a malformed wait is a protocol error; the wait is the transport's
            envelope = qm.get_envelope(queue, qmgr=qmgr, confirm_id=self._int(header, "confirm_id"), uid=uid,
                                       lock_id=self._int(header, "lock_id"), **self._selection(header))
            if envelope is None and not final:
                return None
            return result_frame(req, messages=[envelope_facts(envelope)] if envelope is not None else [])
        if kind is FrameType.BROWSE:
            limit = header.get("limit")
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
                raise ChannelProtocolError("BROWSE limit is not an integer >= 0")
            lock_confirm = self._int(header, "lock_confirm_id")
            if lock_confirm:
                found = qm.browse_and_lock(queue, qmgr=qmgr, confirm_id=lock_confirm, limit=limit,
                                           **self._selection(header))
            else:
                found = qm.browse_envelopes(queue, qmgr=qmgr, limit=limit, **self._selection(header))
            return result_frame(req, messages=[envelope_facts(e) for e in found])
        if kind is FrameType.DELETE:
            qm.delete(queue, self._uid_of(header), lock_id=self._int(header, "lock_id"), qmgr=qmgr)
            return result_frame(req, True)
        if kind is FrameType.UNLOCK:
            qm.unlock(queue, self._uid_of(header), self._int(header, "lock_id"), qmgr=qmgr)
            return result_frame(req, True)
        if kind is FrameType.CONFIRM_GET:
            return result_frame(req, qm.confirm_get(self._uid_of(header), qmgr=qmgr, queue=queue))
        if kind is FrameType.UNDO:
            return result_frame(req, qm.undo(queue, self._int(header, "confirm_id"), qmgr=qmgr))
        raise ChannelProtocolError(f"unexpected {kind.name}")  # pragma: no cover - REQUEST_FRAMES only

    @staticmethod
    def _uid_of(header: dict[str, Any]) -> str:
        uid = header.get("uid")
        if not isinstance(uid, str) or not uid:
            raise ChannelProtocolError("request without a uid")
        return uid


@dataclass(frozen=True)
class Outgoing:
    """A message the sender is to transfer: its UID, final destination and MQ-format bytes."""

    uid: str
    qmgr: str
    queue: str
    data: bytes
    resend: bool = False
    #: The message's absolute deadline (epoch ms) when it has one: its own ExpireTime is
    #: kept across hops (item 5), sent from protocol version 2.
    expire_at: int | None = None


@dataclass(frozen=True)
class Delivered:
    """The receiver confirmed ``uid``: remove it here."""

    uid: str
    already: bool = False


@dataclass(frozen=True)
class Refused:
    """The receiver refused ``uid`` (reason, name, message of its QueueError): it stays here."""

    uid: str
    reason: int
    name: str
    message: str


@dataclass(frozen=True)
class Held:
    """``uid`` was stored unconfirmed at the receiver but not confirmed, because a message
    before it in the batch was refused (item 25); it goes again, with Resend, later."""

    uid: str


Event = Delivered | Refused | Held

# Per-UID states inside a batch.
_SENT, _ACKED, _CONFIRMING, _DONE, _REFUSED, _HELD = range(6)


class ChannelSender:
    """The sending end: handshake, then batches of PUTs confirmed in order.

    Use: ``hello()`` -> send; feed the reply to ``receive``; ``welcomed`` becomes true. Then
    ``send_batch(items)`` -> send; feed every reply frame to ``receive(frame)``, which returns
    (events, bytes to send); the batch is over when ``batch_done``.
    """

    def __init__(self, local_qmgr: str, peer: str | None = None) -> None:
        self.local_qmgr = local_qmgr
        self.peer = peer
        self.remote_qmgr: str | None = None
        self.version: int | None = None
        self._batch: list[str] = []
        self._state: dict[str, int] = {}
        self._resend: dict[str, bool] = {}
        self._destination: dict[str, tuple[str, str]] = {}

    @property
    def welcomed(self) -> bool:
        return self.version is not None

    def hello(self, credentials: tuple[str, str] | None = None) -> bytes:
        return hello(self.local_qmgr, self.peer, credentials)

    @property
    def batch_done(self) -> bool:
        return all(state in (_DONE, _REFUSED, _HELD) for state in self._state.values())

    @property
    def in_flight(self) -> int:
        return sum(1 for state in self._state.values() if state not in (_DONE, _REFUSED, _HELD))

    def send_batch(self, items: list[Outgoing]) -> bytes:
        """PUT frames for ``items`` (in the order given: the confirm order)."""
        if not self.welcomed:
            raise ChannelProtocolError("send_batch before WELCOME")
        if not self.batch_done:
            raise ChannelProtocolError("send_batch while a batch is in flight")
        self._batch = [item.uid for item in items]
        self._state = {item.uid: _SENT for item in items}
        self._resend = {item.uid: item.resend for item in items}
        self._destination = {item.uid: (item.qmgr, item.queue) for item in items}
        return b"".join(encode_frame(FrameType.PUT, self._put_header(item), item.data) for item in items)

    def _put_header(self, item: Outgoing) -> dict[str, Any]:
        header: dict[str, Any] = {"uid": item.uid, "qmgr": item.qmgr, "queue": item.queue, "resend": item.resend}
        if item.expire_at is not None and (self.version or 0) >= 2:
            header["expire_at"] = item.expire_at
        return header

    def _confirm_frame(self, uid: str) -> bytes:
        header: dict[str, Any] = {"uid": uid}
        if (self.version or 0) >= 2:  # so a queue manager relaying it synchronously knows where
            header["qmgr"], header["queue"] = self._destination[uid]
        return encode_frame(FrameType.CONFIRM, header)

    def receive(self, frame: Frame) -> tuple[list[Event], bytes]:
        if frame.type is FrameType.WELCOME:
            self._welcome(frame)
            return [], b""
        if frame.type is FrameType.ERROR and frame.header.get("reply_to") == FrameType.HELLO.name:
            raise ChannelRefused(frame.header.get("reason", 0), frame.header.get("name", ""),
                                 frame.header.get("message", ""))
        if not self.welcomed:
            raise ChannelProtocolError(f"{frame.type.name} before WELCOME")
        uid = frame.header.get("uid")
        if not isinstance(uid, str) or (state := self._state.get(uid)) is None:
            raise ChannelProtocolError(f"{frame.type.name} for uid {uid!r} not in flight")
        answered = self._answer(frame, uid, state)
        if answered is None:
            raise ChannelProtocolError(f"unexpected {frame.type.name} for uid {uid} in state {state}")
        return answered

    def _welcome(self, frame: Frame) -> None:
        if self.welcomed:
            raise ChannelProtocolError("second WELCOME")
        version = frame.header.get("version")
        if version not in VERSIONS:
            raise ChannelProtocolError(f"peer chose protocol version {version!r}, not offered")
        self.version = version
        self.remote_qmgr = frame.header.get("qmgr")

    def _answer(self, frame: Frame, uid: str, state: int) -> tuple[list[Event], bytes] | None:
        """The receiver's answer to the PUT or CONFIRM of ``uid`` (in ``state``); None when
        that answer cannot come now."""
        if frame.type is FrameType.ACK and state == _SENT:
            self._state[uid] = _ACKED
            return [], self._confirm_ready()
        if frame.type is FrameType.CONFIRMED and state in (_SENT, _CONFIRMING):
            # From _SENT: the receiver already had it confirmed (a resend of a delivered UID).
            self._state[uid] = _DONE
            events: list[Event] = [Delivered(uid, bool(frame.header.get("already")))]
            return events, self._confirm_ready() if state == _SENT else b""
        if frame.type is FrameType.ERROR:
            return self._refused(frame.header, uid, state)
        return None

    def _refused(self, header: dict[str, Any], uid: str, state: int) -> tuple[list[Event], bytes] | None:
        """An ERROR answering the PUT or CONFIRM of ``uid``: held for another go, or refused."""
        reason, name = int(header.get("reason", 0)), str(header.get("name", ""))
        message = str(header.get("message", ""))
        if state == _CONFIRMING and reason == UnknownUID.reason:
            # The receiver never stored it (or lost it): not delivered; it goes again.
            self._state[uid] = _HELD
            return [Held(uid)], b""
        if state == _SENT and reason == DuplicateMessage.reason and not self._resend.get(uid, False):
            # An unconfirmed copy from an earlier attempt is there: put it again with Resend.
            self._state[uid] = _HELD
            return [Held(uid)], self._confirm_ready()
        if state in (_SENT, _CONFIRMING):
            self._state[uid] = _REFUSED
            return [Refused(uid, reason, name, message)], self._confirm_ready() if state == _SENT else b""
        return None

    def _confirm_ready(self) -> bytes:
        """Once every PUT of the batch is answered, CONFIRM the acknowledged ones in batch
        order up to the first one that was not acknowledged (refused, or held for a resend);
        hold the rest, so the receiver shows them in this order (items 15, 25)."""
        if any(self._state[uid] == _SENT for uid in self._batch):
            return b""
        out = []
        blocked = False
        for uid in self._batch:
            state = self._state[uid]
            if state in (_REFUSED, _HELD):
                blocked = True
            elif state == _ACKED:
                if blocked:
                    self._state[uid] = _HELD
                else:
                    self._state[uid] = _CONFIRMING
                    out.append(self._confirm_frame(uid))
        return b"".join(out)

    def held(self) -> list[str]:
        """UIDs of the finished batch that were held back (for the caller's bookkeeping)."""
        return [uid for uid in self._batch if self._state.get(uid) == _HELD]


class ChannelRefused(Exception):
    """The peer refused the connection at HELLO (wrong queue manager, no common version)."""

    def __init__(self, reason: int, name: str, message: str) -> None:
        self.reason, self.name, self.message = reason, name, message
        super().__init__(f"{message} (reason {reason} {name})")
