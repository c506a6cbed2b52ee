"""A client session inside the broker process: a broker ``Connection`` whose link is a pipe
to a callable instead of a socket. The bridge's local end talks MQTT 5 through it, so every
rule of the broker (authorisation, persistent sessions, acknowledgement after durability,
No Local, flow control by the in-flight window) applies to the bridge as to any client.

What the connection writes in one event-loop turn reaches ``deliver`` at the start of the
next one, never inside the broker's own call (no re-entrance)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from relaymq.broker.connection import Connection


class LocalLink:
    """The link a bridge's in-process ``Connection`` writes to (``relaymq.server.link``'s interface)."""

    __slots__ = ("_out", "_scheduled", "closed", "deliver", "loop", "on_close")

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[bytes], None],
                 on_close: Callable[[], None]) -> None:
        self.loop = loop
        self.deliver = deliver
        self.on_close = on_close
        self._out = bytearray()
        self._scheduled = False
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self._out += data
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        if self._out:
            data, self._out = bytes(self._out), bytearray()
            self.deliver(data)
        if self.closed:
            self.on_close()

    def close(self) -> None:
        """The broker ended the session's connection: what it wrote goes first, then on_close."""
        if self.closed:
            return
        self.closed = True
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._flush)

    def abort(self) -> None:
        self.close()

    def get_write_buffer_size(self) -> int:
        return len(self._out)

    def pause_reading(self) -> None:
        """Nothing to pause: the bridge's writes wait in the connection's reader meanwhile."""

    def resume_reading(self) -> None:
        """See pause_reading."""


def open_local(broker: Any, link: LocalLink, name: str, principal: str) -> Connection:
    """A connection to ``broker`` for bridge ``name``, authenticated as ``principal`` (the
    configuration names it, as a verified certificate would: no password)."""
    return Connection(broker, link, f"bridge:{name}", "bridge", principal)
