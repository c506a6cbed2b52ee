"""Links on ``topic://NAME``: a client's sender publishes, a client's receiver subscribes
(docs/amqp.md "Topics"). Each link is an in-process MQTT 5 session of the broker
(:mod:`relaymq.amqp.topic_bridge`), so the topic ACL, retained publications, persistent
sessions and the commit before an acknowledgement are the broker's own.

A transfer sent unsettled is published at QoS 1 and accepted when the broker's PUBACK comes
(after its durable commit, or at once when nothing stored it); a pre-settled one is QoS 0.
A receiver subscribes at QoS 1 unless it asked for pre-settled deliveries (QoS 0); a QoS 1
delivery is acknowledged to the broker when the client settles it, so the broker's in-flight
window and the link credit bound what is on its way. A JMS durable subscription (durable
terminus, expiry never) is a persistent session named after the client's container id and the
link name: detaching keeps it, closing the link (JMS ``unsubscribe``) ends it.

The JMS selector is evaluated here, on the JMS view of each publication; a publication it
does not select is acknowledged and not sent.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from typing import Any

from proton import Condition, Delivery, Link, Message

from relaymq.amqp.addresses import Address
from relaymq.amqp.jms_mapping import amqp_to_jms, jms_to_amqp
from relaymq.amqp.links import LinkHandler, Owner, echo_selector, is_durable, selector_of
from relaymq.amqp.topic_bridge import BridgeRefused, TopicBridge
from relaymq.store.base import NEVER_EXPIRES  # Session Expiry Interval of a durable subscription
from relaymq.message.errors import FormatError
from relaymq.message.jms import JMSMessage
from relaymq.message.jms_mqtt import MQTT5Publish, jms_to_mqtt5, mqtt5_to_jms
from relaymq.message.typed import STRING, parse_value
from relaymq.mqtt.packets import Publish
from relaymq.selector import Selector, compile_selector

#: Publications kept for an at-most-once receiver without credit; older ones are dropped.
MAX_BUFFERED_AT_MOST_ONCE = 10_000
#: MQTT 5 PUBLISH properties that MQTT5Publish carries.
_PUBLISH_PROPERTIES = ("payload_format_indicator", "message_expiry_interval", "content_type",
                       "response_topic", "correlation_data")
#: MQTT reason code -> AMQP error condition.
_CONDITIONS = {0x87: "amqp:unauthorized-access", 0x86: "amqp:unauthorized-access", 0x85: "amqp:invalid-field",
               0x8F: "amqp:invalid-field", 0x90: "amqp:invalid-field", 0x97: "amqp:resource-limit-exceeded"}


#: The user property that carries the JMS types of the other user properties across MQTT,
#: whose user properties are text: ``name:dt`` items, comma-separated (docs/amqp.md).
TYPES_PROPERTY = "JMS_RelayMQ_Types"


def add_types(jms: JMSMessage, pub: MQTT5Publish) -> None:
    """Name the non-string property types, so an AMQP (JMS) receiver gets ``int``s back and
    a selector compares numbers; MQTT subscribers see one more user property."""
    props = jms.properties
    typed = [f"{name}:{props.dt(name)}" for name in props
             if props.dt(name) != STRING and props[name] is not None and "," not in name and ":" not in name]
    if typed:
        pub.user_properties.append((TYPES_PROPERTY, ",".join(typed)))


def retype(jms: JMSMessage) -> None:
    """Undo :func:`add_types` on a received message: each named property parsed as its dt."""
    props = jms.properties
    hint = props.get(TYPES_PROPERTY)
    if not isinstance(hint, str):
        return
    del props[TYPES_PROPERTY]
    for item in hint.split(","):
        name, _, dt = item.partition(":")
        value = props.get(name)
        if isinstance(value, str):
            try:
                props.set_received(name, parse_value(value, dt), dt)
            except FormatError:
                pass  # not what the hint says: left as text


def packet_properties(pub: MQTT5Publish) -> dict[str, Any]:
    properties: dict[str, Any] = {name: getattr(pub, name) for name in _PUBLISH_PROPERTIES
                                  if getattr(pub, name) is not None}
    if pub.user_properties:
        properties["user_property"] = list(pub.user_properties)
    return properties


def mqtt5_publish(packet: Publish) -> MQTT5Publish:
    props = packet.properties
    return MQTT5Publish(packet.topic, bytes(packet.payload), packet.qos, packet.retain,
                        user_properties=[(str(k), str(v)) for k, v in props.get("user_property", ())],
                        **{name: props[name] for name in _PUBLISH_PROPERTIES if name in props})


def refusal(error: BridgeRefused) -> Condition:
    return Condition(_CONDITIONS.get(error.reason, "amqp:not-allowed"), str(error))


def _bridge(owner: Owner, on_publish: Any, on_closed: Any) -> TopicBridge:
    return TopicBridge(owner.services["broker"], peer=owner.peer, identity=owner.user, on_publish=on_publish,
                       on_closed=on_closed)


class TopicInbound(LinkHandler):
    """A client's sender: each transfer is a publication on the address's topic."""

    def __init__(self, owner: Owner, link: Link, address: Address, credit: int, max_message_size: int) -> None:
        super().__init__(owner, link, address)
        self.max_message_size = max_message_size
        self.bridge = _bridge(owner, lambda _packet: None, self._lost)
        self.credit = credit

    async def opened(self) -> None:
        await self.bridge.connect(f"amqp-{secrets.token_hex(8)}",
                                  clean_start=True, session_expiry=0, receive_maximum=65535)
        self.credit = max(1, min(self.credit, self.bridge.receive_maximum))
        self.bridge.resumed = self._top_up
        self.link.flow(self.credit)

    def _lost(self) -> None:
        if not self.done:
            self.link.condition = Condition("amqp:link:detach-forced", "the broker ended the session")
            self.link.close()
            self.owner.pump()

    def _top_up(self) -> None:
        if not self.done and not self.bridge.paused and self.link.credit < self.credit // 2:
            self.link.flow(self.credit - self.link.credit)
            self.owner.pump()

    def delivery(self, delivery: Any) -> None:
        if not delivery.readable or delivery.partial:
            if delivery.pending > self.max_message_size:
                self._settle(delivery, Condition("amqp:link:message-size-exceeded", "message too large"))
            return
        data = self.link.recv(delivery.pending)
        self.link.advance()
        try:
            msg = Message()
            msg.decode(data or b"")
            jms = amqp_to_jms(msg, self.owner.scheme)
            jms.JMSDestination = f"topic://{self.address.name}"
            pub = jms_to_mqtt5(jms, topic=self.address.name)
            add_types(jms, pub)
        except Exception as exc:
            self._settle(delivery, Condition("amqp:decode-error", str(exc)))
            return
        if delivery.settled:
            try:
                self.bridge.publish_at_most_once(pub.topic, pub.payload, packet_properties(pub))
            except BridgeRefused:
                pass
            delivery.settle()
            self._top_up()
            return
        self.owner.spawn(self._publish(delivery, pub))

    def _settle(self, delivery: Any, condition: Condition | None) -> None:
        if not delivery.settled:
            if condition is not None:
                delivery.local.condition = condition
            delivery.update(Delivery.REJECTED if condition is not None else Delivery.ACCEPTED)
        delivery.settle()
        self._top_up()
        self.owner.pump()

    async def _publish(self, delivery: Any, pub: MQTT5Publish) -> None:
        try:
            await self.bridge.publish(pub.topic, pub.payload, packet_properties(pub))
        except BridgeRefused as exc:
            self._settle(delivery, refusal(exc))
        else:
            self._settle(delivery, None)

    def closed(self, remove: bool) -> None:
        super().closed(remove)
        self.bridge.disconnect()


class TopicOutbound(LinkHandler):
    """A client's receiver: a subscription to the address's topic filter."""

    def __init__(self, owner: Owner, link: Link, address: Address) -> None:
        super().__init__(owner, link, address)
        self.bridge = _bridge(owner, self._publication, self._lost)
        self.selector: Selector | None = None
        self.durable = False
        self._waiting: deque[tuple[int | None, Message]] = deque()
        self._unsettled: dict[Any, tuple[int | None, Message]] = {}
        self.dropped = 0

    @property
    def client_id(self) -> str:
        """The MQTT client id of a durable subscription: the JMS client id (the AMQP
        container id) and the subscription name (the link name)."""
        return f"amqp:{self.owner.container}:{self.link.name}"

    async def opened(self) -> None:
        source = self.link.remote_source
        text = selector_of(source)
        if text is not None:
            self.selector = compile_selector(text)
            echo_selector(self.link.source, text)
        self.durable = is_durable(source)
        if self.durable:
            self.link.source.durability = source.durability
            self.link.source.expiry_policy = source.expiry_policy
            await self.bridge.connect(self.client_id, clean_start=False,
                                      session_expiry=NEVER_EXPIRES, receive_maximum=65535)
        else:
            await self.bridge.connect(f"amqp-{secrets.token_hex(8)}",
                                      clean_start=True, session_expiry=0, receive_maximum=65535)
        await self.bridge.subscribe(self.address.name, 0 if self.at_most_once else 1)

    def _lost(self) -> None:
        if not self.done:
            self.link.condition = Condition("amqp:link:detach-forced", "the broker ended the subscription")
            self.link.close()
            self.owner.pump()

    def _publication(self, packet: Publish) -> None:  # called by the broker: queue only
        packet_id = packet.packet_id if packet.qos > 0 else None
        try:
            jms = mqtt5_to_jms(mqtt5_publish(packet))
            retype(jms)
        except Exception:  # a payload that its JMS class cannot read: acknowledged, not sent
            self._ack_later(packet_id)
            return
        if self.selector is not None and not self.selector.matches(jms.selector_value):
            self._ack_later(packet_id)
            return
        msg = jms_to_amqp(jms, self.owner.scheme, self.owner.scheme.format(Address("topic", packet.topic)))
        if packet.dup:
            msg.delivery_count = 1
        self._waiting.append((packet_id, msg))
        if packet_id is None and len(self._waiting) > MAX_BUFFERED_AT_MOST_ONCE:
            self._waiting.popleft()
            self.dropped += 1
        asyncio.get_running_loop().call_soon(self.flow)

    def _ack_later(self, packet_id: int | None) -> None:
        if packet_id is not None:
            asyncio.get_running_loop().call_soon(self.bridge.ack, packet_id)

    def flow(self) -> None:
        sent = False
        while self._waiting and self.link.credit > 0 and not self.done:
            packet_id, msg = self._waiting.popleft()
            delivery = self.link.delivery(secrets.token_hex(8))
            self.link.send(msg.encode())
            self.link.advance()
            if self.at_most_once or packet_id is None:
                delivery.settle()
                if packet_id is not None:
                    self.bridge.ack(packet_id)
            else:
                self._unsettled[delivery] = (packet_id, msg)
            sent = True
        if not self._waiting and self.link.drain_mode and self.link.credit > 0 and not self.done:
            self.link.drained()
            sent = True
        if sent:
            self.owner.pump()

    def delivery(self, delivery: Any) -> None:
        if not delivery.updated or delivery not in self._unsettled:
            return
        packet_id, msg = self._unsettled.pop(delivery)
        state = delivery.remote_state
        delivery.settle()
        if state in (Delivery.RELEASED, Delivery.MODIFIED):  # sent again, first in line
            msg.delivery_count = (msg.delivery_count or 0) + 1
            self._waiting.appendleft((packet_id, msg))
            self.flow()
        elif packet_id is not None:
            self.bridge.ack(packet_id)
        self.owner.pump()

    def closed(self, remove: bool) -> None:
        super().closed(remove)
        if self.durable and remove:  # JMS unsubscribe: the persistent session ends
            self.bridge.disconnect(session_expiry=0)
        else:
            self.bridge.disconnect()
