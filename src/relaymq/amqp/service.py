"""The AMQP 1.0 listener inside the broker process (relaymq.services.registry SERVICE_MODULES;
docs/amqp.md).

The listener's modules import python-qpid-proton (the ``amqp`` extra) only when it is
enabled. ``start`` binds ``[amqp] host:port`` (and ``tls_port`` with a certificate) when ``[amqp]
enabled``; it starts after the queue manager and the pub/sub engine, whose public faces the
links use (``context.services["qmgr"]``, ``["qmgr.aio"]``, the broker). A port in use stops
start-up with one line naming the key. ``stop`` closes the listening sockets, then every
connection (``amqp:connection:forced``), ending their links: get-unconfirmed messages go back
to their queues, non-durable subscriptions end, durable ones stay.
"""

from __future__ import annotations

import logging
import ssl
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from relaymq.net.tls import server_context

if TYPE_CHECKING:
    from relaymq.amqp.settings import AmqpSettings
    from relaymq.amqp.listener import AmqpListener

log = logging.getLogger("relaymq.amqp")


class AmqpService:
    def __init__(self, listener: AmqpListener | None) -> None:
        self.listener = listener

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.listener.servers] if self.listener is not None else []

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()


async def start(context: Any) -> AmqpService:
    from relaymq.services.contract import ServiceError

    settings: AmqpSettings | None = context.config.configured("amqp")
    if settings is None or not settings.enabled:
        return AmqpService(None)
    try:  # the amqp extra: a broker that does not enable the listener does not need it
        from relaymq.amqp.listener import AmqpListener
    except ImportError as error:
        raise ServiceError(f"config error: amqp.enabled: the AMQP listener needs python-qpid-proton"
                           f" (pip install 'relaymq[amqp]'): {error}") from None
    qm_aio = context.services.get("qmgr.aio")
    if qm_aio is not None:  # messages a crash left locked for AMQP receivers: delivered again
        from relaymq.amqp.queue_links import recover

        unlocked = await recover(qm_aio, await qm_aio.queue_names())
        if unlocked:
            log.info("AMQP: %d message(s) locked for receivers before a restart are visible again", unlocked)
    services = dict(context.services)
    services["broker"] = context.broker
    listener = AmqpListener(settings, services)
    try:  # the listeners' TLS context (TLS 1.2 and up); no client certificates here
        ssl_context = server_context(SimpleNamespace(tls_cert=settings.tls_cert, tls_key=settings.tls_key, tls_ca=""))
    except (OSError, ssl.SSLError) as error:
        raise ServiceError(f"config error: amqp.tls_cert: cannot load the certificate: {error}") from None
    for key, port, tls in (("port", settings.port, None), ("tls_port", settings.tls_port, ssl_context)):
        if key == "tls_port" and tls is None:
            continue
        try:
            servers = await listener.listen(port, tls)
        except OSError as error:
            await listener.stop()
            raise ServiceError(f"config error: amqp.{key}: cannot listen on {settings.host}:{port}: "
                               f"{error.strerror or error}") from None
        log.info("AMQP 1.0%s listening on %s", " (TLS)" if tls else "", ", ".join(servers.addresses()))
    context.services["amqp"] = listener
    return AmqpService(listener)
