"""A blocking real-time transport client for the tests: a plain TCP socket and the product's
framing (relaymq.realtime.frames)."""

from __future__ import annotations

import socket
import time

from relaymq.realtime import frames
from relaymq.realtime.frames import Ack, Frame, Hello, Ping, Publish, Subscribe, Welcome


class RtClient:
    def __init__(self, host: str, port: int, client_id: str, receive_buffer: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:  # before connect, so the window is small from the start
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.connect((host, port))
        self.reader = frames.FrameReader(1 << 30)
        self.pending: list[Frame] = []
        self.closed = False
        self._request = 0
        self._token = 1000
        self.send(Hello(client_id))
        welcome = self.next_frame(10)
        assert isinstance(welcome, Welcome), welcome
        self.welcome = welcome

    def send(self, frame: Frame) -> None:
        self.sock.sendall(frames.encode(frame))

    def next_frame(self, timeout: float) -> Frame | None:
        """The next frame, or None when the broker closed the socket; TimeoutError past the
        deadline."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            if self.closed:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame from the broker")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                self.closed = True
                continue
            self.pending += self.reader.feed(data)
        return self.pending.pop(0)

    def wait_for(self, kind: type, timeout: float = 10, keep: list[Frame] | None = None) -> Frame:
        """Frames until one of ``kind`` (the others go to ``keep``)."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next_frame(max(0.0, deadline - time.monotonic()))
            if frame is None:
                raise ConnectionError(f"closed before a {kind.__name__}")
            if isinstance(frame, kind):
                return frame
            if keep is not None:
                keep.append(frame)

    def subscribe(self, topic_filter: str, unsubscribe: bool = False) -> Ack:
        self._request += 1
        self.send(Subscribe(self._request, topic_filter, unsubscribe))
        ack = self.wait_for(Ack)
        assert isinstance(ack, Ack) and ack.request == self._request
        return ack

    def publish(self, topic: str, payload: bytes, priority: int = frames.DEFAULT_PRIORITY,
                correlation: bytes = b"") -> None:
        self.send(Publish(topic, payload, priority, correlation))

    def round_trip(self, keep: list[Frame] | None = None, timeout: float = 30) -> None:
        """PING and wait for its PONG: the broker has handled everything sent before."""
        self._token += 1
        self.send(Ping(self._token))
        deadline = time.monotonic() + timeout
        while True:
            frame = self.wait_for(Ping, max(0.0, deadline - time.monotonic()), keep)
            assert isinstance(frame, Ping)
            if frame.pong and frame.token == self._token:
                return
            if not frame.pong:  # the broker's own ping: answer it
                self.send(Ping(frame.token, pong=True))

    def close(self) -> None:
        self.sock.close()
