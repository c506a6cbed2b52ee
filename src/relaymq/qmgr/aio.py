"""The asyncio face of the queue manager (issue 5, embedded use).

A put, and a get that finds a message at once, run on the event loop when the queue manager's
store is the storage engine (:mod:`relaymq.store.engine`): the change is submitted without
waiting (``put(wait=False)``, ``get(durable=False)``) and the coroutine awaits the engine's
commit, so any number of concurrent callers share each commit without a thread each (issue
14: the REST interface and the pub/sub engine are such callers). Everything else runs the
synchronous method in a worker thread (``asyncio.to_thread``): a get that waits for a message,
a put over a synchronous route (it goes to the destination over the channel), the in-memory
store. A ``get`` with ``wait`` polls in short slices so cancelling the awaiting task frees its
thread within a slice instead of holding it for the whole wait.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from relaymq.message.message import Message
from relaymq.qmgr.errors import StoreFailed
from relaymq.qmgr.manager import QueueManager
from relaymq.qmgr.resolution import SYNCHRONOUS_ROUTES
from relaymq.qmgr.states import Envelope

#: Longest time one worker thread blocks inside a waiting get.
WAIT_SLICE = 0.25


async def committed(engine: Any, through_outage: bool = True) -> None:
    """Return once everything submitted to ``engine`` so far is committed; raise StoreFailed
    when it cannot be (the store failed: nothing of it may be acknowledged). While the engine
    cannot write (a full disk) this waits until it writes again; with ``through_outage=False``
    (a shutdown) it raises StoreFailed instead."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished(error: BaseException | None) -> None:  # the writer thread (or this one, at once)
        loop.call_soon_threadsafe(_settle, done, error)

    watchers = engine.outage_watchers
    if not through_outage:
        if engine.write_error is not None:
            raise StoreFailed(f"store cannot write: {engine.write_error}")
        watchers.append(finished)
    try:
        engine.on_commit(finished)
        await done
    finally:
        if not through_outage:
            watchers.remove(finished)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(StoreFailed(f"store write failed: {error}"))


class AsyncQueueManager:
    """Coroutine versions of :class:`QueueManager`'s methods; ``sync`` is the wrapped one."""

    def __init__(self, qm: QueueManager) -> None:
        self.sync = qm

    @classmethod
    async def open(cls, name: str, data_dir: str | None, **options: Any) -> AsyncQueueManager:
        return cls(await asyncio.to_thread(QueueManager.open, name, data_dir, **options))

    @property
    def name(self) -> str:
        return self.sync.name

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.sync, method), *args, **kwargs)

    async def define_queue(self, name: str, kind: str = "local", **properties: Any) -> Any:
        return await self._call("define_queue", name, kind, **properties)

    async def alter_queue(self, name: str, **changes: Any) -> Any:
        return await self._call("alter_queue", name, **changes)

    async def delete_queue(self, name: str, **options: Any) -> None:
        await self._call("delete_queue", name, **options)

    async def queue_names(self) -> list[str]:
        return self.sync.queue_names()

    async def depth(self, name: str, **options: Any) -> int:
        return await self._call("depth", name, **options)

    def _loop_engine(self, queue: str, qmgr: str | None) -> Any:
        """The storage engine when an operation on ``queue`` can run on the event loop (the
        queue is held here, the store is the engine), else None."""
        engine = getattr(self.sync.store, "engine", None)
        if engine is None:
            return None
        if qmgr is not None and self.sync.resolve(queue, qmgr).kind in SYNCHRONOUS_ROUTES:
            return None
        return engine

    async def put(self, queue: str, message: Message, **options: Any) -> bytes:
        engine = self._loop_engine(queue, options.get("qmgr"))
        if engine is None:
            return await self._call("put", queue, message, **options)
        msg_id = self.sync.put(queue, message, wait=False, **options)
        await committed(engine)
        return msg_id

    async def get_envelope(self, queue: str, *, wait: float = 0.0, **options: Any) -> Envelope | None:
        engine = self._loop_engine(queue, options.get("qmgr"))
        if engine is not None:  # a message there now: taken on the loop, then its commit awaited
            envelope = self.sync.get_envelope(queue, durable=False, **options)
            if envelope is not None:
                await committed(engine)
                return envelope
            if wait <= 0:
                return None
        deadline = time.monotonic() + wait
        while True:
            slice_ = min(max(deadline - time.monotonic(), 0.0), WAIT_SLICE)
            envelope = await self._call("get_envelope", queue, wait=slice_, **options)
            if envelope is not None or time.monotonic() >= deadline:
                return envelope

    async def get(self, queue: str, *, wait: float = 0.0, **options: Any) -> Message | None:
        envelope = await self.get_envelope(queue, wait=wait, **options)
        return envelope.message if envelope is not None else None

    wait_for_message = get_envelope

    async def browse(self, queue: str, **options: Any) -> list[Message]:
        return await self._call("browse", queue, **options)

    async def browse_envelopes(self, queue: str, **options: Any) -> list[Envelope]:
        return await self._call("browse_envelopes", queue, **options)

    async def browse_and_lock(self, queue: str, **options: Any) -> list[Envelope]:
        return await self._call("browse_and_lock", queue, **options)

    async def unlock(self, queue: str, uid: str, lock_id: int, **options: Any) -> None:
        await self._call("unlock", queue, uid, lock_id, **options)

    async def delete(self, queue: str, uid: str, **options: Any) -> None:
        await self._call("delete", queue, uid, **options)

    async def confirm_put(self, uid: str, **options: Any) -> bool:
        """``qmgr=`` and ``queue=`` confirm a put made over a synchronous route there."""
        return await self._call("confirm_put", uid, **options)

    async def confirm_get(self, uid: str, **options: Any) -> bool:
        """``qmgr=`` and ``queue=`` confirm a get from a synchronous remote queue there."""
        return await self._call("confirm_get", uid, **options)

    async def undo(self, queue: str, confirm_id: int, **options: Any) -> int:
        return await self._call("undo", queue, confirm_id, **options)

    async def pending_transmission(self, remote_qmgr: str, **options: Any) -> list[tuple[str, str, Message]]:
        return await self._call("pending_transmission", remote_qmgr, **options)

    async def transmitted(self, uid: str) -> None:
        await self._call("transmitted", uid)

    def add_listener(self, queue: str, fn: Any) -> None:
        """Listeners run in the putting thread: an asyncio user passes a function that hands
        over with ``loop.call_soon_threadsafe``."""
        self.sync.add_listener(queue, fn)

    def remove_listener(self, queue: str, fn: Any) -> None:
        self.sync.remove_listener(queue, fn)

    @property
    def state(self) -> str:
        return self.sync.state

    async def trigger_transmission(self) -> bool:
        return await self._call("trigger_transmission")

    async def delete_queue_manager(self) -> None:
        await asyncio.to_thread(self.sync.delete_queue_manager)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)
