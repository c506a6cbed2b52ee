"""A real HttpServer on a loopback port, run in its own event loop thread, so tests can talk
to it with blocking peers (http.client, raw sockets, curl) as outside clients would."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from relaymq.http.server import HttpRequest, HttpResponse, HttpServer


class ServerThread:
    def __init__(self, **limits: object) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = HttpServer(**limits)  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def call(self, coro: object, timeout: float = 10.0) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def start(self) -> ServerThread:
        self.thread.start()
        self.call(self.server.start("127.0.0.1", 0))
        return self

    def close(self) -> None:
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    @property
    def port(self) -> int:
        return self.server.port


async def echo(request: HttpRequest) -> HttpResponse:
    """Echo what the server parsed, so tests see exactly what a handler receives."""
    import json

    return HttpResponse(200, [("content-type", "application/json")], json.dumps({
        "method": request.method, "path": request.path, "query": request.query,
        "params": request.path_params, "body": request.body.decode("latin-1"),
        "version": request.http_version, "x": request.header("X-Test"),
    }).encode())


@pytest.fixture
def http_server() -> Iterator[ServerThread]:
    thread = ServerThread(max_header_bytes=4096, max_body_bytes=1000, idle_timeout=5.0).start()
    thread.server.add_route("*", "/echo/{name}", echo)
    thread.server.add_route("POST", "/topic/{topic:path}", echo)
    try:
        yield thread
    finally:
        thread.close()
