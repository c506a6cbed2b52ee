"""asyncio.Protocol for MQTT over TCP/TLS: the hot path moves bytes and nothing else
(design guide: asyncio.Protocol, data_received, transport.write). The Connection writes to a
TransportLink (relaymq.server.link), which hands the transport one write per loop turn: the
protocol is that link itself, one object less on every connection (80 bytes: issue 8,
scenario 6).

Compiled with the link and the connection (``relaymq.native_build``; issue 16): every read
arrives here and every write leaves through the link. A compiled class has one base, so
``MQTTProtocol`` is not an ``asyncio.Protocol`` subclass: asyncio and uvloop call a protocol's
methods without checking its class (they check only for ``BufferedProtocol``), and the one
method it would inherit, ``eof_received``, is written out."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, cast

from relaymq.broker.connection import Connection
from relaymq.server.link import TransportLink

if TYPE_CHECKING:
    from relaymq.server.listeners import Listener

log = logging.getLogger("relaymq.server")


def peer_name(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


def stream_transport(transport: asyncio.BaseTransport) -> asyncio.Transport:
    """``connection_made``'s transport as what it is: asyncio types the argument as a
    BaseTransport, a stream server hands a Transport (write, pause_reading, abort)."""
    return cast(asyncio.Transport, transport)


def certificate_user(transport: asyncio.BaseTransport) -> str | None:
    """The common name of a verified client certificate, used as the user name."""
    cert = transport.get_extra_info("peercert")
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


class MQTTProtocol(TransportLink):
    """One per connection, and the link its Connection writes to (the TransportLink's part is
    set up by ``connection_made``, the first thing asyncio calls)."""

    __slots__ = ("listener", "connection")

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.connection: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = stream_transport(transport)
        TransportLink.__init__(self, stream, asyncio.get_running_loop())
        if not self.listener.attach(self, stream):
            return  # refused by the listener's caps: no Connection, nothing read
        stream.set_write_buffer_limits(high=self.listener.high_water)
        broker = self.listener.broker
        assert broker is not None  # a listener accepts only once attach_broker gave it the broker
        self.connection = Connection(broker, self, peer_name(stream),
                                     self.listener.config.name, certificate_user(stream))

    def data_received(self, data: bytes) -> None:
        conn = self.connection
        if conn is None:
            return  # refused (connection_made): bytes that were already on their way
        try:
            conn.data_received(data)
        except Exception:  # a bug must cost one connection, never the broker
            log.exception("internal error on connection %s; closing it", conn.peer)
            conn.close(publish_will=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.detach(self)
        if self.connection is not None:
            try:
                self.connection.connection_lost()
            except Exception:
                log.exception("internal error while closing %s", self.connection.peer)

    def eof_received(self) -> bool | None:
        """The peer closed its side: None lets the transport close (``asyncio.Protocol``'s own)."""
        return None

    def pause_writing(self) -> None:
        if self.connection is not None:
            self.connection.pause_writing()

    def resume_writing(self) -> None:
        conn = self.connection
        if conn is None:
            return
        try:
            conn.resume_writing()
        except Exception:
            log.exception("internal error on connection %s; closing it", conn.peer)
            conn.close(publish_will=False)

    # -- listener stop and broker shutdown (the listener knows only protocols it attached,
    # whose transport connection_made set); ``abort`` is the link's: drop the socket now,
    # whatever is still unsent (a client that does not read)
    def shutdown(self) -> None:
        """Close gracefully: MQTT 5 clients get DISCONNECT 0x8B; no will is published."""
        if self.connection is not None and not self.connection.closed:
            self.connection.shutdown()
        else:
            self.transport.close()
