"""An asyncio HTTP/1.0 and HTTP/1.1 server on h11, with a small router (this module: the router,
the listener and its limits; relaymq.http.exchange: one connection's requests and responses).

Why h11: the HTTP grammar (request line, headers, Content-Length versus chunked bodies,
keep-alive rules of 1.0 and 1.1) is handled by a sans-I/O state machine that is well tested,
and this module only moves bytes between it and the socket. Parts of the product add routes
(the REST interface, the channel protocol's HTTP adapter, flows' HTTP input nodes) on the one
server the HTTP service starts.

Limits keep one bad client from hurting the others: at most ``max_connections`` open
connections, ``max_connections_per_address`` from one address (one over is closed at once, with
a rate-limited log line); a request head larger than
``max_header_bytes`` is answered 431, a body larger than ``max_body_bytes`` 413 (before it is
read when Content-Length says so), malformed HTTP 400; each of these closes that connection
only. An idle keep-alive connection is closed after ``idle_timeout`` seconds; once a request
has begun, its whole head (request line and headers) must arrive within ``header_timeout``
seconds or it is answered 408 and closed, so a client that trickles bytes (slow loris) cannot
hold a connection; likewise its whole body must arrive within ``body_timeout`` seconds of the
end of the head (408 and closed), and ``idle_timeout`` bounds each wait between its pieces.

A request in HTTP/1.0 (the seed's SOAP request line) is answered with an ``HTTP/1.0`` status
line; h11 writes 1.1 and closes such a connection after the response, as 1.0 wants. Every
response carries Content-Length, computed from the body.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from relaymq.http.tcp_server import TcpServer
from relaymq.ratelog import RefusalLog
from relaymq.http.admission import UNLIMITED, Admission

log = logging.getLogger("relaymq.http")
#: One rate-limited log of refused HTTP connections (relaymq.http.admission).
REFUSALS = RefusalLog(log)

#: Largest request line plus headers accepted by default (bytes).
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
#: Largest request body accepted by default (bytes).
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Seconds an idle connection (or a slow request) may keep its socket.
DEFAULT_IDLE_TIMEOUT = 60.0
#: Seconds from the first byte of a request to the end of its head.
DEFAULT_HEADER_TIMEOUT = 20.0
#: Seconds from the end of a request's head to the end of its body.
DEFAULT_BODY_TIMEOUT = 120.0
#: Bytes asked of the socket per read.
READ_SIZE = 65536
SERVER_NAME = b"relaymq"


@dataclass
class HttpRequest:
    """One request as the handler sees it: the body is complete, header names lower-case.

    ``path`` is the request path without its query string, still percent-encoded (so a
    ``%2F`` inside a segment stays distinguishable from a separator); ``path_params`` are the
    decoded values the route pattern captured.
    """

    method: str
    path: str
    query: dict[str, list[str]] = field(default_factory=dict)
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    http_version: str = "1.1"
    path_params: dict[str, str] = field(default_factory=dict)
    remote: tuple[Any, ...] = ()
    #: Set by an authenticator (relaymq.http.auth) once the caller is known.
    user: str | None = None
    #: True when the caller proved the broker's own administrator credential
    #: (relaymq.auth.admin_credential).
    administrator: bool = False

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or None."""
        wanted = name.lower()
        for key, value in self.headers:
            if key == wanted:
                return value
        return None

    def query_value(self, name: str) -> str | None:
        """The first value of query parameter ``name``, or None."""
        values = self.query.get(name)
        return values[0] if values else None


@dataclass
class HttpResponse:
    """A complete response; Content-Length, Date and Server are added when sent. The client
    (relaymq.http.client) also fills ``reason`` and ``http_version`` from the status line it
    received."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    reason: str = ""
    http_version: str = "1.1"


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


def text_response(status: int, message: str, headers: list[tuple[str, str]] | None = None) -> HttpResponse:
    """A short plain-text response (the server's own errors)."""
    return HttpResponse(status, [("content-type", "text/plain; charset=utf-8"), *(headers or [])],
                        (message + "\n").encode())


class _Route:
    """A compiled pattern: literal segments, ``{name}`` (one segment) and at most one
    ``{name:path}`` (one or more segments, slashes included; literals may follow it, as in
    ``/topic/{topic:path}/message``)."""

    def __init__(self, method: str, pattern: str, handler: Handler) -> None:
        if not pattern.startswith("/"):
            raise ValueError(f"route pattern must start with '/': {pattern!r}")
        self.method = method.upper()
        self.pattern = pattern
        self.handler = handler
        self.segments: list[tuple[str, str]] = []  # (kind, text): kind literal|param|rest
        parts = pattern.strip("/").split("/") if pattern.strip("/") else []
        for part in parts:
            if part.startswith("{") and part.endswith("}"):
                name, _, kind = part[1:-1].partition(":")
                if kind == "path":
                    if any(k == "rest" for k, _ in self.segments):
                        raise ValueError(f"only one {{name:path}} parameter per pattern: {pattern!r}")
                    self.segments.append(("rest", name))
                elif kind:
                    raise ValueError(f"unknown parameter kind {kind!r} in {pattern!r}")
                else:
                    self.segments.append(("param", name))
            else:
                self.segments.append(("literal", part))

    @staticmethod
    def _match_fixed(segments: list[tuple[str, str]], raw: list[str], params: dict[str, str]) -> bool:
        if len(segments) != len(raw):
            return False
        for (kind, text), value in zip(segments, raw, strict=False):
            segment = urllib.parse.unquote(value)
            if kind == "literal":
                if segment != text:
                    return False
            elif not segment:
                return False
            else:
                params[text] = segment
        return True

    def match(self, raw_segments: list[str]) -> dict[str, str] | None:
        params: dict[str, str] = {}
        rest = next((i for i, (kind, _) in enumerate(self.segments) if kind == "rest"), None)
        if rest is None:
            return params if self._match_fixed(self.segments, raw_segments, params) else None
        tail = len(self.segments) - rest - 1
        if len(raw_segments) < rest + 1 + tail:
            return None
        middle = raw_segments[rest:len(raw_segments) - tail]
        if not self._match_fixed(self.segments[:rest], raw_segments[:rest], params):
            return None
        if not self._match_fixed(self.segments[rest + 1:], raw_segments[len(raw_segments) - tail:], params):
            return None
        value = urllib.parse.unquote("/".join(middle))
        if not value.strip("/"):
            return None
        params[self.segments[rest][1]] = value
        return params


class Router:
    """Routes by method and path pattern; 404 for an unknown path, 405 (with Allow) for a
    known path and another method. ``"*"`` as the method matches any method."""

    def __init__(self) -> None:
        self._routes: list[_Route] = []

    def add_route(self, method: str, pattern: str, handler: Handler) -> None:
        route = _Route(method, pattern, handler)
        for existing in self._routes:
            if existing.method == route.method and existing.pattern == route.pattern:
                raise ValueError(f"route {route.method} {pattern} is already defined")
        self._routes.append(route)

    def remove_route(self, method: str, pattern: str) -> None:
        method = method.upper()
        before = len(self._routes)
        self._routes = [r for r in self._routes if not (r.method == method and r.pattern == pattern)]
        if len(self._routes) == before:
            raise KeyError(f"no route {method} {pattern}")

    def resolve(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], list[str]]:
        """(handler, params, allowed methods); handler None when nothing matches the method."""
        raw = path.strip("/").split("/") if path.strip("/") else []
        allowed: list[str] = []
        for route in self._routes:
            params = route.match(raw)
            if params is None:
                continue
            if route.method in ("*", method) or (method == "HEAD" and route.method == "GET"):
                return route.handler, params, allowed
            allowed.append(route.method)
        return None, {}, allowed

    async def dispatch(self, request: HttpRequest) -> HttpResponse:
        handler, params, allowed = self.resolve(request.method, request.path)
        if handler is None:
            if allowed:
                return text_response(405, "method not allowed", [("allow", ", ".join(sorted(set(allowed))))])
            return text_response(404, "not found")
        request.path_params = params
        return await handler(request)


class HttpServer:
    """The HTTP server: a Router plus the connections that feed it.

    ``await start(host, port, ssl_context)`` listens (port 0 picks a free port, see ``port``);
    ``await stop()`` closes the listener and every connection.
    """

    def __init__(self, *, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 header_timeout: float = DEFAULT_HEADER_TIMEOUT,
                 body_timeout: float = DEFAULT_BODY_TIMEOUT,
                 max_connections: int = UNLIMITED, max_connections_per_address: int = UNLIMITED) -> None:
        self.router = Router()
        self.max_header_bytes = max_header_bytes
        self.max_body_bytes = max_body_bytes
        self.idle_timeout = idle_timeout
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self._tcp = TcpServer(self._serve, Admission("HTTP", max_connections, max_connections_per_address,
                                                     REFUSALS))
        #: Optional relaymq.http.auth.BasicAuth the service sets; routes that need callers to
        #: log in wrap their handler with it.
        self.auth: Any = None

    # Router facade (the contract other parts code to).
    def add_route(self, method: str, pattern: str, handler: Handler) -> None:
        self.router.add_route(method, pattern, handler)

    def remove_route(self, method: str, pattern: str) -> None:
        self.router.remove_route(method, pattern)

    @property
    def host(self) -> str:
        return self._tcp.host

    @property
    def port(self) -> int:
        return self._tcp.port

    async def start(self, host: str = "127.0.0.1", port: int = 0,
                    ssl_context: ssl.SSLContext | None = None) -> None:
        await self._tcp.start(host, port, ssl_context, limit=READ_SIZE)

    async def stop(self) -> None:
        await self._tcp.stop()

    def addresses(self) -> list[str]:
        """``host:port`` of every bound socket (log lines)."""
        return self._tcp.addresses()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The h11 side of a connection is imported by the first connection: a broker whose HTTP
        # port nobody calls does not load the HTTP grammar (issue 16: a faster start, row 9).
        from relaymq.http.exchange import Exchange

        connection = Exchange(self, reader, writer)
        try:
            await connection.run()
        except ConnectionError as error:
            connection.lost(error)
        except (asyncio.CancelledError, TimeoutError, ssl.SSLError):
            pass
        except Exception:  # a bug here must not take the server down
            log.exception("HTTP connection failed")
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, ssl.SSLError, asyncio.CancelledError, OSError):
                pass
