"""The channels of one queue manager: the inbound listener ([qmgr] channel_port, default 8081;
everyplace.md item 29), the HTTP adapter route, and one outbound link per connection
definition (item 23), woken when a message for its queue manager is committed.

In the broker process the queue manager service (relaymq.qmgr.service) calls :func:`start`
with its context and service once the queue manager is open, and stops the returned
ChannelService before the queue manager closes. :class:`ChannelService` is also usable on its own
around any QueueManager (the embedded device of issue 5, the tests, bench/bench_chain.py).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

from relaymq.qmgr.channel_settings import ConnectionSettings, route_of
from relaymq.qmgr.channel_transport import (
    HTTP_CHANNEL_PATH,
    ChannelLink,
    ChannelListener,
    http_channel_handler,
    sync_put,
)
from relaymq.qmgr.definitions import HOME_SERVER

log = logging.getLogger("relaymq.qmgr.channel")

#: Seconds between pulls of a home-server queue whose poll_interval is 0 (only on trigger in
#: the seed; a pull needs a timer here because the server cannot call the client).
DEFAULT_PULL_SECONDS = 1.0


class ChannelService:
    """Listener + links of one queue manager."""

    def __init__(self, qm: Any, connections: tuple[ConnectionSettings, ...] = (), *,
                 listen_host: str | None = "0.0.0.0", listen_port: int = 8081,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.qm = qm
        self.connections = connections
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.ssl_context = ssl_context
        self.aliases = tuple(c.name for c in connections if c.is_alias)
        self.listener: ChannelListener | None = None
        self.links: dict[str, ChannelLink] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._http: Any = None

    @property
    def port(self) -> int:
        return self.listener.port if self.listener is not None else 0

    def _pull_interval(self, name: str, connection: ConnectionSettings) -> float:
        if connection.pull_interval_ms:
            return connection.pull_interval_ms / 1000.0
        intervals = [d.poll_interval for d in self.qm.definitions() if d.kind == HOME_SERVER and d.owner == name]
        if not intervals:
            return 0.0
        positive = [i for i in intervals if i > 0]
        return min(positive) / 1000.0 if positive else DEFAULT_PULL_SECONDS

    async def start(self, http_server: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        for alias in self.aliases:
            self.qm.add_qmgr_alias(alias, self.qm.name)
        if self.listen_host is not None:
            self.listener = ChannelListener(self.qm, aliases=self.aliases)
            await self.listener.start(self.listen_host, self.listen_port, self.ssl_context)
        if http_server is not None:
            http_server.add_route("POST", HTTP_CHANNEL_PATH, http_channel_handler(self.qm, aliases=self.aliases))
            self._http = http_server
        for connection in self.connections:
            route = route_of(connection.name, self.connections)
            if route is None:
                continue
            link = ChannelLink(self.qm, connection.name, route,
                               pull_interval=self._pull_interval(connection.name, connection))
            self.links[connection.name] = link
        self.qm.add_transmission_listener(self._on_transmission)
        if self.qm.remote is None:
            self.qm.remote = self
        for link in self.links.values():
            link.start()

    # -- synchronous remote queues and discovery (items 8, 21, 22): QueueManager.remote ----------
    def reachable(self, qmgr: str) -> bool:
        """Is there a connection definition leading to ``qmgr`` (item 22 step 5)?"""
        return qmgr in self.links

    def put(self, qmgr: str, queue: str, message: Any) -> bytes:
        """A synchronous put to ``queue`` on ``qmgr``, from a worker thread (QueueManager.put
        calls this for a synchronous remote queue): both ends must be up (item 21); a failure
        is raised, the application owns the retry. Returns the MsgId."""
        from relaymq.qmgr.errors import NotConnected

        loop = self._loop
        if loop is None or loop.is_closed():
            raise NotConnected(f"channels of {self.qm.name} are not running")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise NotConnected("a synchronous remote put cannot run on the event loop thread;"
                               " use the asyncio API (AsyncQueueManager), which runs it in a worker thread")
        link = self.links.get(qmgr)
        if link is None:
            raise NotConnected(f"no connection definition for queue manager {qmgr!r}")
        future = asyncio.run_coroutine_threadsafe(sync_put(self.qm.name, link.route, qmgr, queue, message), loop)
        return future.result()

    def _on_transmission(self, remote_qmgr: str) -> None:
        """Called in the putting thread after a message for ``remote_qmgr`` is committed."""
        link = self.links.get(remote_qmgr)
        if link is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(link.wake)

    async def stop(self) -> None:
        self.qm.remove_transmission_listener(self._on_transmission)
        if self.qm.remote is self:
            self.qm.remote = None
        await asyncio.gather(*(link.stop() for link in self.links.values()), return_exceptions=True)
        if self._http is not None:
            try:
                self._http.remove_route("POST", HTTP_CHANNEL_PATH)
            except KeyError:
                pass
        if self.listener is not None:
            await self.listener.stop()


def _server_ssl(settings: Any) -> ssl.SSLContext | None:
    cert = getattr(settings, "channel_tls_cert", "")
    if not cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, getattr(settings, "channel_tls_key", "") or None)
    return context


async def start(context: Any, service: Any) -> ChannelService:
    """Start the channels of the broker's queue manager (called by relaymq.qmgr.service).

    Reads ``[qmgr] channel_host``/``channel_port`` and, when the qmgr settings carry them,
    ``connection`` (ConnectionSettings from channel_settings.build_connections) and
    ``channel_tls_cert``/``channel_tls_key``.
    """
    from relaymq.server.app import ServiceError

    settings = service.settings
    channels = ChannelService(service.qm, tuple(getattr(settings, "connection", ()) or ()),
                              listen_host=settings.channel_host, listen_port=settings.channel_port,
                              ssl_context=_server_ssl(settings))
    try:
        await channels.start(context.services.get("http"))
    except OSError as exc:
        await channels.stop()
        raise ServiceError(f"queue manager {service.qm.name}: channel listener on "
                           f"{settings.channel_host}:{settings.channel_port}: {exc.strerror or exc}") from None
    context.services["channels"] = channels
    log.info("channel listener of %s on %s:%d", service.qm.name, settings.channel_host, channels.port)
    return channels
