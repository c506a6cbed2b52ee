"""asyncio.Protocol for MQTT over TCP/TLS: the hot path moves bytes and nothing else
(design guide: asyncio.Protocol, data_received, transport.write)."""

from __future__ import annotations

import asyncio
import logging

from relaymq.broker.broker import Broker
from relaymq.broker.connection import Connection

log = logging.getLogger("relaymq.server")


def peer_name(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


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


class MQTTProtocol(asyncio.Protocol):
    def __init__(self, broker: Broker, listener: str, high_water: int) -> None:
        self.broker = broker
        self.listener = listener
        self.high_water = high_water
        self.connection: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.set_write_buffer_limits(high=self.high_water)
        self.connection = Connection(self.broker, transport, peer_name(transport), self.listener,
                                     certificate_user(transport))

    def data_received(self, data: bytes) -> None:
        conn = self.connection
        try:
            conn.data_received(data)
        except Exception:  # a bug must cost one connection, never the broker
            log.exception("internal error on connection %s; closing it", conn.peer)
            conn.close(publish_will=False)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connection is not None:
            try:
                self.connection.connection_lost()
            except Exception:
                log.exception("internal error while closing %s", self.connection.peer)

    def pause_writing(self) -> None:
        self.connection.pause_writing()

    def resume_writing(self) -> None:
        self.connection.resume_writing()
