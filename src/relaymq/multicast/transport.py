"""The sender on the broker's event loop: the UDP socket, the control-packet timer, the NAK
accumulation timer. The decisions are ``relaymq.multicast.sender``'s; this only moves bytes.

The socket is bound to the data port (on ``interface`` when one is given) with SO_REUSEADDR,
so receivers on the same host can bind the same port on their group addresses; it is kept from
receiving the groups other sockets of the host joined (IP_MULTICAST_ALL off), so only JOINs,
NAKs and LEAVEs sent to the broker arrive on it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque

from relaymq.multicast.pacing import Pacer
from relaymq.multicast.sender import Address, Datagram, Sender

log = logging.getLogger("relaymq.multicast")
#: Linux's IP_MULTICAST_ALL (Python names it only on some builds).
IP_MULTICAST_ALL = getattr(socket, "IP_MULTICAST_ALL", 49)


def open_socket(interface: str, port: int, ttl: int, receive_buffer: int = 0) -> socket.socket:
    """A UDP socket on ``port`` (``interface``: the address to bind and send from; "" any)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        try:
            sock.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)
        except OSError:  # not Linux: the sender ignores packets that are not for it anyway
            pass
        if interface:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
        if receive_buffer:
            set_receive_buffer(sock, receive_buffer)
        sock.bind((interface or "0.0.0.0", port))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def set_receive_buffer(sock: socket.socket, size: int) -> None:
    """SO_RCVBUF of ``size`` bytes; as root past net.core.rmem_max (SO_RCVBUFFORCE)."""
    force = getattr(socket, "SO_RCVBUFFORCE", None)
    try:
        sock.setsockopt(socket.SOL_SOCKET, force if force is not None else socket.SO_RCVBUF, size)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)


class SenderTransport(asyncio.DatagramProtocol):
    """Runs a :class:`Sender` on a bound socket until :meth:`close`."""

    def __init__(self, sender: Sender, control_interval: float) -> None:
        self.sender = sender
        self.control_interval = control_interval
        settings = sender.settings
        self.pacer = Pacer(settings.limit_trans_rate, settings.trans_rate_limit_kbps, control_interval)
        #: datagrams waiting for the rate limit
        self.paced: deque[Datagram] = deque()
        self.paced_bytes = 0
        #: datagrams dropped because the rate limit held too many (reliable ones are NAKed and
        #: repaired from the window like any loss)
        self.paced_dropped = 0
        self._drain: asyncio.TimerHandle | None = None
        self.transport: asyncio.DatagramTransport | None = None
        self._loop = asyncio.get_running_loop()
        self._beat: asyncio.TimerHandle | None = None
        self._repair: asyncio.TimerHandle | None = None
        self.send_errors = 0

    async def start(self, sock: socket.socket) -> None:
        self.transport, _ = await self._loop.create_datagram_endpoint(lambda: self, sock=sock)
        self._heartbeat()

    def datagram_received(self, data: bytes, addr: Address) -> None:
        naks = self.sender.stats.naks
        self.send(self.sender.on_datagram(data, (addr[0], addr[1]), time.monotonic()))
        if self.sender.stats.naks != naks:
            self.pacer.losses_reported()
        self._schedule_repair()

    def error_received(self, exc: Exception) -> None:  # an ICMP error for an earlier datagram
        self.send_errors += 1

    def publish(self, topic: str, payload: bytes) -> None:
        self.send(self.sender.publish(topic, payload))

    def send(self, datagrams: list[Datagram]) -> None:
        """Send now, or in turn behind those the rate limit holds (at most the repair
        window's size of them: past that new ones are dropped and counted)."""
        for datagram in datagrams:
            if self.paced_bytes + len(datagram[0]) > self.sender.history_limit:
                self.paced_dropped += 1
                continue
            self.paced.append(datagram)
            self.paced_bytes += len(datagram[0])
        if self._drain is None:
            self._send_paced()

    def _send_paced(self) -> None:
        self._drain = None
        while self.paced and self.transport is not None:
            data, address = self.paced[0]
            wait = self.pacer.wait(time.monotonic(), len(data))
            if wait > 0:
                self._drain = self._loop.call_later(wait, self._send_paced)
                return
            self.paced.popleft()
            self.paced_bytes -= len(data)
            try:
                self.transport.sendto(data, address)
            except OSError as error:
                self.send_errors += 1
                log.debug("multicast send to %s failed: %s", address, error)

    def _heartbeat(self) -> None:
        self.pacer.interval_passed()
        self.send(self.sender.heartbeats())
        self.send(self.sender.due(time.monotonic()))
        self._beat = self._loop.call_later(self.control_interval, self._heartbeat)

    def _schedule_repair(self) -> None:
        due = self.sender.next_due()
        if due is None or self._repair is not None:
            return
        self._repair = self._loop.call_later(max(0.0, due - time.monotonic()), self._repairs)

    def _repairs(self) -> None:
        self._repair = None
        self.send(self.sender.due(time.monotonic()))
        self._schedule_repair()

    def close(self) -> None:
        for handle in (self._beat, self._repair, self._drain):
            if handle is not None:
                handle.cancel()
        if self.transport is not None:
            self.transport.close()
            self.transport = None
