"""The link between a Connection and its socket (relaymq.server.link): one turn's writes
gathered into one send, and streamed out as a burst grows, on a real socket pair."""

from __future__ import annotations

import asyncio
import socket

import pytest

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


class _Recording:
    """The real transport, noting the objects handed to it (to see that a large write is not
    copied on its way)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.handed: list[object] = []

    def write(self, data: bytes) -> None:
        self.handed.append(data)
        self.transport.write(data)

    def writelines(self, parts: tuple[bytes, ...]) -> None:
        self.handed.extend(parts)
        self.transport.writelines(parts)

    def __getattr__(self, name: str) -> object:
        return getattr(self.transport, name)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_a_write_of_flush_at_bytes_follows_what_was_gathered_without_being_gathered(loop_kind: str) -> None:
    """A large payload (Connection.send_publish writes it apart from its PUBLISH's head) goes
    to the transport as it is, not copied into the gathered bytes, after them, in order and at
    once; what is written after it is gathered again (writelines keeps a view of the gathered
    bytearray, which the link must never write to again)."""
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        runner = uvloop.run
    else:
        runner = asyncio.run
    ours, peer = socket.socketpair()
    peer.setblocking(False)
    big = bytes(range(256)) * (FLUSH_AT // 256 + 3)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        recording = _Recording(transport)  # type: ignore[arg-type]
        link = TransportLink(recording, loop)  # type: ignore[arg-type]
        link.write(PUBACK)
        link.write(b"head")
        link.write(big)                                   # no end of turn needed
        link.write(b"tail")                               # gathered again
        assert any(part is big for part in recording.handed), "the large write was copied"
        assert b"".join(recording.handed) == PUBACK + b"head" + big
        received = _pending(peer)                         # before any await: sent at once
        expected = PUBACK + b"head" + big + b"tail"
        assert received and expected.startswith(received)
        for _ in range(400):
            if len(received) >= len(expected):
                break
            await asyncio.sleep(0.005)
            received += _pending(peer)
        assert received == expected
        link.close()

    runner(main())
    peer.close()
