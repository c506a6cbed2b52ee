"""The link a Connection writes to: its transport, with the writes of one event-loop turn
gathered into one.

Why: a connection writes many small packets (a PUBACK is 4 bytes). Handed to the transport one
by one, each costs a send() while the socket takes them, and, once it does not, a separate
buffered object of several times its size: a publisher that never reads its PUBACKs made the
broker hold hundreds of megabytes for a few megabytes of acknowledgements (issue 2, limits).
Gathered per turn, the transport gets one write per connection per turn, and its buffer (which
``max_outbound_buffer`` bounds) holds about what it says it holds.

The bytes of a turn go out at the start of the next one (``loop.call_soon``), before the
loop waits for anything, so nothing is delayed by more than that turn; and as soon as
``FLUSH_AT`` bytes are gathered, so a turn that handles a large burst streams it out.
"""

from __future__ import annotations

import asyncio
from typing import Callable


#: Gathered bytes are handed over at once when they reach this, without waiting for the turn.
FLUSH_AT = 65536


class TransportLink:
    __slots__ = ("transport", "loop", "frame", "_out", "_scheduled")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop,
                 frame: Callable[[bytes], bytes] | None = None) -> None:
        self.transport = transport
        self.loop = loop
        self.frame = frame  # wraps the bytes of one turn (a WebSocket binary message)
        self._out = bytearray()
        self._scheduled = False

    def write(self, data: bytes) -> None:
        out = self._out
        out += data
        if len(out) >= FLUSH_AT:
            self.flush()  # a busy turn (a burst read at once) goes out as it grows
        elif not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._end_of_turn)

    def _end_of_turn(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        if not self._out:
            return
        data, self._out = self._out, bytearray()
        if self.transport.is_closing():
            return
        self.transport.write(self.frame(bytes(data)) if self.frame is not None else data)

    def close(self) -> None:
        """Send what is gathered, then close once the transport has sent everything."""
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        """Close now; whatever is unsent is dropped."""
        self._out = bytearray()
        self.transport.abort()

    def get_write_buffer_size(self) -> int:
        return len(self._out) + self.transport.get_write_buffer_size()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        if not self.transport.is_closing():
            self.transport.resume_reading()
