"""The asyncio face of the queue manager (issue 5, embedded use).

A put, and a get that finds a message at once, run on the event loop when the queue manager's
store is the storage engine (:mod:`relaymq.store.engine`): the change is submitted without
waiting (``put(wait=False)``, ``get(durable=False)``) and the coroutine awaits the engine's
commit, so any number of concurrent callers share each commit without a thread each (issue
14: the REST interface and the pub/sub engine are such callers). Everything else runs the
synchronous method in a worker thread (``asyncio.to_thread``): a get or put over a
synchronous route (it goes to the destination over the channel), the in-memory store. A ``get`` with ``wait`` on a local queue holds no thread while it waits: it looks,
awaits an arrival on the queue (:class:`Arrivals`) and looks again, so cancelling the awaiting
task ends it at once; on a synchronous remote queue the destination waits, and the thread here
waits in short slices.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Self

from relaymq.message.message import Message
from relaymq.qmgr.errors import QueueError, StoreFailed
from relaymq.qmgr.manager import QueueManager
from relaymq.qmgr.resolution import SYNCHRONOUS_ROUTES
from relaymq.qmgr.states import Envelope

#: Longest time one worker thread blocks inside a waiting get.
WAIT_SLICE = 0.25
#: Seconds between looks at a queue no listener can be put on (a synchronous remote queue):
#: a waiting get there asks again this often, holding no thread in between.
ARRIVAL_POLL = 0.5


class Arrivals:
    """An asyncio.Event set (from whichever thread makes it visible) when a message may have
    arrived on a queue: a waiting getter clears it, looks without waiting, and awaits it. On a
    queue that takes no listener it is simply set every ARRIVAL_POLL seconds. Use as ``async
    with Arrivals(qm, queue, qmgr) as arrivals``; the listener is removed on exit, also when
    the waiting task is cancelled (its peer went away)."""

    def __init__(self, qm: Any, queue: str, qmgr: str | None = None) -> None:
        self.qm, self.queue = qm, queue
        self.local = qmgr is None or qmgr == qm.name
        self.event = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False

    def _heard(self, _queue: str) -> None:  # the putting thread
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.event.set)

    async def __aenter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        if self.local:
            try:
                self.qm.add_listener(self.queue, self._heard)
                self._listening = True
            except QueueError:
                pass  # not a local queue (or none): ARRIVAL_POLL; the get itself reports errors
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._listening:
            self._listening = False
            try:
                self.qm.remove_listener(self.queue, self._heard)
            except QueueError:
                pass  # the queue went away meanwhile

    async def wait(self, seconds: float) -> None:
        """Return when a message may have arrived, or after ``seconds``."""
        limit = seconds if self._listening else min(seconds, ARRIVAL_POLL)
        try:
            await asyncio.wait_for(self.event.wait(), max(limit, 0.0))
        except TimeoutError:
            pass
        self.event.clear()


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


class _BatchWaiters:
    """The futures of the callers waiting for one engine batch's commit (on one loop)."""

    __slots__ = ("futures", "loop", "number", "settled")

    def __init__(self, loop: asyncio.AbstractEventLoop, number: int, first: asyncio.Future[None]) -> None:
        self.loop, self.number, self.futures, self.settled = loop, number, [first], False

    def finished(self, error: BaseException | None) -> None:  # the writer thread (or the loop's, at once)
        self.loop.call_soon_threadsafe(self._settle, error)

    def _settle(self, error: BaseException | None) -> None:  # the loop's thread
        self.settled = True
        for done in self.futures:
            _settle(done, error)


class AsyncQueueManager:
    """Coroutine versions of :class:`QueueManager`'s methods; ``sync`` is the wrapped one."""

    def __init__(self, qm: QueueManager) -> None:
        self.sync = qm
        #: The waiters of the engine batch that is filling now: they share one commit callback.
        self._batch_wait: _BatchWaiters | None = None

    async def _committed(self, engine: Any) -> None:
        """:func:`committed` for a put or get just submitted: the callers whose submissions are
        in the same engine batch share one on_commit callback and one wake-up of the loop
        (``Engine.batch_number``), which settles each one's future (a cancelled caller's
        future is simply skipped)."""
        loop = asyncio.get_running_loop()
        number = engine.batch_number  # read after the submission: that batch or a later one
        done: asyncio.Future[None] = loop.create_future()
        waiters = self._batch_wait
        if waiters is not None and waiters.number == number and waiters.loop is loop and not waiters.settled:
            waiters.futures.append(done)
        else:
            waiters = self._batch_wait = _BatchWaiters(loop, number, done)
            engine.on_commit(waiters.finished)
        await done

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

    def on_loop(self, queue: str, qmgr: str | None = None) -> bool:
        """Whether a put to ``queue`` is submitted on the event loop (``put``): the store is the
        storage engine and no synchronous route takes it. Such a put may be made with
        ``sync.put(wait=False)`` inside a unit of work of the engine."""
        return self._loop_engine(queue, qmgr) is not None

    async def wait_committed(self, engine: Any) -> None:
        """Return once everything submitted to ``engine`` (this queue manager's storage engine)
        so far is committed, puts made with ``sync.put(wait=False)`` in a unit of work among
        it: ``put``'s wait, shared with the other callers of the same batch."""
        await self._committed(engine)

    async def put(self, queue: str, message: Message, **options: Any) -> bytes:
        engine = self._loop_engine(queue, options.get("qmgr"))
        if engine is None:
            return await self._call("put", queue, message, **options)
        msg_id = self.sync.put(queue, message, wait=False, **options)
        await self._committed(engine)
        return msg_id

    async def _take(self, queue: str, engine: Any, **options: Any) -> Envelope | None:
        """A get that does not wait: on the loop with the engine (then its commit awaited),
        else in a worker thread."""
        if engine is None:
            return await self._call("get_envelope", queue, **options)
        envelope = self.sync.get_envelope(queue, durable=False, **options)
        if envelope is not None:
            await self._committed(engine)
        return envelope

    async def get_envelope(self, queue: str, *, wait: float = 0.0, **options: Any) -> Envelope | None:
        qmgr = options.get("qmgr")
        engine = self._loop_engine(queue, qmgr)
        if wait <= 0:
            return await self._take(queue, engine, **options)
        if qmgr is not None and self.sync.resolve(queue, qmgr).kind in SYNCHRONOUS_ROUTES:
            # The destination waits (one request over the channel); in slices here, so a
            # cancelled caller frees its thread within one.
            deadline = time.monotonic() + wait
            while True:
                slice_ = min(max(deadline - time.monotonic(), 0.0), WAIT_SLICE)
                envelope = await self._call("get_envelope", queue, wait=slice_, **options)
                if envelope is not None or time.monotonic() >= deadline:
                    return envelope
        # A local wait holds no thread: look, await an arrival, look again (issue 15 finding 7).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        async with Arrivals(self.sync, queue, qmgr) as arrivals:
            while True:
                envelope = await self._take(queue, engine, **options)
                if envelope is not None or loop.time() >= deadline:
                    return envelope
                await arrivals.wait(deadline - loop.time())

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
