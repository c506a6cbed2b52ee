"""Password checks off the event loop (issue 2, P1: bcrypt on the loop blocked every client
for a quarter of a second per failed login).

The broker core asks ``Broker.authenticate(user, password, peer, done)``; the server installs
a PasswordChecker there, which answers

* at once from the PasswordFile's cache of recent successful checks;
* otherwise after running bcrypt on a small thread pool (bcrypt releases the GIL, so the
  event loop keeps serving everyone else meanwhile);
* and, for a failure, only after a delay that grows with the recent failures from the same
  source address (0.1 s, 0.2 s, 0.4 s ... at most ``MAX_FAILURE_DELAY``), which slows down
  password guessing from one place without holding anyone else back.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from collections.abc import Callable

log = logging.getLogger("relaymq.auth")

#: bcrypt checks running at once; more wait their turn (a login flood costs CPU, not memory).
WORKERS = 2
#: Failure delay: BASE * 2 ** (recent failures - 1) seconds, at most MAX.
BASE_FAILURE_DELAY = 0.1
MAX_FAILURE_DELAY = 5.0
#: Failures older than this no longer count for a source.
FAILURE_WINDOW = 60.0


def source_of(peer: str) -> str:
    """The address part of ``host:port`` (``[v6]:port`` and bare names are kept whole)."""
    host, sep, port = peer.rpartition(":")
    return host if sep and port.isdigit() else peer


class PasswordChecker:
    def __init__(self, passwords: Any, loop: asyncio.AbstractEventLoop | None = None,
                 workers: int = WORKERS) -> None:
        self.passwords = passwords
        self.loop = loop or asyncio.get_running_loop()
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="relaymq-bcrypt")
        self.failures: dict[str, tuple[int, float]] = {}  # source -> (recent failures, last time)

    def __call__(self, user: str, password: bytes | None, peer: str,
                 done: Callable[[bool], None]) -> None:
        if self.passwords.cached(user, password):
            done(True)
            return
        future = self.loop.run_in_executor(self.executor, self.passwords.check, user, password)
        future.add_done_callback(lambda f: self._checked(f, source_of(peer), done))

    def _checked(self, future: asyncio.Future, source: str, done: Callable[[bool], None]) -> None:
        try:
            ok = bool(future.result())
        except Exception:
            log.exception("password check failed")
            ok = False
        if ok:
            self.failures.pop(source, None)
            done(True)
            return
        delay = self.failure_delay(source)
        self.loop.call_later(delay, done, False)

    def failure_delay(self, source: str) -> float:
        """Count a failure from ``source`` and return how long its answer waits."""
        now = self.loop.time()
        count, last = self.failures.get(source, (0, now))
        if now - last > FAILURE_WINDOW:
            count = 0
        count += 1
        self.failures[source] = (count, now)
        if len(self.failures) > 10_000:  # bounded: forget the sources quiet for longest
            for key, _ in sorted(self.failures.items(), key=lambda item: item[1][1])[:5_000]:
                del self.failures[key]
        return min(BASE_FAILURE_DELAY * 2 ** (count - 1), MAX_FAILURE_DELAY)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
