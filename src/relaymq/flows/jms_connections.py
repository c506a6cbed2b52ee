"""The flows' connections to JMS providers over AMQP 1.0: one per connection factory, opened
on first use on the event loop and opened again after it failed. JMSOutput and JMSReply send
through them at the commit of a run (relaymq.flows.context: a recorded Action)."""

from __future__ import annotations

import asyncio
from typing import Any

from relaymq.flows.jms_objects import ConnectionFactory


class JmsConnections:
    def __init__(self) -> None:
        self._clients: dict[ConnectionFactory, Any] = {}
        self._lock = asyncio.Lock()

    async def client(self, factory: ConnectionFactory) -> Any:
        from relaymq.amqp.client import AmqpClient, Endpoint

        async with self._lock:
            client = self._clients.get(factory)
            if client is None or client.closed:
                endpoint = Endpoint.parse(factory.url, factory.user, factory.password)
                client = await AmqpClient.connect(endpoint, factory.client_id)
                self._clients[factory] = client
            return client

    async def send(self, factory: ConnectionFactory, address: str, message: Any) -> None:
        """At least once: returns when the provider accepted the message."""
        client = await self.client(factory)
        await client.send(address, message)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


#: The process's connections (the broker runs one event loop).
CONNECTIONS = JmsConnections()
