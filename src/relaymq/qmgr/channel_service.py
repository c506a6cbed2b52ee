"""The channels of one queue manager: the inbound listener ([qmgr] channel_port, default 8081,
on 127.0.0.1 and ::1 unless channel_host says otherwise; everyplace.md item 29), the HTTP adapter
route, and one outbound link per connection definition (item 23), woken when a message for its
queue manager is committed. Both entrances authenticate their peers with one
:class:`ChannelAuthenticator` (issue 15 finding 1) and show each request to ``authority``.

In the broker process the queue manager service (relaymq.qmgr.service) calls :func:`start`
with its context and service once the queue manager is open, and stops the returned
ChannelService before the queue manager closes. :class:`ChannelService` is also usable on its own
around any QueueManager (the embedded device of issue 5, the tests, bench/bench_chain.py).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import ssl
import types
from typing import TYPE_CHECKING, Any

from relaymq.message.message import Message
from relaymq.net.binding import LOOPBACK_HOST, is_loopback
from relaymq.qmgr.adapters import open_route
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_frames import Frame, FrameType, encode_frame, result_messages
from relaymq.qmgr.channel_listener import HTTP_CHANNEL_PATH, ChannelListener, ListenerLimits, http_route
from relaymq.qmgr.channel_peers import Authority, ChannelIdentities
from relaymq.qmgr.channel_settings import ConnectionSettings, route_of
from relaymq.qmgr.definitions import HOME_SERVER
from relaymq.qmgr.errors import AlreadyDelivered, NotConnected, QueueError
from relaymq.qmgr.states import Envelope
from relaymq.services.contract import ServiceError

if TYPE_CHECKING:  # the protocol's client side: imported by the first link or remote call
    from relaymq.qmgr.channel_transport import ChannelLink, SyncClient

log = logging.getLogger("relaymq.qmgr.channel")

#: Seconds between pulls of a home-server queue whose poll_interval is 0 (only on trigger in
#: the seed; a pull needs a timer here because the server cannot call the client).
DEFAULT_PULL_SECONDS = 1.0


class ChannelService:
    """Listener + links of one queue manager."""

    def __init__(self, qm: Any, connections: tuple[ConnectionSettings, ...] = (), *,
                 listen_host: str | None = LOOPBACK_HOST, listen_port: int = 8081,
                 ssl_context: ssl.SSLContext | None = None,
                 identities: ChannelIdentities | None = None,
                 authenticator: ChannelAuthenticator | None = None,
                 limits: ListenerLimits | None = None,
                 authority: Authority | None = None) -> None:
        """``authenticator``: who may use the listener and the HTTP route (default: only
        peers with a client certificate, when ``ssl_context`` requires one; nobody else);
        ``identities``: which queue managers an authenticated peer may speak for besides the
        one of its own name (used when no ``authenticator`` is given); ``limits``: the
        listener's bounds; ``authority``: asked with a ChannelRequest (whose ``principal`` is
        the authenticated peer) before each put, get or browse a peer asks for."""
        self.qm = qm
        self.connections = connections
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.ssl_context = ssl_context
        self.authenticator = authenticator or ChannelAuthenticator(identities=identities)
        self.limits = limits or ListenerLimits()
        self.authority = authority
        self.aliases = tuple(c.name for c in connections if c.is_alias)
        self.listener: ChannelListener | None = None
        self.links: dict[str, ChannelLink] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._http: Any = None
        self._client: SyncClient | None = None  # made by the first remote call (_remote_call)
        self._started = False
        self._req_numbers = itertools.count(1)

    @property
    def port(self) -> int:
        return self.listener.port if self.listener is not None else 0

    def _pull_plan(self, name: str) -> Any:
        """The home-server schedule of the link to ``name``: each home-server queue owned by
        ``name`` pulls from the store-and-forward queue of its own name on that server (seed
        l.3369-3371) every ``poll_interval`` ms (0: every DEFAULT_PULL_SECONDS, and at once
        on trigger_transmission()). Read at each round, so queues defined at run time count."""

        def plan() -> dict[str | None, float]:
            return {d.name: (d.poll_interval / 1000.0 if d.poll_interval > 0 else DEFAULT_PULL_SECONDS)
                    for d in self.qm.definitions() if d.kind == HOME_SERVER and d.owner == name}

        return plan

    async def start(self, http_server: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._started = True
        for alias in self.aliases:
            self.qm.add_qmgr_alias(alias, self.qm.name)
        if self.listen_host is not None:
            certificates = self.ssl_context is not None and self.ssl_context.verify_mode == ssl.CERT_REQUIRED
            self.listener = ChannelListener(self.qm, self.authenticator, aliases=self.aliases,
                                            certificates=certificates, limits=self.limits, authority=self.authority)
            await self.listener.start(self.listen_host, self.listen_port, self.ssl_context)
        if http_server is not None:
            http_server.add_route("POST", HTTP_CHANNEL_PATH, http_route(
                self.qm, self.authenticator, aliases=self.aliases, max_frame=self.limits.max_frame,
                authority=self.authority))
            self._http = http_server
        if self.connections:
            from relaymq.qmgr.channel_transport import ChannelLink
        for connection in self.connections:
            route = route_of(connection.name, self.connections)
            if route is None:
                continue
            link = ChannelLink(self.qm, connection.name, route, pull_interval=connection.pull_interval_ms / 1000.0,
                               pull_plan=self._pull_plan(connection.name), open_fn=open_route)
            self.links[connection.name] = link
        self.qm.add_transmission_listener(self._on_transmission)
        if self.qm.remote is None:
            self.qm.remote = self
        for link in self.links.values():
            link.start()
        admin = getattr(self.qm, "admin", None)
        if admin is not None and admin.administrators is None and (self.listener is not None or self._http):
            log.warning("queue manager %s obeys admin messages from anybody (no administrators were given),"
                        " and its channels accept messages from other queue managers: pass administrators=...",
                        self.qm.name)

    # -- synchronous remote queues and discovery (items 8, 10, 20-22): QueueManager.remote --------
    def reachable(self, qmgr: str) -> bool:
        """Is there a connection definition leading to ``qmgr`` (item 22 step 5)?"""
        return qmgr in self.links

    def _call(self, qmgr: str, frame: bytes, extra_timeout: float = 0.0) -> Frame:
        """Send one request frame towards ``qmgr`` and wait for its answer, from a worker
        thread: both ends must be up (item 21); a failure is raised, the application owns
        the retry. An ERROR answer is raised as the peer's QueueError."""
        loop = self._loop
        if loop is None or loop.is_closed() or not self._started:
            raise NotConnected(f"channels of {self.qm.name} are not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise NotConnected("a synchronous remote operation cannot run on the event loop thread;"
                               " use the asyncio API (AsyncQueueManager), which runs it in a worker thread")
        link = self.links.get(qmgr)
        if link is None:
            raise NotConnected(f"no connection definition for queue manager {qmgr!r}")
        future = asyncio.run_coroutine_threadsafe(self._remote_call(link.route, frame, extra_timeout), loop)
        answer = future.result()
        if answer.type is FrameType.ERROR:
            from relaymq.qmgr.channel_transport import raise_error

            raise_error(answer)
        return answer

    async def _remote_call(self, route: ConnectionSettings, frame: bytes, extra_timeout: float) -> Frame:
        """On the event loop: the request through the client of every remote call, made (and
        the channel protocol imported) by the first."""
        if not self._started:
            raise NotConnected("the channels are stopping")
        if self._client is None:
            from relaymq.qmgr.channel_transport import SyncClient

            self._client = SyncClient(self.qm.name, open_fn=open_route)  # each route's adapter
        return await self._client.call(route, frame, extra_timeout=extra_timeout)

    def _request(self, kind: FrameType, qmgr: str, queue: str, extra_timeout: float = 0.0,
                 **header: Any) -> Frame:
        fields = {k: v for k, v in header.items() if v is not None}
        req = next(self._req_numbers)
        answer = self._call(qmgr, encode_frame(kind, {"req": req, "qmgr": qmgr, "queue": queue, **fields}),
                            extra_timeout)
        if answer.type is not FrameType.RESULT:
            raise NotConnected(f"queue manager {qmgr} answered {answer.type.name} to {kind.name}")
        return answer

    def put(self, qmgr: str, queue: str, message: Any, *, uid: str | None = None, confirm: bool = True,
            confirm_id: int = 1, resend: bool = False, expire_at: int | None = None,
            transmission: bool = False) -> bytes:
        """A put to ``queue`` on ``qmgr`` at once (QueueManager.put calls this for a
        synchronous route). ``confirm`` False leaves it unconfirmed there (an assured put,
        confirmed by :meth:`confirm_put`); raises AlreadyDelivered when the destination has
        confirmed ``uid`` before. The PUT says ``sync`` unless it relays an asynchronous
        ``transmission``: the destination reports a synchronous put's refusal instead of
        dead-lettering the message. Returns the MsgId."""
        md = message.mq.md
        if not any(md.MsgId):
            md.MsgId = os.urandom(24)
        uid = uid or f"{self.qm.name}:sync:{os.urandom(16).hex()}"  # as random as uuid4, without importing uuid
        header: dict[str, Any] = {"uid": uid, "qmgr": qmgr, "queue": queue, "resend": resend,
                                  "confirm_id": confirm_id}
        if not transmission:
            header["sync"] = True
        if expire_at is not None:
            header["expire_at"] = expire_at
        answer = self._call(qmgr, encode_frame(FrameType.PUT, header, self._sealed(qmgr, queue, uid, message)))
        if answer.type is FrameType.CONFIRMED:
            raise AlreadyDelivered(f"message {uid} was already put and confirmed on {queue!r} at {qmgr!r}")
        if answer.type is not FrameType.ACK:
            raise NotConnected(f"queue manager {qmgr} answered {answer.type.name} to PUT")
        if confirm:
            self.confirm_put(qmgr, queue, uid)
        return bytes(md.MsgId)

    def _sealed(self, qmgr: str, queue: str, uid: str, message: Any) -> bytes:
        """A synchronous put's body: sealed with the cryptor and compressor of the remote
        definition it goes through (queue security, item 26), else the message as it is."""
        data: bytes = message.to_bytes()
        security = getattr(self.qm, "security", None)
        if security is None:
            return data
        try:
            definition = self.qm.queue(queue, qmgr=qmgr)
        except QueueError:  # discovery: no definition here, nothing to seal with
            return data
        sealed = security.seal(definition, uid, data)
        return data if sealed is None else sealed

    def confirm_put(self, qmgr: str, queue: str, uid: str) -> bool:
        answer = self._call(qmgr, encode_frame(FrameType.CONFIRM, {"uid": uid, "qmgr": qmgr, "queue": queue}))
        if answer.type is not FrameType.CONFIRMED:
            raise NotConnected(f"queue manager {qmgr} answered {answer.type.name} to CONFIRM")
        return not answer.header.get("already", False)

    @staticmethod
    def _selection(msg_id: bytes | None = None, correl_id: bytes | None = None, selector: str | None = None,
                   fields: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"msg_id": msg_id.hex() if msg_id is not None else None,
                "correl_id": correl_id.hex() if correl_id is not None else None,
                "selector": selector, "fields": fields or None}

    def _envelopes(self, answer: Frame) -> list[Envelope]:
        out = []
        for facts, data in result_messages(answer):
            message = Message.from_bytes(data)
            md = message.mq.md
            out.append(Envelope(str(facts.get("uid", "")), str(facts.get("queue", "")), int(facts.get("priority", 0)),
                                bytes(md.MsgId), bytes(md.CorrelId), message, int(facts.get("lock_id", 0))))
        return out

    def get(self, qmgr: str, queue: str, *, wait: float = 0.0, confirm_id: int = 0, uid: str | None = None,
            lock_id: int = 0, **selection: Any) -> Envelope | None:
        """A get on a synchronous remote queue (item 10); ``confirm_id`` > 0 leaves the
        message get-unconfirmed there until :meth:`confirm_get` (two-phase get, item 20)."""
        wait_ms = max(0, int(wait * 1000))
        answer = self._request(FrameType.GET, qmgr, queue, extra_timeout=wait_ms / 1000.0, wait_ms=wait_ms or None,
                               confirm_id=confirm_id or None, uid=uid, lock_id=lock_id or None,
                               **self._selection(**selection))
        found = self._envelopes(answer)
        return found[0] if found else None

    def browse(self, qmgr: str, queue: str, *, limit: int | None = None, lock_confirm_id: int = 0,
               **selection: Any) -> list[Envelope]:
        answer = self._request(FrameType.BROWSE, qmgr, queue, limit=limit, lock_confirm_id=lock_confirm_id or None,
                               **self._selection(**selection))
        return self._envelopes(answer)

    def delete(self, qmgr: str, queue: str, uid: str, lock_id: int) -> None:
        self._request(FrameType.DELETE, qmgr, queue, uid=uid, lock_id=lock_id or None)

    def unlock(self, qmgr: str, queue: str, uid: str, lock_id: int) -> None:
        self._request(FrameType.UNLOCK, qmgr, queue, uid=uid, lock_id=lock_id)

    def confirm_get(self, qmgr: str, queue: str, uid: str) -> bool:
        return bool(self._request(FrameType.CONFIRM_GET, qmgr, queue, uid=uid).header.get("value"))

    def undo(self, qmgr: str, queue: str, confirm_id: int) -> int:
        return int(self._request(FrameType.UNDO, qmgr, queue, confirm_id=confirm_id).header.get("value", 0))

    def _on_transmission(self, remote_qmgr: str | None, fields: dict[str, Any], forced: bool) -> None:
        """Called in the putting thread after a message for ``remote_qmgr`` is committed (the
        link asks the triggerTransmission rule with ``fields``), or with ``None`` and
        ``forced`` when trigger_transmission() was agreed: every link transmits and pulls."""
        if self._loop is None or self._loop.is_closed():
            return
        links = list(self.links.values()) if remote_qmgr is None else [self.links.get(remote_qmgr)]
        for link in links:
            if link is not None:
                self._loop.call_soon_threadsafe(functools.partial(link.wake, fields, forced=forced))

    async def stop(self) -> None:
        self._started = False
        self.qm.remove_transmission_listener(self._on_transmission)
        if self.qm.remote is self:
            self.qm.remote = None
        await asyncio.gather(*(link.stop() for link in self.links.values()), return_exceptions=True)
        if self._client is not None:
            await self._client.close()
        if self._http is not None:
            try:
                self._http.remove_route("POST", HTTP_CHANNEL_PATH)
            except KeyError:
                pass
        if self.listener is not None:
            await self.listener.stop()


def _server_ssl(settings: Any) -> ssl.SSLContext | None:
    """The listener's TLS context from [qmgr] channel_tls_cert/key/ca (the same rules as an
    MQTT listener's, relaymq.net.tls): with a CA, a client certificate is required."""
    from relaymq.net.tls import server_context

    return server_context(types.SimpleNamespace(
        tls_cert=getattr(settings, "channel_tls_cert", ""), tls_key=getattr(settings, "channel_tls_key", ""),
        tls_ca=getattr(settings, "channel_tls_ca", ""), require_certificate=True))


async def start(context: Any, service: Any) -> ChannelService:
    """Start the channels of the broker's queue manager (called by relaymq.qmgr.service).

    Reads ``[qmgr] channel_host``/``channel_port``, ``connection`` (ConnectionSettings from
    channel_settings.build_connections), ``channel_tls_cert``/``channel_tls_key``/
    ``channel_tls_ca`` (TLS on the listener; a CA requires client certificates, whose CN must
    then speak for the HELLO's queue manager), ``channel_identities``, the authentication
    keys (``channel_allow_anonymous``, ``channel_password_file`` and ``[access]
    password_file``) and the listener's bounds (``channel_max_frame`` ...).
    """
    settings = service.settings
    try:
        ssl_context = _server_ssl(settings)
    except (OSError, ssl.SSLError) as exc:
        raise ServiceError(f"queue manager {service.qm.name}: channel TLS certificate: {exc}") from None
    authenticator = ChannelAuthenticator(
        peers=_password_file(settings.channel_password_file), users=_password_file(context.config.access.password_file),
        allow_anonymous=settings.channel_allow_anonymous, trusted_context=settings.channel_trusted_context,
        identities=ChannelIdentities(getattr(settings, "channel_identities", ())))
    channels = ChannelService(service.qm, tuple(getattr(settings, "connection", ()) or ()),
                              listen_host=settings.channel_host, listen_port=settings.channel_port,
                              ssl_context=ssl_context, authenticator=authenticator, limits=limits_of(settings),
                              authority=authenticator.authority(service.qm))
    try:
        await channels.start(context.services.get("http"))
    except OSError as exc:
        await channels.stop()
        raise ServiceError(f"queue manager {service.qm.name}: channel listener on "
                           f"{settings.channel_host}:{settings.channel_port}: {exc.strerror or exc}") from None
    context.services["channels"] = channels
    host = settings.channel_host
    if is_loopback(host):
        log.info("channel listener of %s on %s (this host only: [qmgr] channel_host opens it to the network)",
                 service.qm.name, ", ".join(channels.listener.addresses() if channels.listener else [host]))
        return channels
    log.info("channel listener of %s on %s:%d", service.qm.name, host, channels.port)
    if settings.channel_allow_anonymous:
        log.warning("the channel listener on %s:%d accepts peers that do not authenticate"
                    " ([qmgr] channel_allow_anonymous = true)", host, channels.port)
    if ssl_context is None:
        log.warning("the channel listener on %s:%d has no TLS: peers' passwords and messages cross the network"
                    " in clear text ([qmgr] channel_tls_cert/channel_tls_key)", host, channels.port)
    return channels


def limits_of(settings: Any) -> ListenerLimits:
    """The listener's bounds from [qmgr] channel_max_frame, channel_frame_timeout_ms,
    channel_idle_timeout, channel_max_connections and channel_max_connections_per_address."""
    return ListenerLimits(max_frame=settings.channel_max_frame,
                          frame_timeout=settings.channel_frame_timeout_ms / 1000.0,
                          idle_timeout=settings.channel_idle_timeout or None,
                          max_connections=settings.channel_max_connections,
                          max_connections_per_address=settings.channel_max_connections_per_address)


def _password_file(path: str) -> Any:
    """The PasswordFile at ``path`` (checked when the configuration was loaded), None for ""."""
    if not path:
        return None
    from relaymq.auth.passwords import PasswordFile

    return PasswordFile.load(path)
