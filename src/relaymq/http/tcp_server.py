"""The TCP (or TLS) server under the HTTP server and the queue manager's channel listener: it
keeps the task of every open connection, so ``stop()`` ends them all before it returns
instead of leaving handlers running against a stopped service. With an ``Admission``
(relaymq.http.admission) it caps its connections, in all and per source address: one over
is closed before a byte is read (issue 15 finding 8)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from relaymq.http.admission import Admission, peer_host
from relaymq.net.binding import Servers, create_servers

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class TcpServer:
    """``handle(reader, writer)`` runs as one task per accepted connection."""

    def __init__(self, handle: Handler, admission: Admission | None = None) -> None:
        self._handle = handle
        self.admission = admission
        self._server: Servers | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.host = ""
        self.port = 0

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None,
                    **options: Any) -> None:
        """Listen on ``host:port`` (0: any free port, then in ``port``; ``"localhost"``: 127.0.0.1
        and ::1, relaymq.net.binding); ``options`` go to ``asyncio.start_server`` (``limit``,
        for one)."""

        async def create(address: str, port: int) -> asyncio.base_events.Server:
            return await asyncio.start_server(self._serve, address, port, ssl=ssl_context, **options)

        self._server = await create_servers(create, host, port)
        self.host = host
        self.port = self._server.port

    def addresses(self) -> list[str]:
        """``host:port`` of every bound socket (log lines)."""
        return self._server.addresses() if self._server is not None else []

    async def stop(self) -> None:
        """Stop accepting, cancel every open connection's task and wait for them to end."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        admission = self.admission
        address = peer_host(writer.get_extra_info("peername"))
        if admission is not None and not admission.admit(address):
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        finally:
            self._tasks.discard(task)
            if admission is not None:
                admission.release(address)
