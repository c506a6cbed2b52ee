"""The channel protocol on asyncio: outbound links that push (and pull), the inbound TCP
listener, and the HTTP adapter route (docs/channels.md; everyplace.md items 18-25, 30).

The protocol logic is in :mod:`relaymq.qmgr.channel` (sans-I/O); here are only sockets,
timeouts, reconnect backoff and the hops to worker threads for queue manager calls (a put
waits for its commit, which must not block the event loop).

Transmission is triggered by the queue manager's transmission listener (a message for queue
manager X was committed: wake the link for X) and, as a safety net, by a poll every
``POLL_SECONDS``; a link that fails waits ``retry_initial_ms``, doubling up to
``retry_max_ms``, and connects again. Only confirmed messages are transmitted
(QueueManager.pending_transmission gives only those).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import random
import ssl
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from relaymq.http.auth import REALM, parse_basic
from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.qmgr.aio import Arrivals
from relaymq.qmgr.channel import (
    ChannelReceiver,
    ChannelRefused,
    ChannelSender,
    Delivered,
    Held,
    Outgoing,
    Refused,
)
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_listener import HTTP_CHANNEL_PATH, ChannelListener
from relaymq.qmgr.channel_peers import Authority
from relaymq.qmgr.channel_frames import (
    DEFAULT_MAX_FRAME,
    HELLO_MAX_FRAME,
    ChannelProtocolError,
    Frame,
    FrameDecoder,
    FrameType,
    decode_all,
    encode_frame,
    hello,
    hello_credentials,
)
from relaymq.qmgr.channel_settings import LISTENER_MAX_FRAME, ConnectionSettings, hello_credentials_of
from relaymq.qmgr.errors import ALL_ERRORS, NotConnected, QueueError

log = logging.getLogger("relaymq.qmgr.channel")

#: Seconds between checks for pending messages when no trigger came.
POLL_SECONDS = 1.0
_READ_SIZE = 65536


class Conversation(Protocol):
    """A way to exchange frames with the peer: TCP stream or HTTP requests."""

    async def send(self, data: bytes) -> None: ...
    async def receive(self) -> list[Frame]: ...
    async def close(self) -> None: ...
    @property
    def closed_by_peer(self) -> bool: ...


class StreamConversation:
    """Frames over a TCP (or TLS) stream. ``timeout``: seconds to wait for the next frame to
    start (None: for ever); ``frame_timeout``: seconds a started frame has to arrive whole
    (None: ``timeout``); the decoder refuses frames longer than ``max_frame``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float | None, *,
                 frame_timeout: float | None = None, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.reader, self.writer, self.timeout = reader, writer, timeout
        self.frame_timeout = frame_timeout
        self.decoder = FrameDecoder(max_frame)
        #: Frames read while a request was being served (watch_hangup), for receive().
        self._backlog: list[Frame] = []
        self._frame_started = 0.0

    async def send(self, data: bytes) -> None:
        if data:
            self.writer.write(data)
            await self.writer.drain()

    @property
    def closed_by_peer(self) -> bool:
        """The peer closed the connection and nothing it sent is left unread (a listener's
        idle timeout)."""
        return self.reader.at_eof()

    def _feed(self, data: bytes) -> list[Frame]:
        if not data:
            raise ConnectionResetError("channel peer closed the connection")
        started = self.decoder.pending
        frames = self.decoder.feed(data)
        if self.decoder.pending and (frames or not started):
            self._frame_started = asyncio.get_running_loop().time()
        return frames

    async def receive(self) -> list[Frame]:
        if self._backlog:
            frames, self._backlog = self._backlog, []
            return frames
        while True:
            timeout, what = self.timeout, "no frame came within the idle timeout"
            if self.decoder.pending:
                limit = self.frame_timeout if self.frame_timeout is not None else self.timeout
                if limit is not None:
                    timeout = max(0.0, self._frame_started + limit - asyncio.get_running_loop().time())
                    what = f"a started frame did not arrive whole within {limit:g} s"
            try:
                data = await asyncio.wait_for(self.reader.read(_READ_SIZE), timeout)
            except TimeoutError:
                raise TimeoutError(what) from None
            frames = self._feed(data)
            if frames:
                return frames

    async def watch_hangup(self, max_backlog: int = 64) -> None:
        """While a request is served: keep what the peer sends for receive() and raise
        ConnectionResetError when it hangs up (so its waiting GET ends at once). Past
        ``max_backlog`` frames it stops reading (the peer must wait for its answers)."""
        while len(self._backlog) < max_backlog:
            self._backlog += self._feed(await self.reader.read(_READ_SIZE))
        await asyncio.get_running_loop().create_future()  # until cancelled

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass


class HttpConversation:
    """Frames POSTed over HTTP: each ``send`` + ``receive`` is one request whose body starts
    with the HELLO (HTTP requests share no state), and whose response starts with WELCOME."""

    def __init__(self, url: str, timeout: float, ssl_context: ssl.SSLContext | None,
                 credentials: tuple[str, str] | None = None) -> None:
        self.url, self.timeout, self.ssl_context = url, timeout, ssl_context
        self._headers = [("content-type", "application/octet-stream")]
        if credentials is not None:
            token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode("ascii")
            self._headers.append(("authorization", f"Basic {token}"))
        self._hello: bytes | None = None
        self._pending = b""
        self._welcomed = False

    async def send(self, data: bytes) -> None:
        if self._hello is None:
            self._hello = data  # the first thing a sender sends is its HELLO
            return
        self._pending += data

    async def receive(self) -> list[Frame]:
        if self._hello is None or (self._welcomed and not self._pending):
            raise ChannelProtocolError("nothing to send over HTTP")
        body, self._pending = self._hello + self._pending, b""
        # The HTTP client (h11) is imported by a channel that speaks HTTP: a queue manager
        # without one does not load it (issue 16: a faster start, bench/compare row 9).
        from relaymq.http.client import HttpClientError
        from relaymq.http.client import request as http_request

        try:
            response = await http_request("POST", self.url, headers=self._headers,
                                          body=body, timeout=self.timeout, ssl_context=self.ssl_context)
        except HttpClientError as exc:
            raise ConnectionError(str(exc)) from None
        if response.status == 401:
            said = "were refused" if len(self._headers) > 1 else "are needed (user/password on the connection)"
            raise ConnectionError(f"HTTP channel {self.url}: status 401, credentials {said}")
        if response.status != 200:
            raise ConnectionError(f"HTTP channel {self.url}: status {response.status}")
        frames = decode_all(response.body)
        if self._welcomed:  # every response repeats the WELCOME; the sender wants it once
            return [f for f in frames if f.type is not FrameType.WELCOME]
        self._welcomed = True
        return frames

    @property
    def closed_by_peer(self) -> bool:
        return False  # each exchange is a request of its own

    async def close(self) -> None:
        return None


def _client_ssl(connection: ConnectionSettings) -> ssl.SSLContext | None:
    if not (connection.tls or connection.address.startswith("https://")):
        return None
    # The peer's certificate must chain to tls_ca (or the system CAs) and name the host of
    # the address, as for any TLS client; tls_cert/tls_key is this queue manager's client
    # certificate for a listener that requires one.
    context = ssl.create_default_context(cafile=connection.tls_ca or None)
    if connection.tls_cert:
        context.load_cert_chain(connection.tls_cert, connection.tls_key or None)
    return context


async def open_conversation(connection: ConnectionSettings) -> Conversation:
    """Connect along ``connection`` (already followed through ``via``)."""
    timeout = connection.timeout_ms / 1000.0
    context = _client_ssl(connection)
    if connection.is_http:
        url = connection.address
        if url.count("/") < 3 or url.endswith("/") and url.count("/") == 3:
            url = url.rstrip("/") + HTTP_CHANNEL_PATH
        credentials = (connection.user, connection.password) if connection.user else None
        return HttpConversation(url, timeout, context, credentials)
    host, _, port = connection.address.rpartition(":")
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=context), timeout)
    return StreamConversation(reader, writer, timeout)


def certificate_name(peercert: Any) -> str | None:
    """The subject CN of a verified peer certificate (``SSLObject.getpeercert()``), None
    when there is none."""
    if not isinstance(peercert, dict):
        return None
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


async def run_in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


#: Worker threads for queue manager calls of one batch made at once, so the store's group
#: commit covers many of them with one commit (a put waits for its commit; calls made one
#: after the other pay one commit each).
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="relaymq-channel")


#: Threads for the bcrypt check of a peer's password: few and of their own, so a flood of
#: wrong passwords queues here instead of taking the threads every other call needs.
_AUTH_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="relaymq-channel-auth")


async def authenticate(authenticator: ChannelAuthenticator, certificate: str | None,
                       credentials: tuple[str, bytes] | None) -> str | None:
    """The peer's principal (None: refused), bcrypt off the event loop on _AUTH_POOL."""
    if certificate or credentials is None:
        return authenticator.authenticate(certificate, None)
    return await asyncio.get_running_loop().run_in_executor(
        _AUTH_POOL, functools.partial(authenticator.authenticate, None, credentials))


async def waiting_get(receiver: ChannelReceiver, frame: Frame, seconds: float) -> bytes:
    """Answer a GET that may wait ``seconds`` for a message, holding no thread while it
    waits (issue 15 finding 7): look without waiting, then await an arrival on the queue
    (relaymq.qmgr.aio.Arrivals) and look again, until a message is taken or the time is up.
    Cancelling the task (the peer went away) ends the wait and removes the listener."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    qmgr, queue = frame.header.get("qmgr"), frame.header.get("queue")
    if not isinstance(qmgr, str) or not isinstance(queue, str):
        return await run_in_thread(receiver.handle, frame)  # the receiver reports the protocol error
    async with Arrivals(receiver.qm, queue, None if qmgr in receiver.names else qmgr) as arrivals:
        while True:
            final = loop.time() >= deadline
            reply = await run_in_thread(receiver.poll, frame, final=final)
            if reply is not None:
                return reply
            await arrivals.wait(deadline - loop.time())


async def answer_frames(receiver: ChannelReceiver, frames: list[Frame],
                        send: Callable[[bytes], Any], guard: Callable[[Any], Any] | None = None) -> None:
    """``send`` the receiver's replies to ``frames`` in order: runs of frames that need no
    wait go to a worker thread together (handle_frames), a GET that may wait is served by
    :func:`waiting_get` (inside ``guard``, which ends it when the peer goes)."""
    index = 0
    while index < len(frames):
        wait = receiver.get_wait(frames[index])
        if wait > 0:
            work = waiting_get(receiver, frames[index], wait)
            await send(await (guard(work) if guard is not None else work))
            index += 1
            continue
        end = index
        while end < len(frames) and receiver.get_wait(frames[end]) <= 0:
            end += 1
        await send(await run_in_thread(handle_frames, receiver, frames[index:end]))
        index = end


def handle_frames(receiver: ChannelReceiver, frames: list[Frame]) -> bytes:
    """The receiver's replies to ``frames``, in frame order (runs in a worker thread).

    Consecutive PUTs are stored concurrently: unconfirmed puts have no order among them.
    Consecutive CONFIRMs are started in frame order, each once the previous one is
    registered (QueueManager.is_confirmed is true once its commit is submitted), so messages
    become visible in the sender's order (item 12) while their commits are grouped; every
    reply is sent only after all of them are durable.
    """
    replies: list[bytes] = []
    index = 0
    while index < len(frames):
        kind = frames[index].type
        end = index
        while end < len(frames) and frames[end].type is kind:
            end += 1
        group = frames[index:end]
        if kind is FrameType.PUT and len(group) > 1:
            replies += list(_POOL.map(receiver.handle, group))
        elif kind is FrameType.CONFIRM and len(group) > 1:
            futures = []
            for frame in group:
                future = _POOL.submit(receiver.handle, frame)
                uid = str(frame.header.get("uid", ""))
                spins = 0
                while not future.done() and not receiver.qm.is_confirmed(uid):
                    # The confirm registers within microseconds unless the queue manager is
                    # busy; then stop spinning and poll gently.
                    spins += 1
                    time.sleep(0 if spins < 100 else 0.001)
                futures.append(future)
            replies += [future.result() for future in futures]
        else:
            replies += [receiver.handle(frame) for frame in group]
        index = end
    return b"".join(replies)


#: Rounds in a row in which every message of a batch was held back before push_pending
#: leaves the rest to the next trigger or poll (a receiver that keeps losing unconfirmed
#: puts must not make the sender spin).
MAX_HELD_ROUNDS = 5


class BatchAnswers:
    """What the receiver answered to one batch so far: the UIDs it confirmed, the first
    refusal, whether it held any back."""

    __slots__ = ("done", "refused", "held")

    def __init__(self) -> None:
        self.done: list[str] = []
        self.refused: Refused | None = None
        self.held = False

    def receive(self, sender: ChannelSender, frame: Frame) -> bytes:
        """Give ``frame`` to ``sender``, note its events, and return what to send next."""
        events, out = sender.receive(frame)
        for event in events:
            if isinstance(event, Delivered):
                self.done.append(event.uid)
            elif isinstance(event, Refused) and self.refused is None:
                self.refused = event
            elif isinstance(event, Held):
                self.held = True
        return out


async def push_pending(conversation: Conversation, sender: ChannelSender, qm: Any, target: str, *,
                       pull: bool, batch: int, attempted: set[str],
                       store_queue: str | None = None) -> tuple[int, Refused | None]:
    """Send every confirmed message waiting here for ``target`` in batches, two-phase
    (from the store-and-forward queue ``store_queue`` only, when given: a home-server pull).

    Returns (messages delivered, the refusal that stopped it or None). A refused message
    stays here and blocks the route (item 25) until the caller tries again.
    """
    delivered = 0
    held_rounds = 0
    while True:
        pending = await run_in_thread(qm.pending_messages, target, pull=pull, limit=batch, store_queue=store_queue)
        if not pending:
            return delivered, None
        items = [Outgoing(p.uid, target, p.queue, p.data(), resend=p.uid in attempted,
                          expire_at=p.expire_at)
                 for p in pending]
        attempted.update(item.uid for item in items)
        out = sender.send_batch(items)
        answers = BatchAnswers()
        while not sender.batch_done:
            await conversation.send(out)
            out = b""
            for frame in await conversation.receive():
                out += answers.receive(sender, frame)
        done, refused, held = answers.done, answers.refused, answers.held
        if done:
            await run_in_thread(_transmitted, qm, done)
            delivered += len(done)
            for uid in done:
                attempted.discard(uid)
        if refused is not None:
            return delivered, refused
        if held and not done:
            # Only held messages: they go again at once with Resend set (already in attempted),
            # a few times; then the next trigger or poll tries again.
            held_rounds += 1
            if held_rounds >= MAX_HELD_ROUNDS:
                return delivered, None
        else:
            held_rounds = 0


class SyncClient:
    """Request and answer over a connection, for synchronous remote queues and discovery
    (items 8, 10, 20, 21): one frame out, one frame back (ACK, CONFIRMED, RESULT or ERROR).

    Connections are opened on demand along a route (a via connection's real one) and kept
    for reuse while idle (``max_idle`` per route), so a burst of synchronous operations does
    not pay a connect and a HELLO each. A request that fails on the connection raises
    NotConnected and is not repeated here: whether the peer acted on it is unknown, and the
    seed leaves that retry to the application (item 21; an assured put or get, with its
    Resend or undo, makes it safe). An idle connection is reused for ``reuse_seconds`` at most,
    well inside a listener's idle timeout (``[qmgr] channel_idle_timeout``, 300 s by default),
    so a request does not go out on a connection the peer is just closing.
    """

    def __init__(self, local_qmgr: str, *, max_idle: int = 8, reuse_seconds: float = 60.0,
                 open_fn: Callable[[ConnectionSettings], Any] | None = None) -> None:
        self.local_qmgr = local_qmgr
        #: Connects along a route (the channel service's: the route's adapter, relaymq.qmgr.adapters).
        self.open_fn = open_fn or open_conversation
        self.max_idle = max_idle
        self.reuse_seconds = reuse_seconds
        #: route name -> (connection, loop time it became idle), the newest last
        self._idle: dict[str, list[tuple[Conversation, float]]] = {}
        self._closed = False

    async def _open(self, route: ConnectionSettings) -> Conversation:
        conversation: Conversation = await self.open_fn(route)
        await conversation.send(hello(self.local_qmgr, route.name, hello_credentials_of(route)))
        if isinstance(conversation, HttpConversation):
            return conversation  # the HELLO goes with each request; its WELCOME comes back with the answer
        try:
            self._check_welcome(await conversation.receive(), route)
        except BaseException:
            await conversation.close()
            raise
        return conversation

    @staticmethod
    def _check_welcome(frames: list[Frame], route: ConnectionSettings) -> list[Frame]:
        rest = []
        for frame in frames:
            if frame.type is FrameType.WELCOME:
                if frame.header.get("version", 0) < 2:
                    raise NotConnected(f"queue manager {route.name} ({route.address}) speaks channel protocol"
                                       f" version {frame.header.get('version')}; synchronous remote queues need 2")
            elif frame.type is FrameType.ERROR and frame.header.get("reply_to") == FrameType.HELLO.name:
                raise ChannelRefused(frame.header.get("reason", 0), frame.header.get("name", ""),
                                     frame.header.get("message", ""))
            else:
                rest.append(frame)
        return rest

    def _take(self, route: ConnectionSettings) -> Conversation | None:
        idle = self._idle.get(route.name, [])
        now = asyncio.get_running_loop().time()
        while idle:
            conversation, since = idle.pop()
            stale = now - since > self.reuse_seconds
            if stale or isinstance(conversation, StreamConversation) and conversation.reader.at_eof():
                asyncio.ensure_future(conversation.close())
                continue
            return conversation
        return None

    async def call(self, route: ConnectionSettings, frame: bytes, *, extra_timeout: float = 0.0) -> Frame:
        """Send ``frame`` along ``route`` and return the one frame that answers it."""
        if self._closed:
            raise NotConnected("the channels are stopping")
        try:
            conversation = self._take(route) or await self._open(route)
        except (OSError, TimeoutError, ChannelProtocolError, ChannelRefused) as exc:
            raise NotConnected(f"cannot reach queue manager {route.name} at {route.address}: {exc}") from None
        base = conversation.timeout  # type: ignore[attr-defined]
        conversation.timeout = (base or route.timeout_ms / 1000.0) + extra_timeout  # type: ignore[attr-defined]
        try:
            await conversation.send(frame)
            answers: list[Frame] = []
            while not answers:
                answers = self._check_welcome(await conversation.receive(), route)
        except BaseException as exc:
            await conversation.close()
            if isinstance(exc, (OSError, TimeoutError, ChannelProtocolError, ChannelRefused)):
                raise NotConnected(f"queue manager {route.name} at {route.address}: {type(exc).__name__}:"
                                   f" {exc}") from None
            raise
        conversation.timeout = base  # type: ignore[attr-defined]
        idle = self._idle.setdefault(route.name, [])
        if len(answers) == 1 and len(idle) < self.max_idle and not self._closed:
            idle.append((conversation, asyncio.get_running_loop().time()))
        else:
            await conversation.close()
        if len(answers) != 1:
            raise NotConnected(f"queue manager {route.name} answered {len(answers)} frames to one request")
        return answers[0]

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for conversations in idle.values():
            for conversation, _ in conversations:
                await conversation.close()


def raise_error(frame: Frame) -> None:
    """Raise the QueueError an ERROR frame carries (same reason code as at the peer)."""
    raise error_for(int(frame.header.get("reason", 0)), str(frame.header.get("message", "")))


def error_for(reason: int, message: str) -> QueueError:
    """The QueueError class with ``reason`` (relaymq.qmgr.errors), for an ERROR frame."""
    for cls in ALL_ERRORS:
        if cls.reason == reason:
            return cls(message)
    return QueueError(message)


def _transmitted(qm: Any, uids: list[str]) -> None:
    """Remove delivered messages here; concurrently, so their commits are grouped."""

    def one(uid: str) -> None:
        try:
            qm.transmitted(uid)
        except QueueError:
            pass  # already removed (a repeated CONFIRMED): nothing left to do

    list(_POOL.map(one, uids))


async def serve_pull(conversation: Conversation, qm: Any, peer: str, *, version: int, batch: int,
                     attempted: set[str], store_queue: str | None = None) -> None:
    """Answer a PULL (home-server, item 24): push what waits here for ``peer`` (also from
    store-and-forward queues that do not push; only from ``store_queue`` when the PULL names
    it, l.3371), then PULL_DONE. A PULL naming no store-and-forward queue of this queue
    manager is answered by PULL_DONE with ``error``."""
    sender = ChannelSender(qm.name)
    sender.version, sender.remote_qmgr = version, peer  # the peer's HELLO already opened this connection
    header: dict[str, Any]
    try:
        count, refused = await push_pending(conversation, sender, qm, peer, pull=True, batch=batch,
                                            attempted=attempted, store_queue=store_queue)
    except QueueError as exc:
        header = {"count": 0, "error": {"reason": exc.reason, "name": exc.name, "message": exc.message}}
    else:
        header = {"count": count}
        if refused is not None:
            header["refused"] = {"uid": refused.uid, "reason": refused.reason, "message": refused.message}
    await conversation.send(encode_frame(FrameType.PULL_DONE, header))


class ChannelLink:
    """The outbound side for one connection definition: connects (following ``via``),
    pushes what waits for ``name`` when the queue manager rule agrees (triggerTransmission,
    item 32), pulls on the home-server schedule (``pull_plan``), reconnects with backoff."""

    def __init__(self, qm: Any, name: str, route: ConnectionSettings, *, pull_interval: float = 0.0,
                 pull_plan: Callable[[], dict[str | None, float]] | None = None,
                 open_fn: Callable[[ConnectionSettings], Any] = open_conversation) -> None:
        self.qm = qm
        self.name = name
        self.route = route
        self.pull_interval = pull_interval
        self.pull_plan = pull_plan
        self.open_fn = open_fn
        self.connected = False
        self.delivered = 0
        self.pulled = 0
        self.last_error: str | None = None
        self.last_pull_error: str | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._attempted: set[str] = set()
        self._fields: dict[str, Any] = {}
        self._forced = False
        self._pull_now = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"channel-link-{self.name}")

    def wake(self, fields: dict[str, Any] | None = None, *, forced: bool = False) -> None:
        """A message for this link's queue manager was committed (``fields``: the message's,
        for the triggerTransmission rule), or ``forced``: trigger_transmission() was agreed
        by the rule: transmit without asking it again, and pull now."""
        if forced:
            self._forced = self._pull_now = True
        if fields:
            self._fields = fields
        self._wake.set()

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def _run(self) -> None:
        initial, most = self.route.retry_initial_ms / 1000.0, self.route.retry_max_ms / 1000.0
        delay = initial
        loop = asyncio.get_running_loop()
        while not self._stopping:
            conversation: Conversation | None = None
            welcomed_at: float | None = None
            try:
                conversation = await self.open_fn(self.route)
                sender = ChannelSender(self.qm.name, self.route.name)
                await conversation.send(sender.hello(hello_credentials_of(self.route)))
                while not sender.welcomed:
                    for frame in await conversation.receive():
                        sender.receive(frame)
                self.connected = True
                if self.last_error is not None:
                    log.info("channel to %s (%s) connected", self.name, self.route.address)
                self.last_error = None
                welcomed_at = loop.time()
                await self._session(conversation, sender)
                delay = initial  # a session that ended by itself (idle, closed by the peer)
            except asyncio.CancelledError:
                raise
            except (OSError, TimeoutError, ChannelProtocolError, ChannelRefused, QueueError) as exc:
                message = f"{type(exc).__name__}: {exc}"
                if message != self.last_error:
                    log.warning("channel to %s (%s): %s; retrying", self.name, self.route.address, message)
                self.last_error = message
            except Exception as exc:  # a bug must not end the link for good: log it, retry
                log.exception("channel to %s (%s) failed", self.name, self.route.address)
                self.last_error = f"{type(exc).__name__}: {exc}"
            finally:
                self.connected = False
                if conversation is not None:
                    await conversation.close()
            if self._stopping:
                return
            if welcomed_at is not None and loop.time() - welcomed_at > most:
                delay = initial  # it worked for a while: a new failure starts a new backoff
            # A session that fails at once (a message the peer refuses, 2035) backs off like a
            # connection that fails: connecting again at once would only repeat the refusal.
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            delay = min(delay * 2, most)

    def _plan(self) -> dict[str | None, float]:
        """Store queue (None: every queue holding messages for this queue manager) -> seconds
        between pulls."""
        plan = dict(self.pull_plan()) if self.pull_plan is not None else {}
        if self.pull_interval > 0:
            plan.setdefault(None, self.pull_interval)
        return plan

    async def _session(self, conversation: Conversation, sender: ChannelSender) -> None:
        loop = asyncio.get_running_loop()
        next_pull: dict[str | None, float] = {}
        first = True
        while not self._stopping:
            if conversation.closed_by_peer:
                return  # the listener closed an idle connection: connect again, quietly
            self._wake.clear()
            forced, fields, pull_now = self._forced, self._fields, self._pull_now
            self._forced, self._fields, self._pull_now = False, {}, False
            # A new connection is an activation of the queues (seed l.5817): transmit if the
            # rule agrees, as for a put or the periodic look.
            if forced or await run_in_thread(self.qm.transmission_allowed, fields):
                count, refused = await push_pending(conversation, sender, self.qm, self.name, pull=False,
                                                    batch=self.route.batch, attempted=self._attempted)
                self.delivered += count
                if refused is not None:
                    raise ChannelProtocolError(f"message {refused.uid} refused: {refused.message}"
                                               f" (reason {refused.reason} {refused.name})")
            plan = self._plan()
            for store_queue, interval in plan.items():
                if pull_now or first or loop.time() >= next_pull.get(store_queue, 0.0):
                    await self._pull(conversation, sender, store_queue)
                    next_pull[store_queue] = loop.time() + interval
            first = False
            waits = [POLL_SECONDS] + [max(0.0, next_pull[q] - loop.time()) for q in plan if q in next_pull]
            try:
                await asyncio.wait_for(self._wake.wait(), min(waits))
            except TimeoutError:
                pass

    async def _pull(self, conversation: Conversation, sender: ChannelSender, store_queue: str | None) -> None:
        """Ask the server for what it holds for this queue manager (on ``store_queue``, from
        protocol version 2) and receive it; a pulled message that cannot be delivered here
        goes to the dead-letter queue (seed l.622)."""
        version = sender.version or 1
        # The server this link chose to connect to (and verified, over TLS) sends these.
        receiver = ChannelReceiver(self.qm, principal=self.name, dead_letter=True, keep_context=True)
        receiver.hop_checks = False  # seed l.3582: a home-server queue passes pulled messages on unchecked
        receiver.peer, receiver.version = sender.remote_qmgr or self.name, version
        header: dict[str, Any] = {"qmgr": self.qm.name}
        if store_queue is not None and version >= 2:
            header["queue"] = store_queue
        await conversation.send(encode_frame(FrameType.PULL, header))
        while True:
            frames = await conversation.receive()
            done = [f for f in frames if f.type is FrameType.PULL_DONE]
            work = [f for f in frames if f.type is not FrameType.PULL_DONE]
            if work:
                replies = await run_in_thread(handle_frames, receiver, work)
                await conversation.send(replies)
            if done:
                self.pulled += int(done[0].header.get("count", 0))
                problem = done[0].header.get("error") or done[0].header.get("refused")
                message = None if not problem else f"pull from {self.name} ({store_queue or 'all'}): {problem}"
                if message is not None and message != self.last_pull_error:
                    log.warning("channel to %s: %s", self.name, message)
                self.last_pull_error = message
                return


async def converse(listener: ChannelListener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   address: str) -> None:
    """One connection to ``listener`` (relaymq.qmgr.channel_listener, which imports this module
    at its first connection): the HELLO authenticated, then the peer's requests answered."""
    limits = listener.limits
    # Until the HELLO is accepted: a small frame, soon.
    conversation = StreamConversation(reader, writer, limits.frame_timeout, frame_timeout=limits.frame_timeout,
                                      max_frame=HELLO_MAX_FRAME)
    receiver: ChannelReceiver | None = None
    try:
        frames = await conversation.receive()
        receiver = await _welcome(listener, conversation, frames[0], writer, address)
        if receiver is None:
            return
        conversation.timeout, conversation.decoder.max_frame = limits.idle_timeout, limits.max_frame
        frames = frames[1:]
        while True:
            await _answer(listener, conversation, receiver, frames)
            frames = await conversation.receive()
    except (TimeoutError, ChannelProtocolError, QueueError) as exc:  # TimeoutError before OSError
        if receiver is None:  # not (yet) a peer: one rate-limited line, like any refusal
            listener.refusals.refused("channel connection from %s refused: %s", address, exc)
        elif isinstance(exc, TimeoutError):
            log.info("channel connection from %s (%s) closed: %s", address, receiver.peer, exc)
        else:
            log.warning("channel connection from %s (%s) closed: %s", address, receiver.peer, exc)
    except (asyncio.CancelledError, ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        await conversation.close()


async def _welcome(listener: ChannelListener, conversation: StreamConversation, frame: Frame,
                   writer: asyncio.StreamWriter, address: str) -> ChannelReceiver | None:
    """Authenticate the peer by its certificate or its HELLO's credentials and answer the
    HELLO; the receiver when the peer was welcomed, None when it was refused."""
    if frame.type is not FrameType.HELLO:
        raise ChannelProtocolError(f"{frame.type.name} before HELLO")
    authenticator = listener.authenticator
    certificate = certificate_name(writer.get_extra_info("peercert")) if listener.certificates else None
    principal = await authenticate(authenticator, certificate, hello_credentials(frame.header))
    authorize = None
    if principal is not None:
        authorize = authenticator.speaks_for(principal, "certificate CN" if certificate else "channel user")
    receiver = ChannelReceiver(listener.qm, principal=principal, aliases=listener.aliases, authorize=authorize,
                               authority=listener.authority, keep_context=authenticator.keeps_context(principal))
    await conversation.send(receiver.handle(frame))
    if receiver.refused:
        listener.refusals.refused("channel connection from %s refused: %s", address,
                                  "no credentials it could prove" if principal is None
                                  else f"{principal!r} may not speak for {frame.header.get('qmgr')!r}")
    return receiver if receiver.ready else None


async def _guarded(conversation: StreamConversation, work: Any) -> bytes:
    """Run ``work`` (a waiting GET) until it ends or the peer hangs up, whichever is first."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(conversation.watch_hangup())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            watch.result()  # raises: the peer went away (or broke the protocol)
        return task.result()
    finally:
        for pending in (task, watch):
            pending.cancel()
        await asyncio.gather(task, watch, return_exceptions=True)


async def _answer(listener: ChannelListener, conversation: StreamConversation, receiver: ChannelReceiver,
                  frames: list[Frame]) -> None:
    index = 0
    while index < len(frames):
        if frames[index].type is FrameType.PULL:
            if receiver.peer is None:
                raise ChannelProtocolError("PULL before HELLO")
            store_queue = frames[index].header.get("queue")
            if store_queue is not None and not isinstance(store_queue, str):
                raise ChannelProtocolError("PULL queue is not a name")
            attempted = listener.attempted.setdefault(receiver.peer, set())
            await serve_pull(conversation, listener.qm, receiver.peer, version=receiver.version or 1,
                             batch=listener.batch, attempted=attempted, store_queue=store_queue)
            index += 1
            continue
        end = index
        while end < len(frames) and frames[end].type is not FrameType.PULL:
            end += 1
        await answer_frames(receiver, frames[index:end], conversation.send,
                            functools.partial(_guarded, conversation))
        index = end

#: Frames a home-server client sends back during a pull (its answers to the server's PUT and
#: CONFIRM frames); over HTTP they come in the request after the one that carried the PUTs.
PULL_REPLIES = frozenset({FrameType.ACK, FrameType.CONFIRMED, FrameType.ERROR})


class HttpPull:
    """One home-server client's pull over HTTP, kept between its requests (item 24 with the
    HTTP adapter, item 30): the request [HELLO, PULL] is answered with a batch of PUTs, the
    next one [HELLO, ACK...] with CONFIRMs, the next [HELLO, CONFIRMED...] with the next
    batch or PULL_DONE. The server-side ChannelSender lives here between the requests; if it
    is lost (a restart), the client's answers are met with PULL_DONE and its unconfirmed
    copies are replaced at the next pull (Resend), as over TCP."""

    def __init__(self, qm: Any, peer: str, version: int, store_queue: str | None, batch: int,
                 attempted: set[str]) -> None:
        self.qm, self.peer, self.store_queue, self.batch, self.attempted = qm, peer, store_queue, batch, attempted
        self.sender = ChannelSender(qm.name)
        self.sender.version, self.sender.remote_qmgr = version, peer
        self.count = 0
        self.held_rounds = 0
        self.in_batch = False

    async def next_batch(self) -> tuple[bytes, bool]:
        """(frames, finished): the PUTs of the next batch, or PULL_DONE when none is left."""
        try:
            pending = await run_in_thread(self.qm.pending_messages, self.peer, pull=True, limit=self.batch,
                                          store_queue=self.store_queue)
        except QueueError as exc:
            return encode_frame(FrameType.PULL_DONE, {"count": self.count, "error": {
                "reason": exc.reason, "name": exc.name, "message": exc.message}}), True
        if not pending or self.held_rounds >= MAX_HELD_ROUNDS:
            return encode_frame(FrameType.PULL_DONE, {"count": self.count}), True
        items = [Outgoing(p.uid, self.peer, p.queue, p.data(), resend=p.uid in self.attempted,
                          expire_at=p.expire_at) for p in pending]
        self.attempted.update(item.uid for item in items)
        self.in_batch = True
        return self.sender.send_batch(items), False

    async def answer(self, frames: list[Frame]) -> tuple[bytes, bool]:
        """The server's reply to the client's answers: CONFIRMs, then the next batch."""
        answers = BatchAnswers()
        out = b"".join([answers.receive(self.sender, frame) for frame in frames])
        done, refused, held = answers.done, answers.refused, answers.held
        if done:
            await run_in_thread(_transmitted, self.qm, done)
            self.count += len(done)
            self.attempted.difference_update(done)
        if not self.sender.batch_done:
            return out, False
        self.in_batch = False
        if refused is not None:
            return out + encode_frame(FrameType.PULL_DONE, {"count": self.count, "refused": {
                "uid": refused.uid, "reason": refused.reason, "message": refused.message}}), True
        self.held_rounds = self.held_rounds + 1 if held and not done else 0
        batch, finished = await self.next_batch()
        return out + batch, finished


def http_channel_handler(qm: Any, authenticator: ChannelAuthenticator, *, aliases: tuple[str, ...] = (),
                         batch: int = 100, max_frame: int = LISTENER_MAX_FRAME,
                         authority: Authority | None = None) -> Callable[[HttpRequest], Any]:
    """The HTTP adapter (item 30): the request body is HELLO followed by PUT/CONFIRM frames
    (or a request on a synchronous remote queue), the response body the replies (WELCOME
    first). A home-server pull spans requests (:class:`HttpPull`): [HELLO, PULL], then the
    client's answers to what each response carried. Each request authenticates with HTTP
    basic authentication (or the HELLO's credentials) as a channel user (channel_auth); one
    that cannot is answered 401, and the user must speak for the queue manager the HELLO
    names."""
    pulls: dict[str, HttpPull] = {}
    attempted: dict[str, set[str]] = {}

    def bad(text: str) -> HttpResponse:
        return HttpResponse(400, [("content-type", "text/plain")], f"{text}\n".encode())

    async def pull(receiver: ChannelReceiver, welcome: bytes, frames: list[Frame]) -> HttpResponse:
        peer = receiver.peer
        assert peer is not None
        if frames[0].type is FrameType.PULL:
            if len(frames) != 1:
                return bad("PULL must be the only frame after HELLO")
            store_queue = frames[0].header.get("queue")
            if store_queue is not None and not isinstance(store_queue, str):
                return bad("PULL queue is not a name")
            state = HttpPull(qm, peer, receiver.version or 1, store_queue, batch, attempted.setdefault(peer, set()))
            pulls[peer] = state
            body, finished = await state.next_batch()
        else:
            known = pulls.get(peer)
            if known is None or not known.in_batch:  # the pull was lost (a restart): end it
                return HttpResponse(200, [("content-type", "application/octet-stream")],
                                    welcome + encode_frame(FrameType.PULL_DONE, {"count": 0}))
            state = known
            try:
                body, finished = await state.answer(frames)
            except ChannelProtocolError as exc:
                pulls.pop(peer, None)
                return bad(str(exc))
        if finished:
            pulls.pop(peer, None)
        return HttpResponse(200, [("content-type", "application/octet-stream")], welcome + body)

    async def handle(request: HttpRequest) -> HttpResponse:
        try:
            frames = decode_all(request.body, max_frame)
        except ChannelProtocolError as exc:
            return bad(str(exc))
        if not frames or frames[0].type is not FrameType.HELLO:
            return bad("the body must start with a HELLO frame")
        credentials = parse_basic(request.header("authorization")) or hello_credentials(frames[0].header)
        principal = await authenticate(authenticator, None, credentials)
        if principal is None:
            return HttpResponse(401, [("content-type", "text/plain"),
                                      ("www-authenticate", f'Basic realm="{REALM}"')],
                                b"channel peers must authenticate\n")
        receiver = ChannelReceiver(qm, principal=principal, aliases=aliases, authority=authority,
                                   authorize=authenticator.speaks_for(principal, "HTTP user"),
                                   keep_context=authenticator.keeps_context(principal))
        rest = frames[1:]
        if rest and (rest[0].type is FrameType.PULL or rest[0].type in PULL_REPLIES):
            try:
                welcome = receiver.handle(frames[0])
            except ChannelProtocolError as exc:
                return bad(str(exc))
            if not receiver.ready:
                return HttpResponse(200, [("content-type", "application/octet-stream")], welcome)
            if any(f.type is not FrameType.PULL and f.type not in PULL_REPLIES for f in rest):
                return bad("a pull's frames cannot be mixed with others in one request")
            return await pull(receiver, welcome, rest)
        replies: list[bytes] = []

        async def collect(data: bytes) -> None:
            replies.append(data)

        try:
            await answer_frames(receiver, frames, collect)
        except ChannelProtocolError as exc:
            return bad(str(exc))
        return HttpResponse(200, [("content-type", "application/octet-stream")], b"".join(replies))

    return handle
