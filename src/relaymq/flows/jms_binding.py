"""A JMSInput's connection to its provider: a receiver with a credit of one whose messages
go to the bound flow; each is accepted when its run has finished (relaymq.flows.bindings has
the other transports). While the provider cannot be reached the binding tries again every
RETRY_SECONDS and says so in the log, once per outage."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from relaymq.flows.bindings import Binding
from relaymq.flows.errors import FlowException
from relaymq.flows.jms_transport import incoming
from relaymq.flows.nodes.jms_input import JMSInput
from relaymq.flows.runtime import Delivery

log = logging.getLogger("relaymq.flows")
RETRY_SECONDS = 2.0


class JmsBinding(Binding):
    def __init__(self, node: JMSInput) -> None:
        super().__init__(node.binding_key)
        self.node = node
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        self._stopping = asyncio.Event()
        self._runs: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"JMSInput {self.key}")

    async def close(self) -> None:
        self._stopping.set()
        if self._runs:
            await asyncio.gather(*self._runs, return_exceptions=True)
        if self._client is not None:
            await self._client.close()  # unsettled deliveries go back to the provider
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        from relaymq.amqp.client import AmqpClient, Endpoint

        factory, node = self.node.factory, self.node
        endpoint = Endpoint.parse(factory.url, factory.user, factory.password)
        warned = False
        while not self._stopping.is_set():
            try:
                self._client = await AmqpClient.connect(endpoint, factory.client_id)
                await self._client.receive(node.jms_source.address, self._received, credit=1,
                                           selector=node.props["selector"] or None,
                                           durable_name=node.props["durable_subscription_id"] or None)
                if warned:
                    log.info("JMSInput %s: connected to %s again", node.name, factory.url)
                warned = False
                while not self._client.closed and not self._stopping.is_set():
                    await asyncio.wait([asyncio.ensure_future(self._stopping.wait())], timeout=RETRY_SECONDS)
            except Exception as err:  # noqa: BLE001 - unreachable, refused: try again
                if not warned:
                    log.warning("JMSInput %s: %s: %s; trying again every %gs", node.name, factory.url, err,
                                RETRY_SECONDS)
                    warned = True
            if not self._stopping.is_set():
                try:
                    await asyncio.wait_for(self._stopping.wait(), RETRY_SECONDS)
                except TimeoutError:
                    pass

    def _received(self, amqp: Any, delivery: Any) -> None:
        client = self._client
        target = self.target
        if target is None or self._stopping.is_set():
            from proton import Delivery as AmqpDelivery

            client.settle(delivery, AmqpDelivery.RELEASED)
            return
        from relaymq.amqp.addresses import AddressScheme
        from relaymq.amqp.jms_mapping import amqp_to_jms

        jms = amqp_to_jms(amqp, AddressScheme(), int(amqp.delivery_count or 0))
        message = incoming(jms, target.domain)
        message.mq.md.BackoutCount = int(amqp.delivery_count or 0)

        def finished(outcome: str, err: FlowException | None) -> None:
            if not client.closed:
                client.settle(delivery)

        task = asyncio.get_running_loop().create_task(
            target.runtime.submit(Delivery(target.node, message, finished=finished)))
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
