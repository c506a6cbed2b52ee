"""The TCP (or TLS) server under the HTTP server and the queue manager's channel listener: it
keeps the task of every open connection, so ``stop()`` ends them all before it returns
instead of leaving handlers running against a stopped service."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class TcpServer:
    """``handle(reader, writer)`` runs as one task per accepted connection."""

    def __init__(self, handle: Handler) -> None:
        self._handle = handle
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.host = ""
        self.port = 0

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None,
                    **options: Any) -> None:
        """Listen on ``host:port`` (0: any free port, then in ``port``); ``options`` go to
        ``asyncio.start_server`` (``limit``, for one)."""
        self._server = await asyncio.start_server(self._serve, host, port, ssl=ssl_context, **options)
        self.host = host
        self.port = self._server.sockets[0].getsockname()[1]

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
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        finally:
            self._tasks.discard(task)
