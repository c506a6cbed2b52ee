"""One client connection: bytes in, packets dispatched, bytes out (no I/O of its own).

The server gives the connection a *link* with ``write(bytes)``, ``close()`` and
``get_write_buffer_size()`` (an asyncio transport, or the WebSocket adapter). A malformed
packet closes this connection only (issue: "malformed packets close only that connection"),
with the reason code where the level allows one (MQTT 5 DISCONNECT or CONNACK) and a log line.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.mqtt.codec import encode, encode_publish
from relaymq.mqtt.errors import MQTTError, ProtocolError
from relaymq.mqtt.reader import PacketReader

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage

log = logging.getLogger("relaymq.connection")


class Connection:
    def __init__(self, broker: Broker, link: Any, peer: str = "?", listener: str = "default",
                 certificate_user: str | None = None) -> None:
        self.broker = broker
        self.link = link
        self.peer = peer
        self.listener = listener
        self.certificate_user = certificate_user
        self.reader = PacketReader(broker.limits.max_packet_size)
        self.level = 0  # protocol level, known after CONNECT
        self.session: Session | None = None
        self.client_id: str | None = None
        self.username: str | None = None
        self.connected = False  # CONNACK accepted sent
        self.closed = False
        self.keep_alive = 0
        self.last_received = broker.clock.monotonic()
        self.will: StoredMessage | None = None
        self.will_delay = 0
        self.send_quota = broker.limits.max_inflight  # outbound in-flight window
        self.client_max_packet = 0  # 0: no limit announced by the client
        self.client_alias_max = 0  # topic aliases the client accepts from us
        self.aliases_in: dict[int, str] = {}  # topic aliases the client set up
        self.aliases_out: dict[str, int] = {}
        self.inbound_unacked = 0  # QoS 1/2 received, acknowledgement not yet sent (receive max)
        self.paused = False  # the link's buffer is over its high-water mark
        broker.connections.add(self)
        broker.stats.connections_total += 1

    # ------------------------------------------------------------------ input
    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.broker.stats.bytes_received += len(data)
        self.last_received = self.broker.clock.monotonic()
        self.reader.feed(data)
        try:
            while not self.closed:
                packet = self.reader.next_packet()
                if packet is None:
                    break
                self.dispatch(packet)
        except MQTTError as err:
            self.protocol_violation(err)

    def dispatch(self, packet: p.Packet) -> None:
        from relaymq.broker import handle_connect, handle_publish, handle_subscribe

        kind = packet.packet_type
        if not self.connected:
            if kind == p.CONNECT:
                handle_connect.handle_connect(self, packet)
                return
            raise ProtocolError("the first packet must be CONNECT")
        if kind == p.PUBLISH:
            handle_publish.handle_publish(self, packet)
        elif kind == p.PUBACK:
            handle_publish.handle_puback(self, packet)
        elif kind == p.PUBREC:
            handle_publish.handle_pubrec(self, packet)
        elif kind == p.PUBREL:
            handle_publish.handle_pubrel(self, packet)
        elif kind == p.PUBCOMP:
            handle_publish.handle_pubcomp(self, packet)
        elif kind == p.SUBSCRIBE:
            handle_subscribe.handle_subscribe(self, packet)
        elif kind == p.UNSUBSCRIBE:
            handle_subscribe.handle_unsubscribe(self, packet)
        elif kind == p.PINGREQ:
            self.send(p.Pingresp())  # mqtt.md item 21; seed 000 l.1021
        elif kind == p.DISCONNECT:
            handle_connect.handle_disconnect(self, packet)
        elif kind == p.CONNECT:
            raise ProtocolError("a second CONNECT on one connection")
        elif kind == p.AUTH and self.level == 5:
            raise ProtocolError("enhanced authentication is not supported")
        else:
            raise ProtocolError(f"a client may not send packet type {kind}")

    # ------------------------------------------------------------------ output
    def send(self, packet: p.Packet) -> None:
        if self.closed:
            return
        self.write(encode(packet, self.level or 4))

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self.broker.stats.bytes_sent += len(data)
        self.link.write(data)

    def outbound_congested(self) -> bool:
        return self.paused or self.link.get_write_buffer_size() > self.broker.limits.max_outbound_buffer

    def send_publish(self, message: StoredMessage, qos: int, retain: bool, packet_id: int | None,
                     dup: bool = False, subscription_ids: list[int] | None = None) -> bool:
        """Encode and write one PUBLISH; False when it cannot be sent (too large for the client)."""
        props: dict = {}
        if self.level == 5:
            if message.properties:
                props.update(message.properties)
            if message.expiry_at is not None:
                # whole seconds left, rounded up: a message sent before it expires has >= 1
                props["message_expiry_interval"] = max(1, math.ceil(message.expiry_at - self.broker.clock.wall()))
            if subscription_ids:
                props["subscription_identifier"] = list(subscription_ids)
        topic = message.topic
        data = encode_publish(topic, message.payload, qos, retain, dup, packet_id, props, self.level)
        if self.client_max_packet and len(data) > self.client_max_packet:
            self.broker.stats.publish_dropped += 1  # MQTT 5 3.1.2.25: not sent, as if delivered
            return False
        self.broker.stats.messages_sent += 1
        self.write(data)
        return True

    # ------------------------------------------------------------------ flow control
    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.session is not None and self.connected:
            from relaymq.broker.delivery import pump

            pump(self.broker, self.session)

    # ------------------------------------------------------------------ closing
    def protocol_violation(self, err: MQTTError) -> None:
        """Close this connection because of a bad packet (log line; MQTT 5 reason code)."""
        log.warning("closing %s (client %s, level %s): %s [reason 0x%02X]", self.peer,
                    self.client_id, self.level or "?", err.message, err.reason_code)
        if self.level == 5:
            kind = (self.reader.last_first_byte or 0) >> 4
            if err.silent:
                pass  # answering a broken DISCONNECT/ping with a DISCONNECT helps nobody
            elif self.connected:
                code = rc.PROTOCOL_ERROR if kind == p.AUTH else err.reason_code
                self.send(p.Disconnect(code))
            elif err.reason_code >= 0x80:
                self.send(p.Connack(False, err.reason_code))
        elif not self.connected and err.reason_code == rc.UNSUPPORTED_PROTOCOL_VERSION:
            self.send(p.Connack(False, 1))  # 3.1.1 return code 1: unacceptable protocol version
        self.close(publish_will=True)

    def disconnect_with(self, reason_code: int, message: str, publish_will: bool = True) -> None:
        """The broker ends the connection (keep-alive, take-over, limits)."""
        log.info("disconnecting %s (client %s): %s", self.peer, self.client_id, message)
        if self.level == 5 and self.connected:
            self.send(p.Disconnect(reason_code))
        self.close(publish_will)

    def close(self, publish_will: bool) -> None:
        if self.closed:
            return
        self.closed = True
        self.link.close()
        self.detach(publish_will)

    def connection_lost(self) -> None:
        """The socket went away: an I/O error counts as an unexpected close (mqtt.md item 25)."""
        if not self.closed:
            self.closed = True
            self.detach(publish_will=True)

    def shutdown(self) -> None:
        """Graceful broker shutdown: close without publishing the will (issue: SIGTERM)."""
        if self.level == 5 and self.connected:
            self.send(p.Disconnect(rc.SERVER_SHUTTING_DOWN))
        self.will = None
        self.close(publish_will=False)

    def detach(self, publish_will: bool) -> None:
        from relaymq.broker.handle_connect import session_disconnected

        self.broker.connections.discard(self)
        session_disconnected(self, publish_will)

    # ------------------------------------------------------------------ timers
    def check_timers(self, now: float) -> None:
        if self.closed:
            return
        if not self.connected:
            # a socket that never sends CONNECT is closed after a grace period
            if now - self.last_received > 30:
                self.close(publish_will=False)
            return
        if self.keep_alive and now - self.last_received > 1.5 * self.keep_alive:
            # mqtt.md item 21: disconnect after 1.5 x keep alive; the will is published (item 25)
            self.disconnect_with(rc.KEEP_ALIVE_TIMEOUT, "keep alive expired")
            return
        if self.level == 3 and self.session is not None:
            from relaymq.broker.delivery import retransmit_due

            retransmit_due(self.broker, self.session, now)
