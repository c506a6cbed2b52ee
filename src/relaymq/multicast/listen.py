"""A multicast receiver on asyncio: join, receive, repair, report (``relaymq multicast-listen``).

``MulticastListener.join`` sends JOIN for a topic filter to the broker's data port (again
every half second until the ACCEPT comes: UDP may lose either), then joins the groups the
ACCEPT names, one socket per group bound to the group's address and the port, so several
receivers on one host share the port and none sees another group's traffic. A reverted
subscription (unicast) arrives on the socket that sent the JOIN, which the listener renews
every half heartbeat timeout. ``run`` feeds every packet to ``relaymq.multicast.receiver``,
sends its NAKs every NAK check period, and hands each message and loss to ``on_event``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time
from collections.abc import Callable

from relaymq.multicast import packets
from relaymq.multicast.packets import Accept, Join, Leave
from relaymq.multicast.receiver import Event, Message, Receiver
from relaymq.multicast.transport import IP_MULTICAST_ALL, set_receive_buffer
from relaymq.pubsub.topics import topic_matches

#: How often an unanswered JOIN is sent again.
JOIN_RETRY = 0.5


class JoinRefused(Exception):
    """The broker rejected the subscription (overlapping behaviour Reject, or nothing to
    multicast): ``str()`` is its reason."""


class _Socket(asyncio.DatagramProtocol):
    def __init__(self, listener: MulticastListener) -> None:
        self.listener = listener

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.listener.on_datagram(data)


class MulticastListener:
    def __init__(self, host: str, port: int, topic_filter: str, on_event: Callable[[Event], None],
                 interface: str = "") -> None:
        self.broker = (socket.gethostbyname(host), port)
        self.topic_filter = topic_filter
        self.on_event = on_event
        self.interface = interface
        self.request = int.from_bytes(os.urandom(4), "big")
        self.accept: Accept | None = None
        self.receiver: Receiver | None = None
        self._accepted = asyncio.Event()
        self._transports: list[asyncio.DatagramTransport] = []
        self._control: asyncio.DatagramTransport | None = None

    async def join(self, timeout: float = 10.0) -> Accept:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)
        except OSError:
            pass
        sock.bind((self.interface or "0.0.0.0", 0))
        transport, _ = await loop.create_datagram_endpoint(lambda: _Socket(self), sock=sock)
        self._control = transport
        self._transports.append(transport)
        deadline = loop.time() + timeout
        while not self._accepted.is_set():
            if loop.time() > deadline:
                raise TimeoutError(f"no answer from the broker at {self.broker[0]}:{self.broker[1]} within {timeout:g}s")
            self._send(packets.encode(Join(self.request, self.topic_filter)))
            try:
                await asyncio.wait_for(self._accepted.wait(), JOIN_RETRY)
            except TimeoutError:
                continue
        accept = self.accept
        assert accept is not None
        if accept.mode == packets.MODE_REJECTED:
            raise JoinRefused(accept.reason)
        if accept.mode == packets.MODE_UNICAST:
            set_receive_buffer(sock, accept.socket_buffer_kb * 1024)
        for group in sorted({info.group for info in accept.streams if accept.mode == packets.MODE_MULTICAST}):
            port = next(info.port for info in accept.streams if info.group == group)
            member = self._group_socket(group, port, accept.socket_buffer_kb * 1024)
            transport, _ = await loop.create_datagram_endpoint(lambda: _Socket(self), sock=member)
            self._transports.append(transport)
        return accept

    def _group_socket(self, group: str, port: int, buffer: int) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        set_receive_buffer(sock, buffer)
        sock.bind((group, port))
        interface = socket.inet_aton(self.interface) if self.interface else struct.pack("!I", socket.INADDR_ANY)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + interface)
        sock.setblocking(False)
        return sock

    def _send(self, data: bytes) -> None:
        if self._control is not None:
            self._control.sendto(data, self.broker)

    def on_datagram(self, data: bytes) -> None:
        try:
            packet = packets.decode(data)
        except packets.PacketError:
            return
        now = time.monotonic()
        if isinstance(packet, Accept):
            if packet.request == self.request and self.accept is None:
                self.accept = packet
                self.receiver = Receiver(packet, now)
                self._accepted.set()
            return
        if self.receiver is not None:
            self._emit(self.receiver.on_packet(packet, now))

    def _emit(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, Message) and not topic_matches(self.topic_filter, event.topic):
                continue  # another topic of the same region
            self.on_event(event)

    async def run(self, done: Callable[[], bool] = lambda: False) -> None:
        """Receive until ``done()`` (checked after every NAK check period) or cancelled."""
        accept, receiver = self.accept, self.receiver
        assert accept is not None and receiver is not None
        period = accept.nack_check_period_ms / 1000
        renew = max(0.5, accept.heartbeat_timeout / 2)
        next_renew = time.monotonic() + renew
        while not done():
            await asyncio.sleep(period)
            now = time.monotonic()
            naks, events = receiver.due(now)
            for nak in naks:
                self._send(packets.encode(nak))
            self._emit(events)
            if accept.mode == packets.MODE_UNICAST and now >= next_renew:
                self._send(packets.encode(Join(self.request, self.topic_filter)))
                next_renew = now + renew

    def close(self) -> None:
        if self.accept is not None and self.accept.mode == packets.MODE_UNICAST:
            self._send(packets.encode(Leave(self.request)))
        for transport in self._transports:
            transport.close()
        self._transports = []
