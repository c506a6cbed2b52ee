"""The link between a Connection and its socket (relaymq.server.link): one turn's writes
gathered into one send, and streamed out as a burst grows, on a real socket pair."""

from __future__ import annotations

import asyncio
import socket

from relaymq.server.link import FLUSH_AT, FLUSH_EVERY, TransportLink

PUBACK = b"\x40\x02\x00\x01"


def _pending(sock: socket.socket) -> bytes:
    try:
        return sock.recv(1 << 20)
    except BlockingIOError:
        return b""


def test_a_turns_writes_leave_together_at_its_end_or_every_flush_every_packets() -> None:
    """Issue 2 limits (one send per connection per turn, not one per 4-byte PUBACK) and issue 8
    (a burst handled in one turn streams out every FLUSH_EVERY packets, so the peer starts on
    it while the broker works on the rest)."""
    ours, peer = socket.socketpair()
    peer.setblocking(False)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        link = TransportLink(transport, loop)  # type: ignore[arg-type]
        for _ in range(FLUSH_EVERY - 1):
            link.write(PUBACK)
        assert _pending(peer) == b""                      # gathered, not sent
        await asyncio.sleep(0)                            # the end of the turn
        assert _pending(peer) == PUBACK * (FLUSH_EVERY - 1)
        for _ in range(FLUSH_EVERY + 3):                  # one turn, a burst
            link.write(PUBACK)
        assert _pending(peer) == PUBACK * FLUSH_EVERY     # the first FLUSH_EVERY at once
        await asyncio.sleep(0)
        assert _pending(peer) == PUBACK * 3               # the rest at the end of the turn
        link.write(b"x" * FLUSH_AT)                       # or as soon as FLUSH_AT bytes
        received = b""
        for _ in range(200):
            received += _pending(peer)
            if len(received) >= FLUSH_AT:
                break
            await asyncio.sleep(0.005)
        assert received == b"x" * FLUSH_AT
        link.close()

    asyncio.run(main())
    peer.close()
