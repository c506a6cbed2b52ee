"""The real-time transport's listener in the broker process (item 46), started by
relaymq.realtime.service when ``[realtime] enabled``: listens on ``host:port`` (in use: start-up stops naming
``realtime.port``). A real-time client's publication is published through the broker
(``Broker.publish``, QoS 0, not retained: the transport is non-persistent), so MQTT
subscribers, queue subscribers and multicast receivers get it like any other; every
publication the broker routes passes this service's tap, which hands it to the real-time
clients whose filters match (once per client). The JMS priority travels as the MQTT 5 user
property ``JMSPriority``, a response's correlation id as the MQTT 5 Correlation Data.
"""

from __future__ import annotations

import asyncio
import logging
import time

from relaymq.http.admission import Admission, peer_host
from relaymq.net.binding import Servers, create_servers
from relaymq.pubsub.topictree import SubscriptionTree
from relaymq.ratelog import RefusalLog
from relaymq.realtime import frames
from relaymq.realtime.connection import RealtimeConnection
from relaymq.realtime.frames import Publish, Subscribe
from relaymq.realtime.settings import RealtimeSettings
from relaymq.services.contract import ServiceContext, ServiceError
from relaymq.store.base import StoredMessage

log = logging.getLogger("relaymq.realtime")
REFUSALS = RefusalLog(log)
PRIORITY_PROPERTY = "JMSPriority"
#: How often the connections' ping timers are looked at, at most (seconds).
TICK = 0.5


class RealtimeService:
    def __init__(self, context: ServiceContext, settings: RealtimeSettings) -> None:
        self.context = context
        self.settings = settings
        self.admission = Admission("realtime", settings.max_connections, settings.max_connections_per_address,
                                   REFUSALS)
        self.connections: set[RealtimeConnection] = set()
        self.tree: SubscriptionTree[RealtimeConnection] = SubscriptionTree()
        self.servers: Servers | None = None
        self._ticker: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return self.servers.port if self.servers is not None else 0

    # ------------------------------------------------------------------ client -> broker
    def publish(self, frame: Publish, client_id: str = "") -> None:
        """A client's publication (its topic already checked by the session: valid, not
        reserved), if the ACL lets an anonymous client write it: the transport authenticates
        nobody. A refused one is dropped, as MQTT 3.1.1 drops one, and logged (rate-limited:
        any client on the network can cause it)."""
        acl = self.context.broker.acl
        if acl is not None and not acl.can_publish(None, client_id, frame.topic):
            REFUSALS.refused("real-time client %s may not publish on %r: the ACL refuses it", client_id, frame.topic)
            return
        properties: dict = {}
        if frame.priority != frames.DEFAULT_PRIORITY:
            properties["user_property"] = [(PRIORITY_PROPERTY, str(frame.priority))]
        if frame.correlation:
            properties["correlation_data"] = frame.correlation
        self.context.broker.publish(frame.topic, frame.payload, qos=0, properties=properties or None)

    def subscribe(self, connection: RealtimeConnection, frame: Subscribe) -> None:
        if frame.unsubscribe:
            self.tree.remove(frame.topic_filter, connection)
        else:
            self.tree.insert(frame.topic_filter, connection, connection)

    # ------------------------------------------------------------------ broker -> clients
    def tap(self, message: StoredMessage) -> int:
        matches = self.tree.match(message.topic)
        if not matches:
            return 0
        publish = Publish(message.topic, message.payload, _priority(message.properties),
                          bytes(message.properties.get("correlation_data") or b""))
        receivers = {id(match[1]): match[1] for match in matches}
        acl = self.context.broker.acl
        if acl is not None:
            receivers = {key: c for key, c in receivers.items()
                         if acl.can_receive(None, c.client_id, message.topic)}
        for connection in receivers.values():
            connection.deliver(publish)
        return len(receivers)

    def detach(self, connection: RealtimeConnection) -> None:
        self.connections.discard(connection)
        if connection.session is not None:
            for topic_filter in connection.session.filters:
                self.tree.remove(topic_filter, connection)
            if connection.session.out.dropped:
                log.info("real-time client %s: %d messages dropped over max_broker_queue_size",
                         connection.session.client_id, connection.session.out.dropped)
        if connection.transport is not None:
            self.admission.release(peer_host(connection.transport.get_extra_info("peername")))

    def start_ticker(self) -> None:
        self._ticker = asyncio.create_task(self._tick())

    async def _tick(self) -> None:
        interval = self.settings.broker_ping_interval / 1000
        period = min(TICK, interval / 2) if interval else TICK
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for connection in list(self.connections):
                connection.tick(now)

    async def stop(self) -> None:
        if self.tap in self.context.broker.publication_taps:
            self.context.broker.publication_taps.remove(self.tap)
        if self._ticker is not None:
            self._ticker.cancel()
        if self.servers is not None:
            self.servers.close()
            for connection in list(self.connections):
                connection.shutdown()
            self.servers.abort_clients()


def _priority(properties: dict) -> int:
    for name, value in properties.get("user_property") or ():
        if name == PRIORITY_PROPERTY and value.isdigit() and int(value) <= 9:
            return int(value)
    return frames.DEFAULT_PRIORITY


async def start(context: ServiceContext, settings: RealtimeSettings) -> RealtimeService:
    """Listen and tap the broker's publications; ServiceError when the port cannot be had."""
    service = RealtimeService(context, settings)
    loop = asyncio.get_running_loop()

    async def create(address: str, port: int) -> asyncio.base_events.Server:
        return await loop.create_server(lambda: RealtimeConnection(service), address, port)

    try:
        service.servers = await create_servers(create, settings.host, settings.port)
    except OSError as error:
        raise ServiceError(f"config error: realtime.port: cannot listen on {settings.host}:{settings.port}: "
                           f"{error.strerror or error}") from None
    context.broker.publication_taps.append(service.tap)
    service.start_ticker()
    context.services["realtime"] = service
    log.info("real-time transport listening on %s", ", ".join(service.servers.addresses()))
    return service
