"""A thread's wait for its submissions to the storage engine (:meth:`relaymq.store.engine.Engine.ticket`).

Apart from the engine so that it stays a Python class where the engine is compiled
(``relaymq.native_build``): the queue manager's ``Ticket`` subclasses it, and an interpreted
class cannot subclass a compiled one.
"""

from __future__ import annotations

import threading

from .base import StoreError


class Ticket:
    """Completion of a submission for a thread that waits: ``wait()`` returns once the
    operations submitted before the ticket was taken are durable, or raises StoreError."""

    __slots__ = ("_event", "error")

    def __init__(self, done: bool = False) -> None:
        self._event = threading.Event()
        self.error: BaseException | None = None
        if done:
            self._event.set()

    def finish(self, error: BaseException | None = None) -> None:
        self.error = error
        self._event.set()

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> None:
        if not self._event.wait(timeout):
            raise StoreError("the store did not commit in time")
        if self.error is not None:
            raise StoreError(f"store write failed: {self.error}") from self.error
