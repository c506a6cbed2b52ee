"""Helpers shared by the queue manager tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from relaymq.http.server import HttpServer
from relaymq.message import Message
from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_settings import build_connections
from relaymq.qmgr.channel_listener import HTTP_CHANNEL_PATH


def text_message(body: str, priority: int = -1, correl_id: bytes | None = None) -> Message:
    """An MQSTR message with ``body``."""
    message = Message()
    message.mq.md.Format = "MQSTR"
    message.mq.md.Priority = priority
    if correl_id is not None:
        message.mq.md.CorrelId = correl_id.ljust(24, b"\0")
    message.mq.body = body.encode()
    return message


def body(message: Message | None) -> str | None:
    return None if message is None else message.mq.body.decode()


#: Channel retries short enough for tests (a link's first connect may race the listener).
FAST_LINK = {"retry_initial_ms": 20, "retry_max_ms": 200, "timeout_ms": 5000}


@dataclass
class LinkedQueueManagers:
    """Two queue managers in memory, the ``device`` linked to the ``server``'s channel listener
    on 127.0.0.1, by TCP or through the HTTP adapter (everyplace.md items 22-24, 29, 30)."""

    server: QueueManager
    device: QueueManager
    server_channels: ChannelService
    device_channels: ChannelService


@asynccontextmanager
async def linked_queue_managers(prepare: Callable[[QueueManager, QueueManager], None], *,
                                server: str = "TGT", device: str = "DEV",
                                link: dict[str, object] | None = None,
                                adapter: str = "tcp", server_options: dict[str, Any] | None = None,
                                device_options: dict[str, Any] | None = None) -> AsyncIterator[LinkedQueueManagers]:
    """The two-queue-manager set-up of the channel tests: open ``server`` and ``device`` (in
    memory, with ``server_options`` and ``device_options``: a clock, a rule, ...),
    ``prepare(server_qm, device_qm)`` (define queues, put what must wait), start the server's
    listener (anonymous peers: these tests are about the protocol, test_channel_security is
    about who may use it; ``adapter="http"``: its route on an HTTP server instead) and the
    device's link to it; stop both and close both at the end."""
    server_qm = QueueManager.open(server, None, **(server_options or {}))
    device_qm = QueueManager.open(device, None, **(device_options or {}))
    server_channels = device_channels = http = None
    try:
        prepare(server_qm, device_qm)
        if adapter == "http":
            http = HttpServer()
            await http.start("127.0.0.1", 0)
            server_channels = ChannelService(server_qm, listen_host=None, authenticator=ChannelAuthenticator.anonymous())
            await server_channels.start(http)
            address = f"http://127.0.0.1:{http.port}{HTTP_CHANNEL_PATH}"
        else:
            server_channels = ChannelService(server_qm, listen_host="127.0.0.1", listen_port=0,
                                             authenticator=ChannelAuthenticator.anonymous())
            await server_channels.start()
            address = f"127.0.0.1:{server_channels.port}"
        table = {**FAST_LINK, **(link or {}), "name": server, "address": address}
        device_channels = ChannelService(device_qm, build_connections([table], "connection", None), listen_host=None)
        await device_channels.start()
        yield LinkedQueueManagers(server_qm, device_qm, server_channels, device_channels)
    finally:
        if device_channels is not None:
            await device_channels.stop()
        if server_channels is not None:
            await server_channels.stop()
        if http is not None:
            await http.stop()
        device_qm.close()
        server_qm.close()
