"""One AMQP 1.0 connection: an asyncio.Protocol that runs the SASL exchange
(:mod:`relaymq.amqp.sasl`) and then python-qpid-proton's protocol engine, sans-I/O, on the
event loop (docs/amqp.md "Design").

Why not proton's reactor: it owns its sockets and runs in a thread of its own, and every call
into the broker and the queue manager would have to cross to the loop and back. Proton's
engine (Transport, Connection, Collector) is pure protocol: bytes in with ``push``, events
out of the collector, bytes out with ``peek``/``pop``. Here it is driven from
``data_received``, so links call the broker and the queue manager directly and await their
commits like any other entrance, and there is no second thread.

A malformed frame is the engine's error: it writes the close with the error condition and
only this connection ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from proton import Collector, Condition, Connection, Endpoint, Event, Link, Transport, TransportException

from relaymq.amqp.addresses import QUEUE, TOPIC, Address, AddressError, AddressScheme
from relaymq.amqp.dynamic_nodes import DynamicNodes, wants_dynamic
from relaymq.amqp.engine_io import drain, feed, tick
from relaymq.amqp.links import LinkHandler, terminus_address
from relaymq.amqp.queue_links import QueueInbound, QueueOutbound, condition_for
from relaymq.amqp.sasl import ANONYMOUS, SaslError, SaslServer
from relaymq.amqp.settings import AmqpSettings
from relaymq.amqp.topic_bridge import BridgeRefused
from relaymq.amqp.topic_links import TopicInbound, TopicOutbound, refusal

log = logging.getLogger("relaymq.amqp")

CONTAINER_ID = "relaymq"


class AmqpConnection(asyncio.Protocol):
    def __init__(self, listener: Any) -> None:
        self.listener = listener
        self.settings: AmqpSettings = listener.settings
        self.services = listener.services
        self.scheme: AddressScheme = listener.scheme
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.user: str | None = None
        self.container: str = ""
        self.sasl = SaslServer(self.settings.allow_anonymous)
        self.engine: Transport | None = None
        self.connection: Connection | None = None
        self.collector = Collector()
        self.handlers: dict[Link, LinkHandler] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = False
        self._pump_scheduled = False
        self._held = b""  # bytes the engine had no room for yet
        self._ticker: asyncio.TimerHandle | None = None
        #: Temporary dynamic queues of this connection's dynamic links (made on first use).
        self.dynamic_nodes: DynamicNodes | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if not self.listener.attach(self):
            transport.close()
            self.closed = True

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            if self.engine is None:
                self._sasl_received(data)
            else:
                self._push(data)
        except Exception:  # a bug costs this connection, never the broker
            log.exception("AMQP connection %s: internal error; closing it", self.peer)
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.detach(self)
        self._end()

    # -- SASL, then the engine ----------------------------------------------------------------
    def _sasl_received(self, data: bytes) -> None:
        asked = self.sasl.credentials is not None
        try:
            self.sasl.receive(data)
        except SaslError as err:
            log.info("AMQP connection %s: %s", self.peer, err)
            self._write(self.sasl.take_outgoing())
            self.abort(graceful=True)
            return
        self._write(self.sasl.take_outgoing())
        if self.sasl.passthrough:
            self._start_engine(None)
            return
        creds = self.sasl.credentials
        if creds is None or asked:
            return
        if creds.mechanism == ANONYMOUS:
            self._authenticated(True, None)
        elif creds.user is None:
            self._authenticated(False, None)
        else:
            user = creds.user
            self.services["broker"].authenticate(
                user, creds.password, self.peer,
                lambda ok: self.loop.call_soon(self._authenticated, ok, user))

    def _authenticated(self, ok: bool, user: str | None) -> None:
        if self.closed:
            return
        broker = self.services["broker"]
        if ok and user is None and not self.settings.allow_anonymous:
            ok = False
        if ok and user is not None and broker.passwords is None:
            ok = False  # without a password file there are no users to check (ANONYMOUS only)
        self.sasl.outcome(ok)
        self._write(self.sasl.take_outgoing())
        if not ok:
            log.info("AMQP connection %s: authentication failed for %r", self.peer, user)
            self.abort(graceful=True)
            return
        self._start_engine(user)

    def _start_engine(self, user: str | None) -> None:
        self.user = user
        engine = Transport(Transport.SERVER)
        engine.max_frame_size = self.settings.max_frame_size
        if self.settings.idle_timeout:
            engine.idle_timeout = float(self.settings.idle_timeout)
        connection = Connection()
        connection.collect(self.collector)
        engine.bind(connection)
        self.engine, self.connection = engine, connection
        self._push(self.sasl.remainder)
        self._tick()

    def _push(self, data: bytes) -> None:
        assert self.engine is not None
        try:
            left = feed(self.engine, self._held + data, self.pump)
        except TransportException as err:
            log.info("AMQP connection %s: %s", self.peer, err)
            left = b""
        self._held = left  # the engine is full until it has sent: taken with the next bytes
        self.pump()

    def _tick(self) -> None:
        if self.engine is None or self.closed:
            return
        delay = tick(self.engine, self.pump)
        if delay is not None:
            self._ticker = self.loop.call_later(delay, self._tick)

    # -- events -------------------------------------------------------------------------------
    def pump(self) -> None:
        """Handle the engine's events and send what it has to send."""
        engine = self.engine
        if engine is None or self.closed:
            return
        while (event := self.collector.peek()) is not None:
            try:
                self._event(event)
            except Exception:
                log.exception("AMQP connection %s: internal error in %s", self.peer, event.type)
                self.abort()
                return
            self.collector.pop()
        pending = drain(engine, self._write)
        if pending < 0 or engine.closed:  # the engine closed its output: so does the socket
            self.abort(graceful=True)

    def schedule_pump(self) -> None:
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self.loop.call_soon(self._scheduled_pump)

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self.pump()

    def _event(self, event: Any) -> None:  # proton types every Event attribute Optional
        kind = event.type
        if kind == Event.CONNECTION_REMOTE_OPEN:
            conn = event.connection
            self.container = str(conn.remote_container or "")
            conn.container = CONTAINER_ID
            conn.open()
        elif kind == Event.SESSION_REMOTE_OPEN:
            event.session.open()
        elif kind == Event.LINK_REMOTE_OPEN:
            self._attach(event.link)
        elif kind == Event.LINK_FLOW:
            handler = self.handlers.get(event.link)
            if handler is not None:
                handler.flow()
        elif kind == Event.DELIVERY:
            handler = self.handlers.get(event.link)
            if handler is not None:
                handler.delivery(event.delivery)
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            link = event.link
            self._link_ended(link, remove=kind == Event.LINK_REMOTE_CLOSE)
            if kind == Event.LINK_REMOTE_CLOSE:
                link.close()
            else:
                link.detach()
        elif kind == Event.SESSION_REMOTE_CLOSE:
            for link in [lk for lk in self.handlers if lk.session is event.session]:
                self._link_ended(link, remove=False)
            event.session.close()
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            self._end_links()
            event.connection.close()
        elif kind in (Event.TRANSPORT_CLOSED, Event.TRANSPORT_TAIL_CLOSED, Event.TRANSPORT_ERROR):
            # The engine read something it cannot parse, or the peer closed: it wrote its close
            # (with the error, once the connection was open); this connection ends.
            condition = self.engine.condition if self.engine is not None else None
            if condition is not None:
                log.info("AMQP connection %s: %s", self.peer, condition)
            self._end_links()
            self.loop.call_soon(self.abort, True)

    def _attach(self, link: Link) -> None:
        remote = link.remote_target if link.is_receiver else link.remote_source
        if link.is_receiver:
            link.target.copy(link.remote_target)
            link.source.copy(link.remote_source)
        else:
            link.source.address = link.remote_source.address  # type: ignore[assignment]  # None when refused
            link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = Link.RCV_FIRST
        if wants_dynamic(link):
            self.spawn(self._attach_dynamic(link))
            return
        try:
            address = terminus_address(remote, self.scheme)
        except AddressError as err:
            self._refuse(link, Condition("amqp:not-found", str(err)))
            return
        self._handle(link, address)

    async def _attach_dynamic(self, link: Link) -> None:
        """A dynamic terminus: a temporary dynamic queue of the queue manager (docs/amqp.md
        "Temporary queues"), its address in our terminus of the attach."""
        qm = self.services.get("qmgr")
        if qm is None:
            self._refuse(link, Condition("amqp:not-implemented", "no queue manager: no dynamic nodes"))
            self.pump()
            return
        if self.dynamic_nodes is None:
            self.dynamic_nodes = DynamicNodes(qm, f"amqp:{self.peer}:{id(self):x}")
        try:
            name = await self.dynamic_nodes.open(link)
        except Exception as err:  # an unknown model, a bad dynamic name
            self._refuse(link, condition_for(err))
            self.pump()
            return
        address = Address(QUEUE, name)
        terminus = link.source if link.is_sender else link.target
        terminus.address = self.scheme.format(address)
        terminus.dynamic = True
        self._handle(link, address)

    def _handle(self, link: Link, address: Address) -> None:
        s = self.settings
        handler: LinkHandler
        if link.is_receiver:
            handler = (TopicInbound if address.kind == TOPIC else QueueInbound)(
                self, link, address, s.credit, s.max_message_size)
        else:
            handler = (TopicOutbound if address.kind == TOPIC else QueueOutbound)(self, link, address)
        self.handlers[link] = handler
        self.spawn(self._open(link, handler))

    async def _open(self, link: Link, handler: LinkHandler) -> None:
        try:
            await handler.opened()
        except BridgeRefused as err:
            self._refused_after(link, handler, refusal(err))
            return
        except Exception as err:  # unknown queue, no authority, a bad selector
            cond = condition_for(err)
            if type(err).__name__ == "UnknownQueue":
                cond = Condition("amqp:not-found", str(err))
            self._refused_after(link, handler, cond)
            return
        if not handler.done:
            link.open()
            handler.flow()
        self.pump()

    def _refused_after(self, link: Link, handler: LinkHandler, condition: Condition) -> None:
        self.handlers.pop(link, None)
        handler.closed(False)
        self._refuse(link, condition)
        self.pump()

    def _refuse(self, link: Link, condition: Condition) -> None:
        """Answer the attach with no terminus, then detach with the reason (part 2.6.3)."""
        terminus = link.target if link.is_receiver else link.source
        terminus.address = None  # type: ignore[assignment]  # a null terminus: the refusal
        if not (link.state & Endpoint.LOCAL_ACTIVE):
            link.open()
        link.condition = condition
        link.close()

    def _link_ended(self, link: Link, remove: bool) -> None:
        handler = self.handlers.pop(link, None)
        if handler is not None and not handler.done:
            handler.closed(remove)
        if remove and self.dynamic_nodes is not None and link in self.dynamic_nodes.by_link:
            self.spawn(self.dynamic_nodes.link_closed(link))

    def _end_links(self) -> None:
        for link in list(self.handlers):
            self._link_ended(link, remove=False)

    # -- helpers ------------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("AMQP connection %s: a link task failed", self.peer, exc_info=task.exception())

    def _write(self, data: bytes) -> None:
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def abort(self, graceful: bool = False) -> None:
        if self.transport is not None:
            if graceful:
                self.transport.close()
            else:
                self.transport.abort()
        self._end()

    def shutdown(self) -> None:
        """Close for a broker shutdown: connection close with amqp:connection:forced."""
        if self.connection is not None and not self.closed:
            self.connection.condition = Condition("amqp:connection:forced", "the broker is shutting down")
            self.connection.close()
            self.pump()
        self.abort(graceful=True)

    def _end(self) -> None:
        if self.closed:
            return
        self._end_links()
        self.closed = True
        if self.dynamic_nodes is not None:
            self.spawn(self.dynamic_nodes.connection_ended())
        if self._ticker is not None:
            self._ticker.cancel()
