"""The HTTP server with real sockets: http.client, raw sockets and curl as peers.

Spec: flows-http.md (HTTP transport) and the issue 5 brief (HTTP/1.0 and 1.1, keep-alive,
Content-Length and chunked bodies, 413 on a large body, 400 on malformed requests closing only
that connection, router with {param} patterns)."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess

import pytest


def _conn(server) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)


def _raw(server, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def test_keep_alive_serves_several_requests_on_one_connection(http_server):
    """HTTP/1.1 keep-alive: three requests over one socket (brief item 1)."""
    conn = _conn(http_server)
    for index in range(3):
        conn.request("POST", f"/echo/n{index}?a=1&a=2&b=", body=f"body{index}".encode(),
                     headers={"X-Test": "yes"})
        response = conn.getresponse()
        got = json.loads(response.read())
        assert response.status == 200
        assert got["params"] == {"name": f"n{index}"}
        assert got["body"] == f"body{index}"
        assert got["query"] == {"a": ["1", "2"], "b": [""]}
        assert got["x"] == "yes"
        assert got["version"] == "1.1"
    sock = conn.sock
    assert sock is not None  # still the same open socket
    conn.close()


def test_chunked_request_body_is_assembled(http_server):
    """Transfer-Encoding: chunked request bodies arrive whole (brief item 1)."""
    conn = _conn(http_server)
    conn.request("PUT", "/echo/c", body=iter([b"ab", b"cd", b"ef"]), encode_chunked=True,
                 headers={"Transfer-Encoding": "chunked"})
    got = json.loads(conn.getresponse().read())
    assert got["body"] == "abcdef" and got["method"] == "PUT"


def test_http_10_request_is_answered_in_http_10_and_closed(http_server):
    """HTTP/1.0 without keep-alive (the seed's request line, flows-http.md item 8; seed 000
    l.1992-1996: the response's status line starts with HTTP/1.0): answered with an HTTP/1.0
    status line and Content-Length, then the server closes; a 1.1 request still gets 1.1."""
    reply = _raw(http_server, b"GET /echo/old HTTP/1.0\r\n\r\n")
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK\r\n")
    assert f"content-length: {len(body)}".encode() in head.lower()
    assert json.loads(body)["version"] == "1.0"
    reply = _raw(http_server, b"GET /echo/new HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_request_head_that_trickles_in_gets_408(http_server):
    """A client that sends its head a byte at a time (slow loris) cannot keep the connection:
    the whole head must arrive within header_timeout (here 1 s), however often bytes come;
    the server answers 408 and closes, well before the 30 s the trickle would take."""
    import time

    http_server.server.header_timeout = 1.0
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=5) as sock:
        sock.sendall(b"GET /echo/slow HTTP/1.1\r\nHost: x\r\n")
        answer = b""
        for _ in range(100):  # one header byte every 0.3 s: far inside the idle timeout
            try:
                sock.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.3)
            sock.setblocking(False)
            try:
                answer += sock.recv(65536)
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
            if answer:
                break
        assert answer.startswith(b"HTTP/1.1 408")
    conn = _conn(http_server)  # others are served as before
    conn.request("GET", "/echo/fine")
    assert conn.getresponse().status == 200


def _trickle(port: int, head: bytes, byte: bytes, every: float, limit: int) -> bytes:
    """Send ``head``, then ``byte`` every ``every`` seconds (at most ``limit`` times) until the
    server answers or closes; the answer."""
    import time

    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head)
        answer = b""
        for _ in range(limit):
            try:
                sock.sendall(byte)
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(every)
            sock.setblocking(False)
            try:
                answer += sock.recv(65536)
            except BlockingIOError:
                pass
            except ConnectionResetError:
                break
            finally:
                sock.setblocking(True)
            if answer:
                break
        return answer


def test_a_request_body_that_trickles_in_gets_408(http_server):
    """[http] body_timeout (docs/rest.md): a client that sends its body a byte every 0.3 s -
    each piece far inside the idle timeout - must still finish it within body_timeout (here
    1 s) of the end of its head: it is answered 408 and closed, well before the 30 s the
    trickle would take; a chunked body is held to the same deadline; others are served."""
    import time

    http_server.server.body_timeout = 1.0
    started = time.monotonic()
    answer = _trickle(http_server.port, b"POST /echo/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
                      b"y", 0.3, 100)
    assert answer.startswith(b"HTTP/1.1 408") and b"request body not complete within 1 seconds" in answer
    assert time.monotonic() - started < 10
    chunked = _trickle(http_server.port, b"POST /echo/slow HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                       b"1\r\nz\r\n", 0.3, 100)
    assert chunked.startswith(b"HTTP/1.1 408")
    conn = _conn(http_server)  # a body sent at once is read as before
    conn.request("POST", "/echo/fine", body=b"x" * 500)
    response = conn.getresponse()
    assert response.status == 200 and json.loads(response.read())["body"] == "x" * 500


def test_body_over_limit_is_413_and_server_stays_up(http_server):
    """A body over max_body_bytes gets 413 (brief item 1); other clients are unaffected."""
    conn = _conn(http_server)
    conn.request("POST", "/echo/big", body=b"x" * 1001)
    assert conn.getresponse().status == 413
    chunked = _raw(http_server, b"POST /echo/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + b"".join(b"%x\r\n%s\r\n" % (300, b"y" * 300) for _ in range(4)) + b"0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 413")
    ok = _conn(http_server)
    ok.request("GET", "/echo/after")
    assert ok.getresponse().status == 200


def test_malformed_request_gets_400_and_only_that_connection_closes(http_server):
    """Garbage gets 400 and a close; a keep-alive connection opened before keeps working."""
    keep = _conn(http_server)
    keep.request("GET", "/echo/one")
    assert keep.getresponse().read()
    reply = _raw(http_server, b"THIS IS NOT HTTP\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400")
    keep.request("GET", "/echo/two")
    assert json.loads(keep.getresponse().read())["params"] == {"name": "two"}


def test_oversized_header_is_rejected(http_server):
    """A request head over max_header_bytes is refused with 431 (brief item 1: header limit)."""
    reply = _raw(http_server, b"GET /echo/h HTTP/1.1\r\nHost: x\r\nX-Big: " + b"z" * 8000 + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431")


def test_router_404_405_and_path_parameters(http_server):
    """Unknown path 404, known path with another method 405 + Allow; {name:path} keeps slashes
    and %2F is decoded inside a single segment (brief: router per the contract)."""
    conn = _conn(http_server)
    conn.request("GET", "/nothing/here")
    response = conn.getresponse()
    response.read()
    assert response.status == 404
    conn.request("GET", "/topic/a/b")
    response = conn.getresponse()
    response.read()
    assert response.status == 405 and response.getheader("allow") == "POST"
    conn.request("POST", "/topic/sport/tennis/%2Bscore")
    assert json.loads(conn.getresponse().read())["params"] == {"topic": "sport/tennis/+score"}
    conn.request("GET", "/echo/a%2Fb")
    assert json.loads(conn.getresponse().read())["params"] == {"name": "a/b"}


def test_handler_exception_is_500_and_connection_survives(http_server):
    """A failing handler answers 500; the server and the connection go on."""

    async def broken(request):
        raise RuntimeError("boom")

    http_server.server.add_route("GET", "/broken", broken)
    conn = _conn(http_server)
    conn.request("GET", "/broken")
    response = conn.getresponse()
    response.read()
    assert response.status == 500
    conn.request("GET", "/echo/ok")
    assert conn.getresponse().status == 200


def test_remove_route(http_server):
    """remove_route makes the path 404 again; removing twice is an error."""
    http_server.server.remove_route("POST", "/topic/{topic:path}")
    conn = _conn(http_server)
    conn.request("POST", "/topic/x")
    assert conn.getresponse().status == 404
    with pytest.raises(KeyError):
        http_server.server.remove_route("POST", "/topic/{topic:path}")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_posts_large_body_with_expect_continue(http_server):
    """curl sends 'Expect: 100-continue' for larger bodies; the server answers 100 first."""
    http_server.server.max_body_bytes = 100_000
    result = subprocess.run(["curl", "-sS", "--max-time", "5", "-X", "POST", "--data-binary", "@-",
                             "-H", "Expect: 100-continue", f"http://127.0.0.1:{http_server.port}/echo/curl"],
                            input=b"q" * 5000, capture_output=True, check=True)
    assert json.loads(result.stdout)["body"] == "q" * 5000


def test_client_request_against_server(http_server):
    """relaymq.http.client.request: a full round trip, and a timeout on a dead peer."""
    import asyncio

    from relaymq.http.client import HttpClientError, request

    async def scenario():
        response = await request("POST", f"http://127.0.0.1:{http_server.port}/echo/cl?x=1",
                                 headers=[("X-Test", "c")], body=b"hello", timeout=5)
        assert (response.status, response.reason, response.http_version) == (200, "OK", "1.1")
        got = json.loads(response.body)
        assert got["body"] == "hello" and got["x"] == "c" and got["query"] == {"x": ["1"]}
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        try:
            with pytest.raises(HttpClientError):
                await request("GET", f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=0.3)
        finally:
            silent.close()

    asyncio.run(scenario())
