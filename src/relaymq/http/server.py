"""An asyncio HTTP/1.0 and HTTP/1.1 server on h11, with a small router.

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
from http import HTTPStatus
from typing import Any

import h11

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
_READ_SIZE = 65536
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
        await self._tcp.start(host, port, ssl_context, limit=_READ_SIZE)

    async def stop(self) -> None:
        await self._tcp.stop()

    def addresses(self) -> list[str]:
        """``host:port`` of every bound socket (log lines)."""
        return self._tcp.addresses()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self, reader, writer)
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


class _BodyTooLarge(Exception):
    pass


class _HeadTooLarge(Exception):
    pass


class _HeadTooSlow(Exception):
    pass


class _BodyTooSlow(Exception):
    pass


class _Connection:
    """One client connection: read requests with h11, dispatch, write responses."""

    def __init__(self, server: HttpServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=server.max_header_bytes)
        peer = writer.get_extra_info("peername")
        self.remote: tuple[Any, ...] = tuple(peer) if isinstance(peer, (tuple, list)) else ()

    async def _next_event(self, deadline: float) -> Any:
        """The next h11 event of a request's body, reading as needed: ``idle_timeout`` per
        read (TimeoutError), and all of them by ``deadline`` (loop time; _BodyTooSlow)."""
        loop = asyncio.get_running_loop()
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self.h11.they_are_waiting_for_100_continue:
                await self._send(h11.InformationalResponse(status_code=100, headers=[]))
            left = deadline - loop.time()
            if left <= 0:
                raise _BodyTooSlow()
            try:
                data = await asyncio.wait_for(self.reader.read(_READ_SIZE), min(self.server.idle_timeout, left))
            except TimeoutError:
                if self.server.idle_timeout < left:
                    raise
                raise _BodyTooSlow() from None
            self.h11.receive_data(data)

    async def _next_request(self) -> Any:
        """The next request's head event: the connection may idle ``idle_timeout`` before it
        begins; once a byte of it arrived, the whole head must within ``header_timeout``."""
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            if deadline is None and self.h11.trailing_data[0]:
                deadline = loop.time() + self.server.header_timeout  # pipelined: begun already
            wait = self.server.idle_timeout if deadline is None else min(self.server.idle_timeout, deadline - loop.time())
            if wait <= 0:
                raise _HeadTooSlow()
            try:
                data = await asyncio.wait_for(self.reader.read(_READ_SIZE), wait)
            except TimeoutError:
                if deadline is not None:
                    raise _HeadTooSlow() from None
                raise
            if deadline is None and data:
                deadline = loop.time() + self.server.header_timeout
            self.h11.receive_data(data)

    async def _send(self, *events: Any, http_10: bool = False) -> None:
        for event in events:
            data = self.h11.send(event)
            if data and http_10 and isinstance(event, h11.Response) and data.startswith(b"HTTP/1.1 "):
                data = b"HTTP/1.0 " + data[9:]  # answer 1.0 in kind (h11 only writes 1.1)
            if data:
                self.writer.write(data)
        await self.writer.drain()

    async def run(self) -> None:
        while True:
            try:
                event = await self._next_request()
            except h11.RemoteProtocolError as error:
                await self._fail(error.error_status_hint, f"bad request: {error}")
                return
            except _HeadTooSlow:
                await self._fail(408, f"request head not complete within {self.server.header_timeout:g} seconds")
                return
            except TimeoutError:
                return
            if isinstance(event, (h11.ConnectionClosed,)) or event is h11.PAUSED:
                return
            if not isinstance(event, h11.Request):
                return
            try:
                request = await self._read_request(event)
            except _HeadTooLarge:
                await self._fail(431, f"request head larger than {self.server.max_header_bytes} bytes")
                return
            except _BodyTooLarge:
                await self._fail(413, f"request body larger than {self.server.max_body_bytes} bytes")
                return
            except _BodyTooSlow:
                await self._fail(408, f"request body not complete within {self.server.body_timeout:g} seconds")
                return
            except h11.RemoteProtocolError as error:
                await self._fail(error.error_status_hint, f"bad request: {error}")
                return
            except TimeoutError:
                return
            if request is None:
                return
            try:
                response = await self.server.router.dispatch(request)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handler for %s %s failed", request.method, request.path)
                response = text_response(500, "internal server error")
            await self._respond(response, head=request.method == "HEAD", http_10=request.http_version == "1.0")
            if self.h11.our_state is h11.MUST_CLOSE or self.h11.their_state is h11.MUST_CLOSE:
                return
            try:
                self.h11.start_next_cycle()
            except h11.LocalProtocolError:
                return

    async def _read_request(self, event: h11.Request) -> HttpRequest | None:
        # h11 bounds only a head that arrives in pieces; one that arrives whole is measured here.
        head_size = len(event.target) + sum(len(n) + len(v) + 4 for n, v in event.headers)
        if head_size > self.server.max_header_bytes:
            raise _HeadTooLarge()
        headers = [(name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in event.headers]
        for name, value in headers:
            if name == "content-length" and value.strip().isdigit() and int(value) > self.server.max_body_bytes:
                raise _BodyTooLarge()
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.server.body_timeout
        while True:
            part = await self._next_event(deadline)
            if isinstance(part, h11.Data):
                size += len(part.data)
                if size > self.server.max_body_bytes:
                    raise _BodyTooLarge()
                chunks.append(part.data)
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                return None
        target = event.target.decode("latin-1")
        path, _, query_string = target.partition("?")
        if not path.startswith("/"):  # absolute-form target: keep the path part only
            path = urllib.parse.urlsplit(target).path or "/"
            query_string = urllib.parse.urlsplit(target).query
        return HttpRequest(
            method=event.method.decode("ascii").upper(),
            path=path,
            query=urllib.parse.parse_qs(query_string, keep_blank_values=True),
            headers=headers,
            body=b"".join(chunks),
            http_version=event.http_version.decode("ascii"),
            remote=self.remote,
        )

    async def _respond(self, response: HttpResponse, *, head: bool = False, http_10: bool = False) -> None:
        headers = [(k, v) for k, v in response.headers if k.lower() not in ("content-length", "transfer-encoding")]
        headers.append(("content-length", str(len(response.body))))
        if not any(k.lower() == "date" for k, _ in headers):
            from email.utils import formatdate  # by the first response: 0.2 MB an unused HTTP port does not need

            headers.append(("date", formatdate(usegmt=True)))
        headers.append(("server", SERVER_NAME.decode()))
        try:
            reason = HTTPStatus(response.status).phrase.encode()
        except ValueError:
            reason = b""
        events: list[Any] = [h11.Response(status_code=response.status, headers=headers, reason=reason)]
        if response.body and not head:
            events.append(h11.Data(data=response.body))
        events.append(h11.EndOfMessage())
        await self._send(*events, http_10=http_10)

    def lost(self, error: Exception) -> None:
        """The socket failed (a reset): one log line when a request was under way."""
        if self.h11.their_state is h11.SEND_BODY or self.h11.trailing_data[0]:
            log.info("HTTP client %s closed its connection in the middle of a request: %s",
                     _peer(self.remote), error)

    async def _fail(self, status: int, message: str) -> None:
        """Answer a request that cannot be served, then close this connection. A peer that
        went away halfway through its request costs one log line and is answered only if it
        still reads (issue 15 finding 8: each logged a traceback, from writing to the closed
        socket)."""
        if self.reader.at_eof() or self.writer.is_closing():
            log.info("HTTP client %s closed its connection in the middle of a request: %s",
                     _peer(self.remote), message)
        if self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE) or self.writer.is_closing():
            return
        response = text_response(status, message, [("connection", "close")])
        try:
            await self._respond(response)
        except ConnectionError:
            return  # the peer is gone: nobody to tell
        except h11.LocalProtocolError:
            # h11 refuses once it cannot frame a response (e.g. no request line at all); write
            # a minimal HTTP/1.1 response by hand so the client still learns why.
            reason = {400: b"Bad Request", 408: b"Request Timeout", 413: b"Payload Too Large",
                      431: b"Request Header Fields Too Large"}
            if self.writer.is_closing():
                return
            self.writer.write(b"HTTP/1.1 %d %s\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
                              % (status, reason.get(status, b"Error")))
            await self.writer.drain()


def _peer(remote: tuple[Any, ...]) -> str:
    """``host:port`` of a peer address, ``?`` when unknown (log lines)."""
    return f"{remote[0]}:{remote[1]}" if len(remote) >= 2 else "?"
