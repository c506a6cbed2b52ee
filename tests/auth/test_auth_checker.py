"""The server's password checker (relaymq.server.authenticate): bcrypt off the event loop,
answers from the cache at once, failures delayed per source address.

Issue 2 P1: "bcrypt runs on the event loop (0.24 s per failed login blocks everything): run it
in a thread, cache successful checks for a short time, delay failures a little (rate limit per
source)"."""

from __future__ import annotations

import asyncio
import threading

from relaymq.auth.passwords import PasswordFile
from relaymq.server.authenticate import BASE_FAILURE_DELAY, PasswordChecker, source_of


def _passwords() -> PasswordFile:
    passwords = PasswordFile()
    passwords.set("alice", "right", cost=4)
    return passwords


def test_check_runs_off_the_loop_and_answers_through_done() -> None:
    """The bcrypt check runs on a worker thread; the answer comes back on the loop."""
    async def main() -> tuple[bool, str, bool]:
        loop = asyncio.get_running_loop()
        checker = PasswordChecker(_passwords(), loop)
        answer: asyncio.Future = loop.create_future()
        threads: list[str] = []
        original = checker.passwords.check

        def spy(user, password):
            threads.append(threading.current_thread().name)
            return original(user, password)

        checker.passwords.check = spy  # type: ignore[method-assign]
        checker("alice", b"right", "10.0.0.1:5000", answer.set_result)
        ok = await asyncio.wait_for(answer, 10)
        cached: list[bool] = []
        checker("alice", b"right", "10.0.0.1:5001", cached.append)  # remembered: answered at once
        checker.close()
        return ok, threads[0], cached == [True]

    ok, thread, answered_at_once = asyncio.run(main())
    assert ok and thread.startswith("relaymq-bcrypt") and answered_at_once


def test_failures_are_delayed_more_for_each_recent_failure_from_the_same_source() -> None:
    """0.1 s, 0.2 s, 0.4 s ... for one address; another address starts again at 0.1 s; a
    success clears the address's count."""
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        checker = PasswordChecker(_passwords(), loop)
        delays = [checker.failure_delay("10.0.0.1") for _ in range(3)]
        delays.append(checker.failure_delay("10.0.0.2"))
        answer: asyncio.Future = loop.create_future()
        checker("alice", b"right", "10.0.0.1:7", answer.set_result)
        await answer
        delays.append(checker.failure_delay("10.0.0.1"))
        start = loop.time()
        refused: asyncio.Future = loop.create_future()
        checker("alice", b"wrong", "10.0.0.3:9", refused.set_result)
        assert await refused is False
        delays.append(loop.time() - start)
        checker.close()
        return delays

    delays = asyncio.run(main())
    b = BASE_FAILURE_DELAY
    assert delays[:5] == [b, 2 * b, 4 * b, b, b]
    assert delays[5] >= b  # the wrong password's answer waited for its delay


def test_source_is_the_address_without_the_port() -> None:
    assert source_of("10.1.2.3:41000") == "10.1.2.3"
    assert source_of("::1:41000") == "::1"
    assert source_of("?") == "?"
