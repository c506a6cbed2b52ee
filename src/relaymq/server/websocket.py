"""MQTT over WebSocket (path ``/mqtt``, subprotocol ``mqtt``) with the sans-I/O wsproto: the
handshake and frames are wsproto's; MQTT bytes go to the same Connection as over TCP."""

from __future__ import annotations

import asyncio
import logging

from wsproto import ConnectionType, WSConnection
from wsproto.events import (AcceptConnection, BytesMessage, CloseConnection, Ping, RejectConnection,
                            Request, TextMessage)

from relaymq.broker.broker import Broker
from relaymq.broker.connection import Connection
from relaymq.server.mqtt_protocol import certificate_user, peer_name

log = logging.getLogger("relaymq.websocket")


class WebSocketLink:
    """What the Connection writes to: frames its bytes as binary WebSocket messages."""

    def __init__(self, protocol: "WebSocketProtocol") -> None:
        self.protocol = protocol

    def write(self, data: bytes) -> None:
        self.protocol.transport.write(self.protocol.ws.send(BytesMessage(data=data)))

    def close(self) -> None:
        self.protocol.close()

    def get_write_buffer_size(self) -> int:
        return self.protocol.transport.get_write_buffer_size()


class WebSocketProtocol(asyncio.Protocol):
    def __init__(self, broker: Broker, listener: str, path: str, high_water: int) -> None:
        self.broker = broker
        self.listener = listener
        self.path = path
        self.high_water = high_water
        self.ws = WSConnection(ConnectionType.SERVER)
        self.transport: asyncio.Transport | None = None
        self.connection: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=self.high_water)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        try:
            self.ws.receive_data(data)
            for event in self.ws.events():
                self.handle(event)
        except Exception as err:  # a broken frame costs this connection only
            log.info("closing websocket %s: %s", peer_name(self.transport), err)
            self.close()

    def handle(self, event) -> None:
        if isinstance(event, Request):
            if event.target.split("?")[0] != self.path:
                self.transport.write(self.ws.send(RejectConnection(status_code=404)))
                self.transport.close()
                return
            sub = "mqtt" if "mqtt" in event.subprotocols else None
            self.transport.write(self.ws.send(AcceptConnection(subprotocol=sub)))
            self.connection = Connection(self.broker, WebSocketLink(self), peer_name(self.transport),
                                         self.listener, certificate_user(self.transport))
        elif isinstance(event, BytesMessage):
            if self.connection is not None:
                self.connection.data_received(bytes(event.data))
        elif isinstance(event, TextMessage):
            self.close()  # MQTT over WebSocket is binary only (MQTT 5 6.0)
        elif isinstance(event, Ping):
            self.transport.write(self.ws.send(event.response()))
        elif isinstance(event, CloseConnection):
            try:
                self.transport.write(self.ws.send(event.response()))
            except Exception:
                pass
            self.transport.close()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connection is not None:
            self.connection.connection_lost()

    def pause_writing(self) -> None:
        if self.connection is not None:
            self.connection.pause_writing()

    def resume_writing(self) -> None:
        if self.connection is not None:
            self.connection.resume_writing()
