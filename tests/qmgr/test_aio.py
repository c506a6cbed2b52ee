"""The asyncio API and embedded use (issue 5 "Embedded use"): the same queue manager inside an
application with its own store, never blocking the event loop."""

from __future__ import annotations

import asyncio

from relaymq.qmgr import QueueManager
from relaymq.qmgr.aio import AsyncQueueManager

from .helpers import body, text_message


def test_async_put_get_and_waiting_get_does_not_block_loop(tmp_path) -> None:
    """issue 5: get with wait does not block the loop: while one task waits for a message,
    another task on the same loop runs and puts it."""

    async def main() -> list[str]:
        aqm = await AsyncQueueManager.open("DEVICE", str(tmp_path), synchronous="NORMAL")
        await aqm.define_queue("Q")
        waiter = asyncio.create_task(aqm.get("Q", wait=30.0))
        await asyncio.sleep(0)  # let the waiter start
        ticks = 0
        while not waiter.done() and ticks < 3:  # the loop is free while the get waits
            ticks += 1
            await asyncio.sleep(0)
        await aqm.put("Q", text_message("async hello"))
        got = await waiter
        await aqm.put("Q", text_message("second"))
        depth = await aqm.depth("Q")
        browsed = await aqm.browse("Q")
        await aqm.close()
        return [body(got), str(depth), body(browsed[0]), str(ticks)]

    assert asyncio.run(main()) == ["async hello", "1", "second", "3"]


def test_many_waiting_gets_hold_no_thread_and_end_when_cancelled(tmp_path) -> None:
    """Issue 15 finding 7 (the same wait for REST's waiting DELETE): 64 gets waiting at once -
    more than the default executor has threads - leave a call that needs a thread answering,
    each is a listener on its queue rather than a blocked thread, and cancelling them removes
    every listener; the message put afterwards stays."""

    async def main() -> None:
        aqm = await AsyncQueueManager.open("DEVICE", str(tmp_path), synchronous="NORMAL")
        await aqm.define_queue("Q")
        waiters = [asyncio.create_task(aqm.get("Q", wait=300.0)) for _ in range(64)]
        deadline = asyncio.get_running_loop().time() + 10
        while aqm.sync.listener_count("Q") < 64:  # each wait is a listener, not a thread
            assert asyncio.get_running_loop().time() < deadline, "the gets do not wait as listeners"
            await asyncio.sleep(0.01)
        assert await asyncio.wait_for(aqm.depth("Q"), 1.0) == 0  # a worker thread is free
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        assert aqm.sync.listener_count("Q") == 0
        await aqm.put("Q", text_message("kept"))
        assert await aqm.depth("Q") == 1
        await aqm.close()

    asyncio.run(main())


def test_device_keeps_working_offline_and_transmits_later(tmp_path) -> None:
    """issue 5 "Embedded use" / everyplace.md item 8: a device's async remote queue keeps
    accepting puts with no connection, across a restart, until the link is back."""
    with QueueManager.open("DEVICE", str(tmp_path), synchronous="NORMAL") as device:
        device.define_queue("READINGS", "remote", queue_manager="SERVER", mode="async")
        for i in range(3):
            device.put("READINGS", text_message(f"r{i}"), qmgr="SERVER")
    with QueueManager.open("DEVICE", str(tmp_path), synchronous="NORMAL") as device, \
            QueueManager.open("SERVER", None) as server:
        server.define_queue("READINGS")
        for uid, queue, message in device.pending_transmission("SERVER"):
            server.put(queue, message, uid=uid, confirm_id=1)
            server.confirm_put(uid)
            device.transmitted(uid)
        assert [body(m) for m in server.browse("READINGS")] == ["r0", "r1", "r2"]
        assert device.depth("READINGS", qmgr="SERVER") == 0
