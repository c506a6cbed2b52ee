"""One real-time client's socket: bytes to its ``Session`` and back, under back-pressure.

The transport's own buffer is kept small (``WRITE_HIGH``): past it asyncio pauses writing and
what is for the client stays in the session's ``OutQueue``, where the overflow policy
(maxBrokerQueueSize) applies; it is written again when the client reads (``resume_writing``).
A closed session (oversized frame, protocol error, ping timeout, the client's CLOSE) gets its
CLOSE frame written and the socket closed at once, whatever was still queued.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import TYPE_CHECKING, cast

from relaymq.http.admission import peer_host
from relaymq.realtime import frames
from relaymq.realtime.frames import Publish, Subscribe
from relaymq.realtime.session import Session

if TYPE_CHECKING:
    from relaymq.realtime.server import RealtimeService

#: The transport's write buffer past which writing pauses (and the OutQueue holds the rest).
WRITE_HIGH = 64 * 1024
#: Bytes handed to the transport at a time.
CHUNK = 64 * 1024
#: The kernel's send buffer for a real-time client. Left to autotuning it grows to megabytes
#: (net.ipv4.tcp_wmem), which would hold more than maxBrokerQueueSize itself for a client that
#: stopped reading and leave the seed's overflow policy little to act on.
SEND_BUFFER = 256 * 1024


class RealtimeConnection(asyncio.Protocol):
    def __init__(self, service: RealtimeService) -> None:
        self.service = service
        self.transport: asyncio.Transport | None = None
        self.session: Session | None = None
        self.paused = False
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        self.transport = transport
        peer = peer_host(transport.get_extra_info("peername"))
        if not self.service.admission.admit(peer):
            transport.abort()
            return
        self.admitted = True
        transport.set_write_buffer_limits(high=WRITE_HIGH)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self.session = Session(self.service.settings, peer, time.monotonic())
        self.service.connections.add(self)

    def data_received(self, data: bytes) -> None:
        session = self.session
        if session is None:
            return
        for frame in session.on_bytes(data, time.monotonic()):
            if isinstance(frame, Publish):
                self.service.publish(frame, self.client_id)
            elif isinstance(frame, Subscribe):
                self.service.subscribe(self, frame)
        self.flush()

    @property
    def client_id(self) -> str:
        """The id the client gave in its HELLO ("" before it)."""
        return (self.session.client_id if self.session is not None else None) or ""

    def deliver(self, publish: Publish) -> None:
        if self.session is not None:
            self.session.deliver(publish)
            self.flush()

    def tick(self, now: float) -> None:
        if self.session is not None:
            self.session.tick(now)
            self.flush()

    def flush(self) -> None:
        session, transport = self.session, self.transport
        if session is None or transport is None or transport.is_closing():
            return
        if session.closed is not None:
            transport.write(frames.encode(session.closed))
            transport.close()
            return
        while session.out and not self.paused:
            transport.write(session.out.take(CHUNK))  # may pause writing (pause_writing)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.flush()

    def shutdown(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frames.encode(frames.Close(frames.SHUTDOWN, "the broker is stopping")))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.admitted:
            self.admitted = False
            self.service.detach(self)
