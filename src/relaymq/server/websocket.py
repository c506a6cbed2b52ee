"""MQTT over WebSocket (path ``/mqtt``, subprotocol ``mqtt``) with the sans-I/O wsproto: the
handshake and frames are wsproto's; MQTT bytes go to the same Connection as over TCP.

The Connection is made when the socket is accepted, before the handshake, so the socket counts
towards ``max_connections`` and a handshake that never completes is closed after
``connect_timeout`` like a CONNECT that never comes."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from wsproto import ConnectionType, WSConnection
from wsproto.events import (AcceptConnection, BytesMessage, CloseConnection, Event, Ping, RejectConnection,
                            Request, TextMessage)

from relaymq.broker.connection import Connection
from relaymq.server.link import TransportLink
from relaymq.server.mqtt_protocol import certificate_user, peer_name, stream_transport

if TYPE_CHECKING:
    from relaymq.server.listeners import Listener

log = logging.getLogger("relaymq.websocket")


class WebSocketProtocol(asyncio.Protocol):
    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.broker = listener.broker
        self.path = listener.config.path
        self.ws = WSConnection(ConnectionType.SERVER)
        self.transport: asyncio.Transport | None = None
        self.connection: Connection | None = None
        self.accepted = False  # the WebSocket handshake completed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = stream = stream_transport(transport)
        if not self.listener.attach(self, stream):
            return  # refused by the listener's caps: no Connection, nothing read
        stream.set_write_buffer_limits(high=self.listener.high_water)
        # one binary message per loop turn: "a single WebSocket data frame can contain multiple
        # or partial MQTT Control Packets" (MQTT 5 6.0)
        link = TransportLink(stream, asyncio.get_running_loop(),
                             frame=lambda data: self.ws.send(BytesMessage(data=data)))
        broker = self.broker
        assert broker is not None  # a listener accepts only once attach_broker gave it the broker
        self.connection = Connection(broker, link, peer_name(stream),
                                     self.listener.config.name, certificate_user(stream))

    def data_received(self, data: bytes) -> None:
        conn, transport = self.connection, self.transport
        if conn is None or transport is None:
            return  # refused (connection_made)
        try:
            self.ws.receive_data(data)
            for event in self.ws.events():
                self.handle(event, conn, transport)
        except Exception as err:  # a broken frame costs this connection only
            log.info("closing websocket %s: %s", peer_name(transport), err)
            self.close()

    def handle(self, event: Event, conn: Connection, transport: asyncio.Transport) -> None:
        if isinstance(event, Request):
            if event.target.split("?")[0] != self.path:
                transport.write(self.ws.send(RejectConnection(status_code=404)))
                transport.close()
                return
            sub = "mqtt" if "mqtt" in event.subprotocols else None
            transport.write(self.ws.send(AcceptConnection(subprotocol=sub)))
            self.accepted = True
        elif isinstance(event, BytesMessage):
            if self.accepted and not conn.closed:
                conn.data_received(bytes(event.data))
        elif isinstance(event, TextMessage):
            self.close()  # MQTT over WebSocket is binary only (MQTT 5 6.0)
        elif isinstance(event, Ping):
            transport.write(self.ws.send(event.response()))
        elif isinstance(event, CloseConnection):
            try:
                transport.write(self.ws.send(event.response()))
            except Exception:
                pass
            transport.close()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def shutdown(self) -> None:
        """Close gracefully (listener stop, broker shutdown): no will is published."""
        if self.connection is not None and self.accepted and not self.connection.closed:
            self.connection.shutdown()
        else:
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.detach(self)
        if self.connection is not None:
            self.connection.connection_lost()

    def pause_writing(self) -> None:
        if self.connection is not None:
            self.connection.pause_writing()

    def resume_writing(self) -> None:
        if self.connection is not None:
            self.connection.resume_writing()
