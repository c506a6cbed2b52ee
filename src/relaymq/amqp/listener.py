"""The AMQP listener's sockets: where it binds, its connection caps, and stopping it."""

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
from relaymq.net.binding import Servers, create_servers

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
