"""The AMQP 1.0 listener inside the broker process (relaymq.services.registry SERVICE_MODULES;
docs/amqp.md).

``start`` binds ``[amqp] host:port`` (and ``tls_port`` with a certificate) when ``[amqp]
enabled``; it starts after the queue manager and the pub/sub engine, whose public faces the
links use (``context.services["qmgr"]``, ``["qmgr.aio"]``, the broker). A port in use stops
start-up with one line naming the key. ``stop`` closes the listening sockets, then every
connection (``amqp:connection:forced``), ending their links: get-unconfirmed messages go back
to their queues, non-durable subscriptions end, durable ones stay.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

from relaymq.amqp.addresses import AddressScheme
from relaymq.amqp.connection import AmqpConnection
from relaymq.amqp.settings import AmqpSettings
from relaymq.http.admission import Admission, peer_host
from relaymq.ratelog import RefusalLog
from relaymq.server.binding import Servers, create_servers

log = logging.getLogger("relaymq.amqp")
REFUSALS = RefusalLog(log)


class AmqpListener:
    """The listening sockets and the open connections."""

    def __init__(self, settings: AmqpSettings, services: dict[str, Any]) -> None:
        self.settings = settings
        self.services = services
        self.scheme = AddressScheme(settings.queue_prefix, settings.topic_prefix)
        self.admission = Admission("amqp", settings.max_connections, settings.max_connections_per_address, REFUSALS)
        self.connections: set[AmqpConnection] = set()
        self.servers: list[Servers] = []

    def attach(self, connection: AmqpConnection) -> bool:
        assert connection.transport is not None
        if not self.admission.admit(peer_host(connection.transport.get_extra_info("peername"))):
            return False
        self.connections.add(connection)
        return True

    def detach(self, connection: AmqpConnection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            assert connection.transport is not None
            self.admission.release(peer_host(connection.transport.get_extra_info("peername")))

    async def listen(self, port: int, ssl_context: ssl.SSLContext | None) -> Servers:
        loop = asyncio.get_running_loop()

        async def create(address: str, port: int) -> asyncio.base_events.Server:
            return await loop.create_server(lambda: AmqpConnection(self), address, port, ssl=ssl_context)

        servers = await create_servers(create, self.settings.host, port)
        self.servers.append(servers)
        return servers

    async def stop(self) -> None:
        for servers in self.servers:
            servers.close()
        for connection in list(self.connections):
            connection.shutdown()
        for servers in self.servers:
            servers.abort_clients()
        self.servers.clear()


class AmqpService:
    def __init__(self, listener: AmqpListener | None) -> None:
        self.listener = listener

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.listener.servers] if self.listener is not None else []

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()


async def start(context: Any) -> AmqpService:
    from relaymq.services.contract import ServiceError

    settings: AmqpSettings = context.config.section("amqp")
    if not settings.enabled:
        return AmqpService(None)
    services = dict(context.services)
    services["broker"] = context.broker
    listener = AmqpListener(settings, services)
    ssl_context = None
    if settings.tls_cert:
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ssl_context.load_cert_chain(settings.tls_cert, settings.tls_key)
        except (OSError, ssl.SSLError) as error:
            raise ServiceError(f"config error: amqp.tls_cert: cannot load the certificate: {error}") from None
    for key, port, tls in (("port", settings.port, None), ("tls_port", settings.tls_port, ssl_context)):
        if key == "tls_port" and tls is None:
            continue
        try:
            servers = await listener.listen(port, tls)
        except OSError as error:
            await listener.stop()
            raise ServiceError(f"config error: amqp.{key}: cannot listen on {settings.host}:{port}: "
                               f"{error.strerror or error}") from None
        log.info("AMQP 1.0%s listening on %s", " (TLS)" if tls else "", ", ".join(servers.addresses()))
    context.services["amqp"] = listener
    return AmqpService(listener)
