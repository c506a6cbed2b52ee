"""One MQTT bridge at run time: its local session in this broker (``local_link.py``), its
connection to the remote broker (TCP or TLS, reconnected with back-off), and the
``Forwarder`` between them. Loop prevention: the local subscriptions are No Local (a
publication the bridge brought in does not go back out); towards an MQTT 5 remote the
remote subscriptions are No Local too, towards 3.1.1 the CONNECT announces a bridge
(protocol level | 0x80, Mosquitto's ``try_private``) and the remote does not echo."""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from typing import Any

from relaymq.bridge.client import ClientEnd, connect_packet
from relaymq.bridge.forwarder import BridgeCounters, Forwarder, Transform
from relaymq.bridge.local_link import LocalLink, open_local
from relaymq.bridge.settings import BridgeSettings
from relaymq.bridge.topic_map import TopicMap
from relaymq.broker.connection import Connection
from relaymq.config import SESSION_EXPIRY_LIMIT
from relaymq.mqtt import packets as p
from relaymq.mqtt.errors import MQTTError, ProtocolError
from relaymq.pubsub.content_filter import FILTER_PROPERTY

log = logging.getLogger("relaymq.bridge")

#: Seconds to wait for a TCP/TLS connection and then for the CONNACK.
CONNECT_TIMEOUT = 10.0
#: QoS 1/2 publications this broker may have in flight to the bridge's local session.
LOCAL_RECEIVE_MAXIMUM = 1000
#: Bytes waiting for the remote socket past which QoS 0 publications are dropped (counted).
REMOTE_BUFFER_LIMIT = 8 << 20
#: CONNACK return code 1 of MQTT 3.1.1: unacceptable protocol level (a remote without try_private).
UNACCEPTABLE_PROTOCOL = 1


class RemoteRefused(Exception):
    """The remote broker answered CONNECT with a refusal, or closed before answering."""

    def __init__(self, message: str, reason_code: int | None) -> None:
        super().__init__(message)
        self.reason_code = reason_code


def client_ssl(settings: BridgeSettings) -> ssl.SSLContext | None:
    """The TLS context towards the remote: its certificate must chain to ``tls_ca`` (or the
    system's CAs) and name the host unless ``tls_insecure``; ``tls_cert`` is ours."""
    if not settings.tls:
        return None
    context = ssl.create_default_context(cafile=settings.tls_ca or None)
    if settings.tls_insecure:
        context.check_hostname = False
    if settings.tls_cert:
        context.load_cert_chain(settings.tls_cert, settings.tls_key or None)
    return context


class Bridge:
    """A configured bridge: ``start()`` connects both ends in the background, ``stop()`` ends both."""

    def __init__(self, settings: BridgeSettings, broker: Any, *, local_client_id: str | None = None,
                 inbound_transform: Transform | None = None, dynamic: bool = False) -> None:
        self.settings = settings
        self.broker = broker
        self.counters = BridgeCounters()
        level = p.MQTT_5 if settings.protocol == "5" else p.MQTT_311
        self.local = ClientEnd(p.MQTT_5)
        self.remote = ClientEnd(level)
        self.local_client_id = local_client_id or settings.remote_client_id
        self.forwarder = Forwarder(TopicMap(settings.topic, inbound_as_is=dynamic), self.local, self.remote, self._send_local,
                                   self._send_remote, self.counters, inbound_transform)
        #: Remote subscriptions made at run time (a broker network's proxy subscriptions):
        #: filter -> QoS, taken from the remote, with every publication accepted as it is.
        self.dynamic: dict[str, int] = {}
        #: Content filters (``relaymq-filter``, a relaymq remote) of some of them: filter -> text.
        self.dynamic_filters: dict[str, str] = {}
        self._remote_connected = False
        self.private = settings.try_private and level != p.MQTT_5
        self.connection: Connection | None = None  # the local session's connection
        self.local_ready = asyncio.Event()
        self.remote_ready = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._local_closed = asyncio.Event()
        self._local_session_present = False
        self._remote_session_present = False
        #: SUBSCRIBEs waiting for their SUBACK: (local, packet id) -> the filters
        self._subscribing: dict[tuple[bool, int], list[str]] = {}
        self._stopping = False

    @property
    def name(self) -> str:
        return self.settings.name

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._local_loop(), name=f"bridge {self.name} local"),
                       asyncio.create_task(self._remote_loop(), name=f"bridge {self.name} remote")]

    async def stop(self) -> None:
        self._stopping = True
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(self.remote.encode(p.Disconnect()))
            writer.close()
        conn = self.connection
        if conn is not None and not conn.closed:
            conn.data_received(self.local.encode(p.Disconnect()))  # a normal end: no will, session kept
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _backoff(self, delay: float) -> float:
        return min(delay * 2, self.settings.reconnect_max_ms / 1000.0)

    async def _pause(self, delay: float) -> None:
        await asyncio.sleep(delay * random.uniform(0.8, 1.2))

    # ------------------------------------------------------------------ the local end
    async def _local_loop(self) -> None:
        delay = self.settings.reconnect_initial_ms / 1000.0
        while not self._stopping:
            self._local_closed.clear()
            self._open_local()
            await self._local_closed.wait()
            self.local_ready.clear()
            self.forwarder.target_down(self.forwarder.inbound)
            if self._stopping:
                return
            log.warning("bridge %s: its session in this broker ended; again in %.1f s", self.name, delay)
            await self._pause(delay)
            delay = self._backoff(delay)

    def _open_local(self) -> None:
        s = self.settings
        link = LocalLink(asyncio.get_running_loop(), self._local_bytes, self._local_closed.set)
        self.local.new_connection()
        self._subscribing = {key: filters for key, filters in self._subscribing.items() if not key[0]}
        self.connection = open_local(self.broker, link, self.name, s.local_principal)
        persistent = not s.clean_session
        connect = connect_packet(p.MQTT_5, self.local_client_id, clean_start=s.clean_session, keep_alive=0,
                                 session_expiry=SESSION_EXPIRY_LIMIT if persistent else 0, username=None,
                                 password=None, bridge_flag=False, receive_maximum=LOCAL_RECEIVE_MAXIMUM)
        self.connection.data_received(self.local.encode(connect))

    def _subscribe(self, local: bool, subscriptions: list[p.Subscription], content_filter: str | None = None) -> None:
        """SUBSCRIBE at this broker (``local``) or the remote, remembering the filters for the
        SUBACK; ``content_filter`` goes as the ``relaymq-filter`` user property (docs/pubsub.md)."""
        end, way = (self.local, self.forwarder.inbound) if local else (self.remote, self.forwarder.outbound)
        packet_id = end.allocate_id(way.carried)
        self._subscribing[(local, packet_id)] = [s.topic_filter for s in subscriptions]
        properties = {"user_property": [(FILTER_PROPERTY, content_filter)]} if content_filter else {}
        (self._send_local if local else self._send_remote)(p.Subscribe(packet_id, subscriptions, properties))

    def _send_local(self, packet: p.Packet) -> None:
        conn = self.connection
        if conn is not None and not conn.closed:
            conn.data_received(self.local.encode(packet))

    def _local_bytes(self, data: bytes) -> None:
        try:
            packets = self.local.receive(data)
        except MQTTError as exc:  # this broker's own bytes: a bug, never a peer's doing
            log.error("bridge %s: bad packet from this broker: %s", self.name, exc)
            return
        for packet in packets:
            self._local_packet(packet)

    def _local_packet(self, packet: p.Packet) -> None:
        if isinstance(packet, p.Connack):
            self._local_connack(packet)
        else:
            self._dispatch(packet, local=True)

    def _dispatch(self, packet: p.Packet, *, local: bool) -> None:
        """A packet from this broker (``local``) or from the remote, once connected."""
        fw = self.forwarder
        where = "this broker" if local else "the remote broker"
        if isinstance(packet, p.Publish):
            (fw.local_publish if local else fw.remote_publish)(packet)
        elif isinstance(packet, (p.Puback, p.Pubrec, p.Pubrel, p.Pubcomp)):
            (fw.local_ack if local else fw.remote_ack)(packet)
        elif isinstance(packet, p.Suback):
            (self.local if local else self.remote).release_id(packet.packet_id)
            for topic_filter, code in zip(self._subscribing.pop((local, packet.packet_id), ()), packet.reason_codes,
                                          strict=False):  # a SUBACK from before a reconnect: no filters
                if code >= 0x80:
                    log.error("bridge %s: %s refused the subscription to %r (reason 0x%02x)", self.name, where,
                              topic_filter, code)
            (self._local_subscribed if local else self._remote_subscribed)()
        elif isinstance(packet, p.Unsuback):
            (self.local if local else self.remote).release_id(packet.packet_id)
        elif isinstance(packet, p.Disconnect):
            log.warning("bridge %s: %s ended the connection (reason 0x%02x)", self.name, where, packet.reason_code)

    def _local_connack(self, packet: p.Connack) -> None:
        if packet.reason_code != 0:
            log.error("bridge %s: this broker refused the bridge's session as %r (reason 0x%02x)", self.name,
                      self.settings.local_principal, packet.reason_code)
            return
        self.local.send_quota = packet.properties.get("receive_maximum", 65535)
        fw = self.forwarder
        fw.source_up(fw.outbound, packet.session_present)
        self._local_session_present = packet.session_present
        rules = fw.topics.outbound
        if rules:
            # No Local: what the bridge brought in does not go back out. Retain As Published:
            # a retained publication stays retained on the other side. Retain Handling 1: a
            # kept subscription does not get the retained publications again at each start.
            # The inbound direction starts at the SUBACK: its publications use identifiers the
            # remote chose, which must not meet the SUBSCRIBE's.
            subscriptions = [p.Subscription(rule.local_filter, rule.qos, True, True, 1) for rule in rules]
            self._subscribe(True, subscriptions)
        else:
            self._local_subscribed()

    def _local_subscribed(self) -> None:
        if not self.forwarder.inbound.up:
            self.forwarder.target_up(self.forwarder.inbound, self._local_session_present)
        self.local_ready.set()

    # ------------------------------------------------------------------ the remote end
    async def _remote_loop(self) -> None:
        s = self.settings
        initial = s.reconnect_initial_ms / 1000.0
        delay = initial
        await self.local_ready.wait()
        while not self._stopping:
            try:
                await self._remote_session()
                delay = initial
                why = "connection lost"
            except RemoteRefused as exc:
                why = str(exc)
                if self.private and (exc.reason_code in (None, UNACCEPTABLE_PROTOCOL)):
                    self.private = False
                    why += "; trying again without the bridge flag (try_private)"
            except (OSError, TimeoutError, MQTTError) as exc:
                why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            finally:
                self._remote_connected = False
                self.remote_ready.clear()
                self.forwarder.target_down(self.forwarder.outbound)
                self._writer = None
            if self._stopping:
                return
            log.warning("bridge %s: %s:%d: %s; again in %.1f s", self.name, s.host, s.port, why, delay)
            await self._pause(delay)
            delay = self._backoff(delay)

    async def _remote_session(self) -> None:
        """Connect, hand the connection to the forwarder, and return when it is lost."""
        s = self.settings
        context = client_ssl(s)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(s.host, s.port, ssl=context, server_hostname=s.host if context else None),
            CONNECT_TIMEOUT)
        try:
            self.remote.new_connection()
            self._subscribing = {key: filters for key, filters in self._subscribing.items() if key[0]}
            connect = connect_packet(self.remote.level, s.remote_client_id, clean_start=s.clean_session,
                                     keep_alive=s.keep_alive,
                                     session_expiry=0 if s.clean_session else s.session_expiry,
                                     username=s.username or None,
                                     password=s.password.encode() if s.username and s.password else None,
                                     bridge_flag=self.private, receive_maximum=LOCAL_RECEIVE_MAXIMUM)
            writer.write(self.remote.encode(connect))
            connack, following = await asyncio.wait_for(self._read_connack(reader), CONNECT_TIMEOUT)
            if connack.reason_code != 0:
                raise RemoteRefused(f"refused the connection (reason {connack.reason_code})", connack.reason_code)
            self._writer = writer
            self.counters.connects += 1
            log.info("bridge %s: connected to %s:%d (%s%s, session %s)", self.name, s.host, s.port,
                     "MQTT 5" if self.remote.level == p.MQTT_5 else "MQTT 3.1.1",
                     " as a bridge" if self.private else "", "kept" if connack.session_present else "new")
            self._remote_connack(connack)
            for packet in following:  # what the remote sent at once after it (resent publications)
                self._dispatch(packet, local=False)
            await self._read_remote(reader, writer)
        finally:
            if not writer.is_closing():
                writer.close()

    async def _read_connack(self, reader: asyncio.StreamReader) -> tuple[p.Connack, list[p.Packet]]:
        """The CONNACK, and the packets that came in the same read behind it (a remote that
        kept the session resends its publications in flight at once: found by the kill -9 test)."""
        while True:
            data = await reader.read(65536)
            if not data:
                raise RemoteRefused("closed the connection before CONNACK", None)
            packets = self.remote.receive(data)
            if packets:
                first = packets[0]
                if not isinstance(first, p.Connack):
                    raise ProtocolError(f"{type(first).__name__} before CONNACK")
                return first, packets[1:]

    def _remote_connack(self, connack: p.Connack) -> None:
        self.remote.send_quota = connack.properties.get("receive_maximum", 65535)
        fw = self.forwarder
        fw.source_up(fw.inbound, connack.session_present)
        self._remote_session_present = connack.session_present
        self._remote_connected = True
        wanted = [(rule.remote_filter, rule.qos) for rule in fw.topics.inbound] + [
            (f, qos) for f, qos in self.dynamic.items() if f not in self.dynamic_filters]
        for topic_filter, content_filter in self.dynamic_filters.items():  # a SUBSCRIBE each: its own property
            self._subscribe(False, [self._remote_subscription(topic_filter, self.dynamic[topic_filter])], content_filter)
        if wanted:
            self._subscribe(False, [self._remote_subscription(f, qos) for f, qos in wanted])
        elif not self.dynamic_filters:
            self._remote_subscribed()

    def _remote_subscription(self, topic_filter: str, qos: int) -> p.Subscription:
        """No Local and Retain As Published towards MQTT 5; Retain Handling 1 for a persistent
        session (a kept subscription does not get the retained publications again)."""
        v5 = self.remote.level == p.MQTT_5
        return p.Subscription(topic_filter, qos, v5, v5, 1 if v5 and not self.settings.clean_session else 0)

    def subscribe_remote(self, topic_filter: str, qos: int, content_filter: str | None = None) -> None:
        """Hold a subscription at the remote broker (now, and after each reconnection), with a
        content filter the remote (a relaymq broker) applies when ``content_filter`` is given."""
        self.dynamic[topic_filter] = qos
        if content_filter:
            self.dynamic_filters[topic_filter] = content_filter
        if self._remote_connected:
            self._subscribe(False, [self._remote_subscription(topic_filter, qos)], content_filter)

    def unsubscribe_remote(self, topic_filter: str) -> None:
        self.dynamic_filters.pop(topic_filter, None)
        if self.dynamic.pop(topic_filter, None) is not None and self._remote_connected:
            self._send_remote(p.Unsubscribe(self.remote.allocate_id(self.forwarder.outbound.carried), [topic_filter]))

    @property
    def connected(self) -> bool:
        return self._remote_connected

    def _remote_subscribed(self) -> None:
        """The outbound direction starts at the SUBACK (see _local_connack)."""
        if not self.forwarder.outbound.up:
            self.forwarder.target_up(self.forwarder.outbound, self._remote_session_present)
        self.remote_ready.set()

    async def _read_remote(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read until the remote closes. Keep alive: a PINGREQ every half keep-alive interval;
        nothing received for 1.5 intervals means the remote is gone."""
        keep_alive = self.settings.keep_alive
        loop = asyncio.get_running_loop()
        last_received = last_ping = loop.time()
        while True:
            try:
                data: bytes | None = await asyncio.wait_for(reader.read(1 << 18), keep_alive / 2 or None)
            except TimeoutError:
                data = None
            now = loop.time()
            if data == b"":
                return
            if data is not None:
                last_received = now
                for packet in self.remote.receive(data):
                    self._dispatch(packet, local=False)
            elif now - last_received > 1.5 * keep_alive:
                raise TimeoutError("nothing from the remote within 1.5 x keep alive")
            if keep_alive and now - last_ping >= keep_alive / 2:
                last_ping = now
                writer.write(self.remote.encode(p.Pingreq()))

    def _send_remote(self, packet: p.Packet) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            return
        if (isinstance(packet, p.Publish) and packet.qos == 0
                and writer.transport.get_write_buffer_size() > REMOTE_BUFFER_LIMIT):
            self.counters.dropped_qos0 += 1
            return
        writer.write(self.remote.encode(packet))

