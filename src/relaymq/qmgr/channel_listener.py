"""The queue manager's inbound channel listener ([qmgr] channel_host/channel_port) and the HTTP
adapter's route (docs/channels.md; everyplace.md items 29, 30): the sockets and their bounds.

Why apart from the protocol (relaymq.qmgr.channel_transport and relaymq.qmgr.channel): a broker
opens its channel listener at every start, while most never see a channel connection. The
listener binds and admits connections here, and the protocol is imported by the first
connection or request (issue 16, bench/compare row 9: 1% of a start's instructions, the
framing and peer authentication staying imported for the service's own use).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relaymq.http.admission import Admission, peer_host
from relaymq.http.tcp_server import TcpServer
from relaymq.qmgr.channel_peers import Authority
from relaymq.qmgr.channel_settings import LISTENER_MAX_FRAME
from relaymq.ratelog import RefusalLog

if TYPE_CHECKING:
    from relaymq.http.server import HttpRequest
    from relaymq.qmgr.channel_auth import ChannelAuthenticator

log = logging.getLogger("relaymq.qmgr.channel")

#: The HTTP adapter's route (one POST per exchange; item 30: no GET).
HTTP_CHANNEL_PATH = "/relaymq/channel/v1"


@dataclass(frozen=True)
class ListenerLimits:
    """The bounds of the inbound listener ([qmgr] channel_* keys; issue 15 finding 8).
    Seconds, bytes and connection counts; None or -1: no bound."""

    max_frame: int = LISTENER_MAX_FRAME
    frame_timeout: float | None = 30.0
    idle_timeout: float | None = 300.0
    max_connections: int = 256
    max_connections_per_address: int = 32


class ChannelListener:
    """The inbound TCP (or TLS) listener: each connection gets a ChannelReceiver once its
    HELLO is authenticated (relaymq.qmgr.channel_auth); a PULL is answered by pushing what
    waits here for the caller (``channel_transport.converse``).

    Bounds (issue 15 findings 7, 8): connections over ``max_connections`` or
    ``max_connections_per_address`` are closed at once, with a rate-limited log line; the HELLO
    must come within ``frame_timeout`` and be at most HELLO_MAX_FRAME bytes; afterwards frames
    are at most ``max_frame`` bytes, a started frame must arrive whole within
    ``frame_timeout``, and a connection with no frame for ``idle_timeout`` is closed; a GET's
    wait holds no thread and ends when the peer hangs up. An unauthenticated peer gets an
    ERROR (MQRC_NOT_AUTHORIZED, reply_to HELLO) and the connection is closed."""

    def __init__(self, qm: Any, authenticator: ChannelAuthenticator, *, aliases: tuple[str, ...] = (),
                 batch: int = 100, certificates: bool = False, limits: ListenerLimits | None = None,
                 authority: Authority | None = None) -> None:
        """``certificates``: the listener requires client certificates, so the CN of the
        verified certificate authenticates the peer."""
        self.qm = qm
        self.aliases = aliases
        self.authenticator = authenticator
        self.certificates = certificates
        self.authority = authority
        self.batch = batch
        self.limits = limits or ListenerLimits()
        self.refusals = RefusalLog(log, burst=5)  # refused connections, refused HELLOs: 5 lines / 10 s
        self.admission = Admission(f"channel listener of {qm.name}", self.limits.max_connections,
                                   self.limits.max_connections_per_address, self.refusals)
        self._tcp = TcpServer(self._serve, self.admission)  # over a cap: closed before a byte is read
        #: peer -> the UIDs pushed to it by a pull and not yet confirmed (Resend on the next).
        self.attempted: dict[str, set[str]] = {}

    @property
    def port(self) -> int:
        return self._tcp.port

    def addresses(self) -> list[str]:
        """``host:port`` of every bound socket (log lines)."""
        return self._tcp.addresses()

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> None:
        await self._tcp.start(host, port, ssl_context)

    async def stop(self) -> None:
        await self._tcp.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from relaymq.qmgr.channel_transport import converse  # the protocol, at the first connection

        await converse(self, reader, writer, peer_host(writer.get_extra_info("peername")))


def http_route(qm: Any, authenticator: ChannelAuthenticator, *, aliases: tuple[str, ...] = (),
               max_frame: int = LISTENER_MAX_FRAME, authority: Authority | None = None) -> Callable[[HttpRequest], Any]:
    """The handler of ``POST HTTP_CHANNEL_PATH``: ``channel_transport.http_channel_handler``,
    made (and the protocol imported) at the first request."""
    made: list[Callable[[HttpRequest], Any]] = []

    async def handle(request: HttpRequest) -> Any:
        if not made:
            from relaymq.qmgr.channel_transport import http_channel_handler

            made.append(http_channel_handler(qm, authenticator, aliases=aliases, max_frame=max_frame,
                                             authority=authority))
        return await made[0](request)

    return handle
