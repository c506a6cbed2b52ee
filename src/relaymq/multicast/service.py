"""Multicast in the broker process (relaymq.services.registry SERVICE_MODULES; item 47).

When ``[multicast] enabled``: the topic plan and the sender are built from the settings (checked
when the configuration was read), the data port is bound (in use: start-up stops naming
``multicast.data_port``), and a publication tap hands every routed publication to the sender,
which multicasts those on enabled topics, so MQTT, psc and flow publishers all reach multicast
receivers. ``stop`` closes the socket.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING

from relaymq.services.contract import ServiceContext, ServiceError
from relaymq.store.base import StoredMessage

if TYPE_CHECKING:
    from relaymq.multicast.settings import MulticastSettings
    from relaymq.multicast.transport import SenderTransport

log = logging.getLogger("relaymq.multicast")


class MulticastService:
    def __init__(self, context: ServiceContext | None, transport: SenderTransport | None) -> None:
        self.context = context
        self.transport = transport

    def tap(self, message: StoredMessage) -> None:
        if self.transport is not None:
            self.transport.publish(message.topic, message.payload)

    async def stop(self) -> None:
        if self.transport is None or self.context is None:
            return
        if self.tap in self.context.broker.publication_taps:
            self.context.broker.publication_taps.remove(self.tap)
        stats = self.transport.sender.stats
        log.info("multicast: %d messages in %d packets, %d NAKs, %d repairs, %d announced lost", stats.messages,
                 stats.packets, stats.naks, stats.repairs, stats.lost)
        self.transport.close()


async def start(context: ServiceContext) -> MulticastService:
    settings: MulticastSettings | None = context.config.configured("multicast")
    if settings is None or not settings.enabled:
        return MulticastService(None, None)
    # imported once enabled: 0.3 MB a broker without multicast does not carry (issue 8, scenario 6)
    from relaymq.multicast.sender import Sender
    from relaymq.multicast.topics import TopicPlan
    from relaymq.multicast.transport import SenderTransport, open_socket

    interface = ""
    if settings.interface:
        try:
            interface = socket.gethostbyname(settings.interface)
        except OSError as error:
            raise ServiceError(f"config error: multicast.interface: cannot resolve {settings.interface!r}:"
                               f" {error}") from None
    plan = TopicPlan(settings)
    try:
        sock = open_socket(interface, settings.data_port, settings.ttl)
    except OSError as error:
        raise ServiceError(f"config error: multicast.data_port: cannot bind UDP {interface or '0.0.0.0'}:"
                           f"{settings.data_port}: {error.strerror or error}") from None
    transport = SenderTransport(Sender(settings, plan), settings.control_interval_ms / 1000)
    await transport.start(sock)
    service = MulticastService(context, transport)
    context.broker.publication_taps.append(service.tap)
    context.services["multicast"] = service
    for region in plan.enabled_regions():
        log.info("multicast: %s -> %s:%d (%s)", region.topic or "the topic root", region.group, settings.data_port,
                 "reliable" if region.reliable else "unreliable")
    return service
