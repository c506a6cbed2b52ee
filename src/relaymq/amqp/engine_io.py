"""Moving bytes in and out of python-qpid-proton's engine (a Transport), shared by the
listener's connections and the client. Pure: the caller owns the socket."""

from __future__ import annotations

import time
from collections.abc import Callable

from proton import Transport

#: The shortest wait before the engine's next tick (seconds).
MIN_TICK = 0.05


def feed(engine: Transport, data: bytes, process: Callable[[], None]) -> bytes:
    """Push ``data`` into the engine in pieces of at most its capacity (a larger push raises),
    handling its events after each (``process``). Returns what it could not take: the engine
    closed its input, or is full until its output is read."""
    view = memoryview(data)
    while view:
        room = engine.capacity()
        if room <= 0:
            process()
            room = engine.capacity()
            if room <= 0:
                return bytes(view)
        taken = min(room, len(view))
        engine.push(bytes(view[:taken]))
        view = view[taken:]
        process()
    return b""


def drain(engine: Transport, write: Callable[[bytes], None]) -> int:
    """Hand everything the engine has to send to ``write``; returns ``pending()`` after it
    (negative: the engine closed its output)."""
    pending = engine.pending()
    while pending > 0:  # the engine shows its output a buffer at a time (a large transfer)
        write(bytes(engine.peek(pending) or b""))
        engine.pop(pending)
        pending = engine.pending()
    return pending


def tick(engine: Transport, process: Callable[[], None]) -> float | None:
    """Let the engine keep time (idle time-outs, heartbeats); returns the seconds until it
    wants the next tick, or None when it keeps no time."""
    deadline = engine.tick(time.monotonic())
    process()
    return max(deadline - time.monotonic(), MIN_TICK) if deadline else None
