"""The broker's HTTP front door through a real broker process and raw sockets (issue 15
finding 8: "HTTP has no connection cap; a half-sent HTTP request logs a full traceback each
time"). docs/security.md, attack table, and docs/configuration.md [http] for the keys."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from harness import BrokerProcess

pytestmark = pytest.mark.interop

HALF_SENT = [
    b"POST /ibmmq/rest/v3/messaging/qmgr/QM1/queue/Q/message HTTP/1.1\r\nHost: a\r\n"
    b"Content-Length: 100\r\n\r\nabc",
    b"POST /ibmmq/rest/v3/messaging/qmgr/QM1/queue/Q/message HTTP/1.1\r\nHost: a\r\n",
    b"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
]


def wait_for_log(broker: BrokerProcess, text: str, count: int, within: float = 10.0) -> str:
    """The broker's log once ``text`` occurs ``count`` times in it (polled, bounded)."""
    deadline = time.monotonic() + within
    while True:
        log = broker.log_path.read_text(errors="replace")
        if log.count(text) >= count or time.monotonic() > deadline:
            return log
        time.sleep(0.05)


def reset(sock: socket.socket) -> None:
    """Close with an RST, as a client that crashes or is killed does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_half_sent_requests_log_one_line_each_and_no_traceback(broker_factory) -> None:
    """issue 15 finding 8: a request cut off in its head or body (the peer resets or
    half-closes) closes that connection with one log line, never a traceback."""
    broker = broker_factory(store="memory")
    for data in HALF_SENT:
        for half_close in (False, True):
            sock = socket.create_connection(("127.0.0.1", broker.http_port))
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
                sock.settimeout(5)
                assert sock.recv(4096).startswith(b"HTTP/1.1 400"), "a half-closed peer still reads"
                sock.close()
            else:
                reset(sock)
    line = "closed its connection in the middle of a request"
    log = wait_for_log(broker, line, 2 * len(HALF_SENT))
    assert "Traceback" not in log, log
    assert log.count(line) == 2 * len(HALF_SENT), log
    # The server still answers.
    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=5) as sock:
        sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 404")


def test_http_connection_caps_close_the_next_socket_with_one_log_line(broker_factory) -> None:
    """issue 15 finding 8 ("HTTP has no connection cap"): [http] max_connections_per_address
    = 2: two idle sockets hold their places, a third is closed before it is read (one log
    line); once one goes, a request is answered again."""
    broker = broker_factory(store="memory", config={"http": {"max_connections_per_address": 2}})
    held = [socket.create_connection(("127.0.0.1", broker.http_port)) for _ in range(2)]
    over = socket.create_connection(("127.0.0.1", broker.http_port))
    over.settimeout(5)
    try:
        over.sendall(b"GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n")
        assert over.recv(4096) == b"", "a third connection from one address was served"
    except ConnectionResetError:
        pass
    over.close()
    log = wait_for_log(broker, "max_connections_per_address (2) reached", 1)
    assert log.count("HTTP: refusing a connection from 127.0.0.1") == 1, log
    held.pop().close()
    deadline = time.monotonic() + 10
    while True:  # the server notices the closed socket when it next reads it
        with socket.create_connection(("127.0.0.1", broker.http_port), timeout=5) as sock:
            sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n")
            try:
                if sock.recv(4096).startswith(b"HTTP/1.1 404"):
                    break
            except ConnectionResetError:
                pass
        assert time.monotonic() < deadline, "the released place was not given back"
    held[0].close()
