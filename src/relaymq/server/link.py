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
``FLUSH_EVERY`` packets or ``FLUSH_AT`` bytes are gathered, so a turn that handles a burst
streams it out: the peer starts on the first packets while the broker still works on the rest.
A write that large by itself (a big payload) is not gathered: it follows the gathered bytes to
the transport as it is (``_write_alone``).

Why every 50 packets: a publisher with 100 QoS 1 messages in flight sends them in one read;
handled in one turn and sent only at its end, the subscriber got all 100 deliveries (and the
publisher all 100 PUBACKs) at once, and broker and clients took turns instead of working at the
same time. The measurements behind the number are in bench/README.md ("Figures behind the
constants").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


#: Gathered bytes are handed over at once when they reach this, without waiting for the turn.
FLUSH_AT = 65536
#: ... or when this many packets were gathered.
FLUSH_EVERY = 50
#: ``_out`` while nothing is gathered: shared empty bytes, made a bytearray by the next write
#: (an empty bytearray costs 56 bytes on every idle connection, issue 8, scenario 6).
NOTHING_GATHERED = b""


class TransportLink:
    __slots__ = ("transport", "loop", "frame", "_out", "_scheduled", "_packets")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop,
                 frame: Callable[[bytes], bytes] | None = None) -> None:
        self.transport = transport
        self.loop = loop
        self.frame = frame  # wraps the bytes of one turn (a WebSocket binary message)
        self._out: bytes | bytearray = NOTHING_GATHERED
        self._scheduled = False
        self._packets = 0  # writes gathered since the last flush

    def write(self, data: bytes) -> None:
        if len(data) >= FLUSH_AT and self.frame is None:
            self._write_alone(data)
            return
        out = self._out
        if out is NOTHING_GATHERED:
            self._out = out = bytearray()
        out += data
        self._packets += 1
        if self._packets >= FLUSH_EVERY or len(out) >= FLUSH_AT:
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
        self._packets = 0
        data, self._out = self._out, NOTHING_GATHERED
        if self.transport.is_closing():
            return
        self.transport.write(self.frame(bytes(data)) if self.frame is not None else data)

    def _write_alone(self, data: bytes) -> None:
        """A write that would be handed over at once anyway (a large payload: ``Connection.
        send_publish`` writes it apart from its PUBLISH's head) goes to the transport as it is,
        after what was gathered, in one ``writelines``: the transport keeps references to both
        (a view of the gathered bytearray, never written to again) and sends them with one
        writev, where gathering it would first copy every byte of it."""
        out = self._out
        self._packets = 0
        self._out = NOTHING_GATHERED
        if self.transport.is_closing():
            return
        if out:
            self.transport.writelines((out, data))
        else:
            self.transport.write(data)

    def close(self) -> None:
        """Send what is gathered, then close once the transport has sent everything."""
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        """Close now; whatever is unsent is dropped."""
        self._out = NOTHING_GATHERED
        self.transport.abort()

    def get_write_buffer_size(self) -> int:
        return len(self._out) + self.transport.get_write_buffer_size()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        if not self.transport.is_closing():
            self.transport.resume_reading()
