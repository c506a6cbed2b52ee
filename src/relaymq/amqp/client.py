"""An AMQP 1.0 client on the event loop: python-qpid-proton's engine driven sans-I/O over an
asyncio connection, as the listener drives it (relaymq.amqp.connection). The JMS flow nodes use
it to reach any AMQP 1.0 provider (RabbitMQ, ActiveMQ Artemis, Qpid, relaymq itself).

SASL is proton's own client side (PLAIN with a user and password, else ANONYMOUS), which needs
no Cyrus. ``send`` returns once the provider settled the transfer as accepted (raises
:class:`AmqpRefused` with the provider's condition otherwise); a receiver hands each message
with its delivery to a callback and the caller settles it (accept, release, reject) when it
has dealt with it, so an input is at-least-once. URLs: ``amqp://[user:password@]host[:port]``
and ``amqps://...`` (TLS, the system's CA certificates).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from proton import Collector, Condition, Connection, Delivery, Event, EventType, Link, Message, Terminus, Transport

from relaymq.amqp.engine_io import drain, feed, tick
from relaymq.amqp.links import echo_selector

log = logging.getLogger("relaymq.amqp.client")


class AmqpRefused(Exception):
    """The provider refused a connection, a link or a message: ``condition`` names why."""

    def __init__(self, what: str, condition: Condition | None) -> None:
        self.condition = condition
        why = f"{condition.name}: {condition.description}" if condition is not None else "closed"
        super().__init__(f"{what}: {why}")


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    user: str | None
    password: str | None
    tls: bool

    @classmethod
    def parse(cls, url: str, user: str | None = None, password: str | None = None) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
            raise ValueError(f"{url!r} is not amqp://host[:port] or amqps://host[:port]")
        tls = parts.scheme == "amqps"
        return cls(parts.hostname, parts.port or (5671 if tls else 5672),
                   user if user is not None else (unquote(parts.username) if parts.username else None),
                   password if password is not None else (unquote(parts.password) if parts.password else None), tls)


class AmqpClient(asyncio.Protocol):
    """One client connection. ``await AmqpClient.connect(endpoint)``; then ``send``,
    ``receive``; ``close``."""

    def __init__(self, endpoint: Endpoint, container_id: str) -> None:
        self.endpoint = endpoint
        self.loop = asyncio.get_running_loop()
        self.collector = Collector()
        self.engine = Transport()
        self.connection = Connection()
        self.connection.container = container_id
        self.connection.hostname = endpoint.host
        if endpoint.user is not None:
            self.connection.user = endpoint.user
            self.connection.password = endpoint.password or ""
        sasl = self.engine.sasl()
        sasl.allowed_mechs("PLAIN" if endpoint.user is not None else "ANONYMOUS")
        # PLAIN over amqp:// sends the password in clear, as Qpid JMS does on an amqp:// URL;
        # amqps:// is the answer (docs/amqp.md).
        sasl.allow_insecure_mechs = True
        self.connection.collect(self.collector)
        self.engine.bind(self.connection)
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future[None] = self.loop.create_future()
        self.closed = False
        self._session: Any = None
        self._attached: dict[Link, asyncio.Future[Link]] = {}
        self._outcomes: dict[Delivery, asyncio.Future[None]] = {}
        self._receivers: dict[Link, Callable[[Message, Delivery], None]] = {}
        self._senders: dict[str, Link] = {}
        self._credit: dict[Link, asyncio.Event] = {}
        self._ticker: asyncio.TimerHandle | None = None
        self._held = b""  # bytes the engine had no room for yet

    @classmethod
    async def connect(cls, endpoint: Endpoint, container_id: str | None = None, timeout: float = 30.0) -> AmqpClient:
        loop = asyncio.get_running_loop()
        context = ssl.create_default_context() if endpoint.tls else None
        client = cls(endpoint, container_id or f"relaymq-{uuid.uuid4()}")
        await asyncio.wait_for(loop.create_connection(lambda: client, endpoint.host, endpoint.port, ssl=context),
                               timeout)
        client.connection.open()
        client._session = client.connection.session()
        client._session.open()
        client.pump()
        await asyncio.wait_for(asyncio.shield(client.opened), timeout)
        return client

    # -- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._tick()

    def data_received(self, data: bytes) -> None:
        try:
            self._held = feed(self.engine, self._held + data, self.pump)
        except Exception as err:  # noqa: BLE001 - the engine's TransportException
            log.info("AMQP client %s: %s", self.endpoint.host, err)
            self._held = b""
        self.pump()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(AmqpRefused("connection lost", self.engine.condition or self.connection.remote_condition))

    # -- the engine ---------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.closed:
            return
        delay = tick(self.engine, self.pump)
        if delay is not None:
            self._ticker = self.loop.call_later(delay, self._tick)

    def pump(self) -> None:
        while (event := self.collector.peek()) is not None:
            self._event(event)
            self.collector.pop()
        if self.transport is None:
            return
        if drain(self.engine, self._write) < 0:
            self.transport.close()

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _event(self, event: Any) -> None:  # proton types every Event attribute Optional
        handler = self._HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event)

    def _on_connection_open(self, event: Any) -> None:
        if not self.opened.done():
            self.opened.set_result(None)

    def _on_link_open(self, event: Any) -> None:
        link = event.link
        terminus = link.remote_target if link.is_sender else link.remote_source
        if terminus.address is None:
            return  # a refusal (part 2.6.3): the detach follows with the reason
        future = self._attached.pop(link, None)
        if future is not None and not future.done():
            future.set_result(link)

    def _on_link_flow(self, event: Any) -> None:
        waiter = self._credit.get(event.link)
        if waiter is not None and event.link.credit > 0:
            waiter.set()

    def _on_delivery(self, event: Any) -> None:
        self._delivery(event.link, event.delivery)

    def _on_link_close(self, event: Any) -> None:
        """The peer closed or detached a link: what waits on it fails with its reason."""
        link = event.link
        error = AmqpRefused(f"link {link.name}", link.remote_condition)
        future = self._attached.pop(link, None)
        if future is not None and not future.done():
            future.set_exception(error)
        for delivery, outcome in list(self._outcomes.items()):
            if delivery.link is link and not outcome.done():
                outcome.set_exception(error)
        self._receivers.pop(link, None)
        self._senders = {a: lk for a, lk in self._senders.items() if lk is not link}
        link.close()

    def _on_connection_close(self, event: Any) -> None:
        self._fail(AmqpRefused("connection closed", event.connection.remote_condition))
        event.connection.close()

    def _on_transport_end(self, event: Any) -> None:
        self._fail(AmqpRefused("connection failed", self.engine.condition))

    #: The proton events the client acts on, and how.
    _HANDLERS: ClassVar[dict[EventType, Callable[[AmqpClient, Any], None]]] = {
        Event.CONNECTION_REMOTE_OPEN: _on_connection_open,
        Event.LINK_REMOTE_OPEN: _on_link_open,
        Event.LINK_FLOW: _on_link_flow,
        Event.DELIVERY: _on_delivery,
        Event.LINK_REMOTE_CLOSE: _on_link_close,
        Event.LINK_REMOTE_DETACH: _on_link_close,
        Event.CONNECTION_REMOTE_CLOSE: _on_connection_close,
        Event.TRANSPORT_ERROR: _on_transport_end,
        Event.TRANSPORT_CLOSED: _on_transport_end,
    }

    def _delivery(self, link: Link, delivery: Delivery) -> None:
        if link.is_sender:
            outcome = self._outcomes.pop(delivery, None)
            if outcome is None or not delivery.updated:
                return
            state = delivery.remote_state
            if state == Delivery.ACCEPTED:
                outcome.set_result(None)
            else:
                outcome.set_exception(AmqpRefused(f"message {state}", delivery.remote.condition))
            delivery.settle()
            return
        if not delivery.readable or delivery.partial:
            return
        data = link.recv(delivery.pending)
        link.advance()
        message = Message()
        message.decode(data)
        handler = self._receivers.get(link)
        if handler is not None:
            handler(message, delivery)

    def _fail(self, error: AmqpRefused) -> None:
        if self.closed:
            return
        self.closed = True
        if self._ticker is not None:
            self._ticker.cancel()
        futures: list[asyncio.Future[Any]] = [self.opened, *self._attached.values(), *self._outcomes.values()]
        for future in futures:
            if not future.done():
                future.set_exception(error)
        for waiter in self._credit.values():
            waiter.set()
        if self.transport is not None:
            self.transport.close()

    async def _attach(self, link: Link) -> Link:
        future: asyncio.Future[Link] = self.loop.create_future()
        self._attached[link] = future
        link.open()
        self.pump()
        return await future

    # -- what the caller asks -------------------------------------------------------------------
    async def sender(self, address: str) -> Link:
        link = self._senders.get(address)
        if link is not None:
            return link
        if self.closed:
            raise AmqpRefused("connection closed", None)
        link = self._session.sender(f"relaymq-sender-{uuid.uuid4()}")
        link.target.address = address
        link.source.address = address
        link.snd_settle_mode = Link.SND_UNSETTLED
        self._credit[link] = asyncio.Event()
        await self._attach(link)
        self._senders[address] = link
        return link

    async def send(self, address: str, message: Message) -> None:
        """Send at least once: returns when the provider accepted the message."""
        link = await self.sender(address)
        while link.credit <= 0:
            if self.closed:
                raise AmqpRefused("connection closed", None)
            waiter = self._credit[link]
            waiter.clear()
            await waiter.wait()
        delivery = link.delivery(uuid.uuid4().hex)
        outcome: asyncio.Future[None] = self.loop.create_future()
        self._outcomes[delivery] = outcome
        link.send(message.encode())
        link.advance()
        self.pump()
        await outcome

    async def receive(self, address: str, on_message: Callable[[Message, Delivery], None], *, credit: int = 10,
                      selector: str | None = None, durable_name: str | None = None) -> Link:
        """Attach a receiver; ``on_message(message, delivery)`` runs on the loop for each
        message; settle with :meth:`settle`. ``durable_name``: a durable subscription of that
        name (terminus durable, expiry never; the container id is the JMS client id)."""
        link = self._session.receiver(durable_name or f"relaymq-receiver-{uuid.uuid4()}")
        link.source.address = address
        link.target.address = address
        if selector:
            echo_selector(link.source, selector)
        if durable_name:
            link.source.durability = Terminus.DELIVERIES
            link.source.expiry_policy = Terminus.EXPIRE_NEVER
        self._receivers[link] = on_message
        await self._attach(link)
        link.flow(credit)
        self.pump()
        return link

    def settle(self, delivery: Delivery, state: int = Delivery.ACCEPTED, condition: Condition | None = None) -> None:
        if condition is not None:
            delivery.local.condition = condition
        delivery.update(state)
        delivery.settle()
        link = delivery.link
        link.flow(1)
        self.pump()

    async def close(self) -> None:
        if not self.closed:
            self.connection.close()
            self.pump()
            self.closed = True
            if self.transport is not None:
                self.transport.close()
