"""A small asyncio HTTP/1.1 client on h11: one request per connection, with a deadline.

Why not urllib: it blocks, and every caller (the channel protocol's HTTP adapter, flows'
HTTP request node, tests) runs inside the broker's event loop. One connection per request
keeps the client simple and stateless; callers that need throughput batch their frames.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from collections.abc import Iterable

import h11

from relaymq.http.server import HttpResponse

_READ_SIZE = 65536


class HttpClientError(Exception):
    """The request could not be completed (connection refused, timeout, malformed response)."""


async def request(method: str, url: str, *, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
                  timeout: float, ssl_context: ssl.SSLContext | None = None,
                  max_body_bytes: int = 64 * 1024 * 1024) -> HttpResponse:
    """Send one request and return the whole response; raise HttpClientError on failure
    (TimeoutError included: the whole exchange must finish within ``timeout`` seconds)."""
    try:
        return await asyncio.wait_for(_exchange(method, url, list(headers), body, ssl_context, max_body_bytes),
                                      timeout)
    except TimeoutError:
        raise HttpClientError(f"{method} {url}: no response within {timeout:g}s") from None
    except (OSError, h11.ProtocolError) as error:
        raise HttpClientError(f"{method} {url}: {error}") from None


def _request(conn: h11.Connection, method: str, parts: urllib.parse.SplitResult, headers: list[tuple[str, str]],
             body: bytes) -> bytes:
    """The request's bytes: Host and Content-Length added unless given, and Connection: close."""
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    names = {name.lower() for name, _ in headers}
    all_headers = list(headers)
    if "host" not in names:
        all_headers.insert(0, ("host", parts.netloc))
    if "content-length" not in names and "transfer-encoding" not in names:
        all_headers.append(("content-length", str(len(body))))
    all_headers.append(("connection", "close"))
    data = conn.send(h11.Request(method=method.upper(), target=target, headers=all_headers))
    if body:
        data += conn.send(h11.Data(data=body))
    data += conn.send(h11.EndOfMessage())
    return data


async def _response(conn: h11.Connection, reader: asyncio.StreamReader, what: str, max_body_bytes: int) -> HttpResponse:
    """Read the response to the end (the server closes the connection after it)."""
    response: h11.Response | None = None
    chunks: list[bytes] = []
    size = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(_READ_SIZE))
            continue
        if isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > max_body_bytes:
                raise HttpClientError(f"{what}: response body larger than {max_body_bytes} bytes")
            chunks.append(event.data)
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    if response is None:
        raise HttpClientError(f"{what}: connection closed without a response")
    return HttpResponse(
        status=response.status_code,
        headers=[(n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in response.headers],
        body=b"".join(chunks),
        reason=response.reason.decode("latin-1"),
        http_version=response.http_version.decode("ascii"),
    )


async def _exchange(method: str, url: str, headers: list[tuple[str, str]], body: bytes,
                    ssl_context: ssl.SSLContext | None, max_body_bytes: int) -> HttpResponse:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpClientError(f"unsupported URL {url!r}")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    if secure and ssl_context is None:
        ssl_context = ssl.create_default_context()
    reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=ssl_context if secure else None)
    try:
        conn = h11.Connection(h11.CLIENT)
        writer.write(_request(conn, method, parts, headers, body))
        await writer.drain()
        return await _response(conn, reader, f"{method} {url}", max_body_bytes)
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass
