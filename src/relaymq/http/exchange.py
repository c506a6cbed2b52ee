"""One HTTP connection of relaymq.http.server: requests read with h11, dispatched to the
server's router, responses written (the limits are the server's: see that module).

Imported by the first connection, so an HTTP port nobody calls costs a broker no h11 (issue 16,
bench/compare row 9).
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import h11

from relaymq.http.server import READ_SIZE, SERVER_NAME, HttpRequest, HttpResponse, text_response

if TYPE_CHECKING:
    from relaymq.http.server import HttpServer

log = logging.getLogger("relaymq.http")


class _BodyTooLarge(Exception):
    pass


class _HeadTooLarge(Exception):
    pass


class _HeadTooSlow(Exception):
    pass


class _BodyTooSlow(Exception):
    pass


class Exchange:
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
                data = await asyncio.wait_for(self.reader.read(READ_SIZE), min(self.server.idle_timeout, left))
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
                data = await asyncio.wait_for(self.reader.read(READ_SIZE), wait)
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
