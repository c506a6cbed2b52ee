"""Asyncio MQTT clients for the load generator: one connection, raw bytes, batched writes.

Why not paho-mqtt: it spends far more CPU per message than a broker does, so it measures
itself (issue 8). These clients pipeline: a publisher writes whole batches of stamped PUBLISH
packets (:class:`relaymq.bench.wire.PublishTemplates`) and keeps up to ``window`` QoS 1/2
messages in flight; a subscriber scans each received chunk at once and answers all its acks in
one write. The protocol bytes live in :mod:`relaymq.bench.wire`; this module only moves them.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from relaymq.bench.wire import (
    AckScan, PublishTemplates, ReceiveTally, connect_packet, disconnect_packet, next_packet_id,
    parse_connack, scan_acks, scan_publishes, split_frame, subscribe_packet,
)
from relaymq.mqtt.packets import MQTT_5
from relaymq.mqtt.wire import encode_varint

#: Bytes asked of the socket per read.
READ_SIZE = 1 << 18
#: Messages per write when publishing as fast as possible (QoS 0), and at most per window top-up.
MAX_BATCH = 256
#: Seconds between a subscriber's checks of its stop condition and idle time.
WATCH_INTERVAL = 0.05
#: A QoS 0 read smaller than this is "keeping up": the subscriber may pause before the next.
SMALL_READ = 1 << 14
#: Default pause (s) after a small read that needed no acks (``relaymq bench --read-pause``).
DEFAULT_READ_PAUSE = 0.001
#: Session Expiry Interval (s) a persistent session asks for at MQTT 5 unless told otherwise:
#: long enough for any run, short enough that a crashed run does not leave sessions for ever.
DEFAULT_SESSION_EXPIRY = 3600


class BenchError(Exception):
    """A broker refused or dropped a benchmark connection (one-line message)."""


@dataclass
class PublishResult:
    """What one publisher did: messages sent and completed, and when (monotonic ns)."""

    sent: int = 0
    completed: int = 0
    refused: int = 0
    start_ns: int = 0
    end_ns: int = 0


class Connection:
    """One MQTT connection over asyncio streams, after CONNECT/CONNACK."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, level: int,
                 session_present: bool, receive_maximum: int | None) -> None:
        self.reader = reader
        self.writer = writer
        self.level = level
        self.session_present = session_present
        self.receive_maximum = receive_maximum
        self.buffer = bytearray()
        #: PUBLISH packets read while waiting for a SUBACK (retained messages may come first);
        #: receive() tallies them before anything else.
        self.pending: list[tuple[int, bytes]] = []
        self.address: tuple[str, int] = ("", 0)
        self.client_id = ""
        self.credentials: tuple[str | None, bytes | None] = (None, None)
        #: True for a session that outlives the connection (clean session 0 / session expiry).
        self.persistent = False

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, level: int = 4, *,
                   clean: bool = True, keep_alive: int = 0, session_expiry: int | None = None,
                   username: str | None = None, password: bytes | None = None,
                   source: str | None = None, timeout: float = 30.0) -> Connection:
        """Connect and complete CONNECT/CONNACK; raises BenchError when refused."""
        local = (source, 0) if source else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, local_addr=local, limit=READ_SIZE), timeout)
        except TimeoutError:
            raise BenchError(f"{client_id}: no TCP connection to {host}:{port} within "
                             f"{timeout:g}s") from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        writer.write(connect_packet(client_id, level, clean=clean, keep_alive=keep_alive,
                                    session_expiry=session_expiry, receive_maximum=65535,
                                    username=username, password=password))
        conn = cls(reader, writer, level, False, None)
        conn.address = (host, port)
        conn.client_id = client_id
        conn.credentials = (username, password)
        try:
            first, body = await asyncio.wait_for(conn.read_packet(), timeout)
        except TimeoutError:
            writer.close()
            raise BenchError(f"{client_id}: no CONNACK from {host}:{port} within "
                             f"{timeout:g}s") from None
        if first >> 4 != 2:
            raise BenchError(f"{client_id}: expected CONNACK, got packet type {first >> 4}")
        conn.session_present, code, conn.receive_maximum = parse_connack(body, level)
        if code:
            raise BenchError(f"{client_id}: connection refused with code {code:#x}")
        return conn

    @classmethod
    async def open_session(cls, host: str, port: int, client_id: str, level: int = 4, *,
                           persistent: bool = False, session_expiry: int | None = None,
                           username: str | None = None, password: bytes | None = None,
                           timeout: float = 30.0) -> Connection:
        """Connect with a *new* session: clean, or persistent (3.1.1: clean session 0; 5.0:
        Clean Start with a Session Expiry Interval, default :data:`DEFAULT_SESSION_EXPIRY`).

        A persistent session the broker still holds for ``client_id`` (an earlier run with
        the same fixed ids) is discarded first, so a run never receives an older run's
        messages. :meth:`end_session` removes the session again when the run is over."""
        connect = functools.partial(cls.open, host, port, client_id, level, username=username,
                                    password=password, timeout=timeout)
        if not persistent:
            return await connect()
        if level == MQTT_5:
            conn = await connect(clean=True, session_expiry=session_expiry or DEFAULT_SESSION_EXPIRY)
        else:
            conn = await connect(clean=False)
            if conn.session_present:
                await conn.close()
                await (await connect()).close()
                conn = await connect(clean=False)
        conn.persistent = True
        return conn

    async def end_session(self) -> None:
        """Disconnect and make the broker forget a persistent session (a clean one ends
        anyway): 5.0 DISCONNECT with Session Expiry Interval 0; 3.1.1 a clean-session
        connection with the same client id."""
        if not self.persistent:
            await self.close()
            return
        if self.level == MQTT_5:
            await self._close_with(disconnect_packet(self.level, session_expiry=0))
            return
        await self.close()
        username, password = self.credentials
        again = await Connection.open(*self.address, self.client_id, self.level,
                                      username=username, password=password)
        await again.close()

    async def read_packet(self) -> tuple[int, bytes]:
        """The next whole packet (first byte, body), for the handshake packets only."""
        while True:
            frame = split_frame(self.buffer, 0)
            if frame is not None:
                first, start, stop = frame
                body = bytes(self.buffer[start:stop])
                del self.buffer[:stop]
                return first, body
            chunk = await self.reader.read(READ_SIZE)
            if not chunk:
                raise BenchError("the broker closed the connection")
            self.buffer += chunk

    async def subscribe(self, topic_filter: str, qos: int, timeout: float = 30.0) -> int:
        """SUBSCRIBE and wait for SUBACK; returns the granted QoS (raises if refused)."""
        self.writer.write(subscribe_packet(topic_filter, qos, self.level))
        while True:
            first, body = await asyncio.wait_for(self.read_packet(), timeout)
            if first >> 4 == 9:
                granted = body[-1]
                if granted >= 0x80:
                    raise BenchError(f"subscription to {topic_filter!r} refused ({granted:#x})")
                return granted
            if first >> 4 == 3:
                # retained messages may come before the SUBACK; keep them for receive()
                self.pending.append((first, body))

    async def close(self, disconnect: bool = True) -> None:
        """DISCONNECT (unless told not to: a dropped persistent session) and close."""
        await self._close_with(disconnect_packet(self.level) if disconnect else b"")

    async def _close_with(self, last: bytes) -> None:
        try:
            if last:
                self.writer.write(last)
            self.writer.close()
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    # -- publisher ----------------------------------------------------------------------------

    async def publish(self, templates: PublishTemplates, publisher: int, *, count: int | None,
                      deadline_ns: int | None = None, window: int = 100, rate: float = 0.0,
                      first_seq: int = 0, progress: Callable[[int], None] | None = None,
                      ) -> PublishResult:
        """Publish until ``count`` messages (or ``deadline_ns``) with at most ``window`` in flight.

        ``rate`` (messages/s, 0 = as fast as possible) paces batches of ~10 ms. For QoS 1/2 the
        publisher returns once every sent message is acknowledged. ``progress(n)`` is called
        with the number just sent, once per batch."""
        qos = templates.qos
        if qos and self.receive_maximum:
            window = min(window, self.receive_maximum)
        window = max(1, min(window, 65535))
        result = PublishResult(start_ns=time.monotonic_ns())
        writer = self.writer
        seq = first_seq
        packet_id = 1
        outstanding = 0
        batch_cap = MAX_BATCH
        if rate > 0:
            batch_cap = max(1, min(MAX_BATCH, int(rate / 100)))
        buf = bytearray()
        monotonic_ns = time.monotonic_ns

        async def batch_size(now: int) -> int | None:
            """How many to send now: the batch cap, the count left and the free window; 0
            while a paced publisher reads acks, None after it waited for the pace."""
            n = batch_cap if count is None else min(batch_cap, count - result.sent)
            if qos:
                n = min(n, window - outstanding)
            if rate > 0 and n > 0:
                due = result.start_ns + int((result.sent + n) / rate * 1e9)
                if due > now:
                    if qos and outstanding:
                        return 0   # read acks meanwhile
                    await asyncio.sleep((due - now) / 1e9)
                    return None
            return n

        while True:
            now = monotonic_ns()
            finished = (count is not None and result.sent >= count) or (
                deadline_ns is not None and now >= deadline_ns)
            if finished and outstanding == 0:
                break
            if not finished:
                n = await batch_size(now)
                if n is None:
                    continue
                if n > 0:
                    writer.write(templates.batch(publisher, seq, n, now, packet_id))
                    seq += n
                    result.sent += n
                    if qos:
                        outstanding += n
                        packet_id = next_packet_id(packet_id, n)
                    if progress is not None:
                        progress(n)
                    if qos == 0:
                        result.completed += n
                        await writer.drain()
                        continue
                    # top the window up before waiting for acks while the batch flushes
                    if outstanding < window and not (rate > 0) and writer.transport.get_write_buffer_size() < 1 << 20:
                        continue
            elif qos == 0:
                break
            await writer.drain()
            scan = await self._read_acks(buf, publisher)
            outstanding -= scan.completed
            result.completed += scan.completed
            result.refused += scan.refused
        await writer.drain()
        result.end_ns = monotonic_ns()
        return result

    async def _read_acks(self, buf: bytearray, publisher: int) -> AckScan:
        """Read what the broker sent a publisher, answer it (PUBREL) and count the acks."""
        chunk = await self.reader.read(READ_SIZE)
        if not chunk:
            raise BenchError(f"publisher {publisher}: the broker closed the connection")
        buf += chunk
        scan = scan_acks(buf, self.level)
        if scan.consumed:
            del buf[:scan.consumed]
        if scan.replies:
            self.writer.write(scan.replies)
        return scan

    # -- subscriber ---------------------------------------------------------------------------

    async def receive(self, tally: ReceiveTally, done: Callable[[ReceiveTally], bool],
                      *, idle_timeout: float | None = None,
                      progress: Callable[[int], None] | None = None,
                      stop: Callable[[], bool] | None = None,
                      read_pause: float = 0.0) -> ReceiveTally:
        """Receive, acknowledge and tally PUBLISH packets until ``done(tally)`` is true.

        Stops also when nothing arrives for ``idle_timeout`` seconds (the caller reports the
        shortfall as losses), when ``stop()`` turns true, or when the broker closes the
        connection. ``done`` runs once per received chunk, so it must be cheap; ``stop`` and
        the idle time are checked by a watchdog every :data:`WATCH_INTERVAL` seconds.

        Why a watchdog and not ``asyncio.wait_for`` around each read: that creates a task and
        a timer per chunk, and while a subscriber keeps up with a broker its chunks are a few
        packets each, so it costs more CPU than the scan itself (on a 2-core machine every CPU
        cycle of the generator is taken from the broker it measures).

        ``read_pause`` (seconds, 0 = off): after a read of less than :data:`SMALL_READ` bytes
        that needed no acknowledgement (QoS 0 traffic), stop reading the socket for that long,
        so the next read takes what arrived meanwhile in one chunk. A broker that writes each
        packet on its own (Mosquitto does) otherwise costs the subscriber one wake-up, one
        read and one scan per message (the figures are in bench/README.md, "The read
        pause"). Nothing waits on a QoS 0 subscriber's reads, so the pause costs the broker
        nothing; it adds up to ``read_pause`` to the measured latency of those messages, and
        the stream's last arrival is seen up to that much late (which lowers the rate, never
        raises it). Reads that carry QoS 1/2 messages are answered and followed at once."""
        level = self.level
        writer = self.writer
        reader = self.reader
        monotonic_ns = time.monotonic_ns
        buf = bytearray()
        for first, body in self.pending:
            buf += bytes((first,)) + encode_varint(len(body)) + body
        self.pending.clear()
        buf += self.buffer
        self.buffer.clear()
        last_data = [time.monotonic()]
        ended = [False]
        me = asyncio.current_task()
        assert me is not None

        async def watchdog() -> None:
            while not ended[0]:
                await asyncio.sleep(WATCH_INTERVAL)
                idle = idle_timeout is not None and (
                    time.monotonic() - last_data[0] > idle_timeout)
                if not ended[0] and (idle or (stop is not None and stop()) or done(tally)):
                    ended[0] = True
                    me.cancel()      # interrupts the read below: the one place it waits

        guard = asyncio.create_task(watchdog())
        # A stream's transport reads as well as writes; uvloop's is not an asyncio.Transport
        # subclass, so this is a cast, not an isinstance check.
        transport = cast(asyncio.Transport, writer.transport)
        paused = pause_next = False
        try:
            while not done(tally):
                if buf:
                    before = tally.received
                    used, acks = scan_publishes(buf, level, tally, monotonic_ns())
                    if used:
                        del buf[:used]
                    if acks:
                        writer.write(acks)
                        pause_next = False
                        if len(acks) > tally.largest_burst * 4:
                            tally.largest_burst = len(acks) // 4
                    if progress is not None and tally.received != before:
                        progress(tally.received - before)
                    if done(tally):
                        break
                try:
                    if pause_next:
                        transport.pause_reading()
                        paused = True
                        await asyncio.sleep(read_pause)
                        transport.resume_reading()
                        paused = False
                    chunk = await reader.read(READ_SIZE)
                except asyncio.CancelledError:
                    if not ended[0]:
                        raise        # cancelled from outside, not by the watchdog
                    me.uncancel()
                    break
                if not chunk:
                    break
                last_data[0] = time.monotonic()
                pause_next = read_pause > 0 and len(chunk) < SMALL_READ
                buf += chunk
        finally:
            if not ended[0]:
                ended[0] = True
            guard.cancel()
            if paused and not transport.is_closing():
                transport.resume_reading()
        if buf:
            self.buffer[:0] = buf    # a partial packet stays for the next call
        return tally
