"""An AMQP topic link as an MQTT 5 client session of the broker, in process.

Why: a topic link must get everything an MQTT subscriber or publisher gets - the topic ACL,
``$SYS`` refusal, retained publications, persistent sessions (a JMS durable subscription is
one), QoS 1 acknowledged only after the durable commit, back-pressure of a full session - and
all of that is the broker core's (``relaymq.broker``), which speaks MQTT packets to a *link*.
So each topic link is one ``broker.connection.Connection`` whose link is this object: packets
go in encoded by relaymq's own codec, and what the broker writes is framed back into packets
by ``PacketReader``. Nothing is duplicated and nothing touches a socket.

Packets the broker writes are handled synchronously (``write``); the AMQP side only queues
them, and answers (PUBACK) from its own turn, so the broker is never re-entered.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from relaymq.broker.connection import Connection
from relaymq.mqtt.codec import encode
from relaymq.mqtt.packets import (
    Connack,
    Connect,
    Disconnect,
    Puback,
    Publish,
    Subscribe,
    Suback,
    Subscription,
    Unsuback,
    Unsubscribe,
)
from relaymq.mqtt.reader import PacketReader

MQTT5 = 5
#: The listener name the broker sees these sessions come through (its overflow policy).
LISTENER_NAME = "amqp"


class BridgeRefused(Exception):
    """The broker refused the session, a subscription or a publication: ``reason`` is the
    MQTT 5 reason code (0x87 not authorized, 0x86 bad user name or password, ...)."""

    def __init__(self, what: str, reason: int) -> None:
        super().__init__(f"{what}: MQTT reason code 0x{reason:02X}")
        self.reason = reason


class TopicBridge:
    """One in-process MQTT 5 session. ``on_publish(packet)`` gets each PUBLISH the broker
    delivers (acknowledge a QoS 1 one with :meth:`ack`); ``on_closed()`` runs once when the
    broker closes the session (take-over, shutdown, a refused CONNECT)."""

    def __init__(self, broker: Any, *, peer: str, identity: str | None, on_publish: Callable[[Publish], None],
                 on_closed: Callable[[], None]) -> None:
        self.loop = asyncio.get_running_loop()
        self.on_publish = on_publish
        self.on_closed = on_closed
        self.reader = PacketReader(broker.limits.max_packet_size, from_client=False)
        self.reader.protocol_level = MQTT5
        # The user SASL authenticated is the session's proven identity, as a verified client
        # certificate's name is for an MQTT client: no password is kept or checked twice.
        self.connection = Connection(broker, self, peer, LISTENER_NAME, identity)
        self.closed = False
        #: The broker asked its publisher to wait (a full session, overflow = "block").
        self.paused = False
        self.receive_maximum = 65535
        self._ids = itertools.cycle(range(1, 65536))
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._connack: asyncio.Future[Connack] = self.loop.create_future()
        self.resumed: Callable[[], None] = lambda: None

    # -- the link the broker's Connection writes to -----------------------------------------
    def write(self, data: bytes) -> None:
        self.reader.feed(data)
        while (packet := self.reader.next_packet()) is not None:
            self._received(packet)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._lost()

    def abort(self) -> None:
        self._lost()

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False
        self.resumed()

    # -- packets from the broker ------------------------------------------------------------
    def _received(self, packet: Any) -> None:
        if isinstance(packet, Publish):
            self.on_publish(packet)
        elif isinstance(packet, Connack):
            if not self._connack.done():
                self._connack.set_result(packet)
        elif isinstance(packet, (Puback, Suback, Unsuback)):
            future = self._waiting.pop(packet.packet_id, None)
            if future is not None and not future.done():
                future.set_result(packet)
        elif isinstance(packet, Disconnect):
            self._lost()

    def _lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in [self._connack, *self._waiting.values()]:
            if not future.done():
                future.set_exception(BridgeRefused("session closed by the broker", 0x80))
        self._waiting.clear()
        self.loop.call_soon(self.on_closed)

    def _send(self, packet: Any) -> None:
        if self.closed:
            raise BridgeRefused("session closed", 0x80)
        self.connection.data_received(encode(packet, MQTT5))

    def _expect(self) -> tuple[int, asyncio.Future[Any]]:
        packet_id = next(self._ids)
        future: asyncio.Future[Any] = self.loop.create_future()
        self._waiting[packet_id] = future
        return packet_id, future

    # -- what the AMQP side asks ------------------------------------------------------------
    async def connect(self, client_id: str, *, clean_start: bool, session_expiry: int,
                      receive_maximum: int) -> bool:
        """Open the session; True when a stored one was resumed (a durable subscription)."""
        properties: dict[str, Any] = {"receive_maximum": receive_maximum}
        if session_expiry:
            properties["session_expiry_interval"] = session_expiry
        self._send(Connect(protocol_level=MQTT5, clean_start=clean_start, keep_alive=0, client_id=client_id,
                           username=self.connection.certificate_user, properties=properties))
        connack = await self._connack
        if connack.reason_code >= 0x80:
            raise BridgeRefused("connect", connack.reason_code)
        self.receive_maximum = int(connack.properties.get("receive_maximum", 65535))
        return connack.session_present

    async def subscribe(self, topic_filter: str, qos: int) -> int:
        packet_id, future = self._expect()
        self._send(Subscribe(packet_id, [Subscription(topic_filter, qos)]))
        suback: Suback = await future
        code = suback.reason_codes[0] if suback.reason_codes else 0x80
        if code >= 0x80:
            raise BridgeRefused(f"subscribe to {topic_filter!r}", code)
        return code

    async def unsubscribe(self, topic_filter: str) -> None:
        packet_id, future = self._expect()
        self._send(Unsubscribe(packet_id, [topic_filter]))
        await future

    def publish_at_most_once(self, topic: str, payload: bytes, properties: dict[str, Any]) -> None:
        self._send(Publish(topic, payload, 0, properties=properties))

    async def publish(self, topic: str, payload: bytes, properties: dict[str, Any]) -> None:
        """QoS 1: returns once the broker acknowledged it (after its durable commit)."""
        packet_id, future = self._expect()
        self._send(Publish(topic, payload, 1, packet_id=packet_id, properties=properties))
        puback: Puback = await future
        if puback.reason_code >= 0x80:
            raise BridgeRefused(f"publish to {topic!r}", puback.reason_code)

    def ack(self, packet_id: int) -> None:
        if not self.closed:
            self._send(Puback(packet_id))

    def disconnect(self, session_expiry: int | None = None) -> None:
        """End the session; ``session_expiry=0`` deletes a persistent one (JMS unsubscribe)."""
        if self.closed:
            return
        properties = {"session_expiry_interval": session_expiry} if session_expiry is not None else {}
        try:
            self._send(Disconnect(0, properties=properties))
        finally:
            self.connection.connection_lost()
            self._lost()
