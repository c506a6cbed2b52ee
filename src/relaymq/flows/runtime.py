"""Running a deployed flow in the broker: instances, ordering, backout (flows-http.md
items 3-4).

Input transports hand :class:`Delivery` objects to :meth:`FlowRuntime.submit`. ``1 +
additional_instances`` worker tasks take them; each runs the message's nodes on a thread of
the flow's execution group (relaymq.flows.group) and then, back on the event loop, commits
the run's outputs. With ``order_mode: user_id`` each MQMD UserIdentifier is pinned to one
worker (by the CRC-32 of the user id: the same worker at every start), so one user's
messages keep their order while different users' run concurrently
(seed 003 l.4665-4716); otherwise workers share one queue and may finish out of order.

Node code on a worker thread reaches the broker only through :class:`ThreadPorts`: HTTP
replies and subscription look-ups hop to the event loop, HTTPRequest's coroutine runs there
(``RunContext.wait``), trace lines are written from the thread; puts and publications are
only recorded and performed at the commit, on the loop.

Outside the broker (the Spark pipeline, tests), :func:`run_messages` runs messages through a
flow one after the other with this same failure handling and collects what each run would
commit.

A run that raises past the input node is backed out: its recorded outputs are discarded, the
message's BackoutCount goes up by one and it is run again from its input node. When a run
fails and BackoutCount reaches the backout threshold (at least one run always happens), the
message goes to the input node's ``failure`` terminal; when that is not connected or fails
too, it is put to the flow's backout queue (default SYSTEM.DEAD.LETTER.QUEUE). Either way it
carries why it failed in its usr folder (relaymq.flows.error_report). A delivery that must not
run twice (HTTPInput: its run may have called web services) skips the reruns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import zlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.context import Action, Ports, RunContext
from relaymq.flows.error_report import with_error
from relaymq.flows.errors import FlowException
from relaymq.flows.flow import Flow
from relaymq.flows.group import ExecutionGroup
from relaymq.message.message import Message
from relaymq.message.tree import Element

log = logging.getLogger("relaymq.flows")

DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"
#: Deliveries waiting per worker queue before submit() waits (bounded memory).
QUEUE_LIMIT = 1000


@dataclass
class Delivery:
    """One input message for one input node. ``finished(outcome)`` is called once, with
    ``"ok"``, ``"failure"`` (handled on the failure path), ``"backout"`` (put to the backout
    queue) or ``"discarded"`` (nowhere to put it, or not to be redelivered).

    ``backed_out(message)`` is awaited after a failed run raised the message's BackoutCount
    and before it runs again (MQInput writes the count to disk). ``redeliver`` False: a
    failed run is not run again - HTTPInput, whose runs may have called web services - and
    the message goes to the failure path at once, or is given up (never to a backout queue)."""

    input_node: str
    message: Message
    local_environment: Element = field(default_factory=lambda: Element("LocalEnvironment"))
    finished: Callable[[str, FlowException | None], None] | None = None
    backed_out: Callable[[Message], Awaitable[None]] | None = None
    redeliver: bool = True
    #: Submits the input's release marker inside the unit of work of the run's outputs
    #: (a SCADAInput QoS 2 publication: relaymq.flows.releases), None for other inputs.
    release: Callable[[], None] | None = None


@dataclass
class FlowStats:
    received: int = 0
    completed: int = 0
    backouts: int = 0
    failures: int = 0
    backout_queue: int = 0
    discarded: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


async def commit(context: RunContext, release: Callable[[], None] | None = None) -> None:
    """Commit a run's outputs (with ``release``: ``RunContext.commit``); a queue manager or
    broker that refuses one (queue full, unknown queue) fails the run like a node would."""
    try:
        await context.commit(release)
    except FlowException:
        raise
    except Exception as exc:
        raise FlowException(f"output failed: {type(exc).__name__}: {exc}", node="(commit)") from exc


class ThreadPorts:
    """The ports as node code on a worker thread sees them (see the module docstring).
    Created on the event loop; a call made on the loop itself goes straight through."""

    def __init__(self, ports: Ports, loop: asyncio.AbstractEventLoop) -> None:
        self.ports = ports
        self.loop = loop
        self._loop_thread = threading.get_ident()

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        if threading.get_ident() == self._loop_thread:
            return fn(*args)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to the waiting thread
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(call)
        return future.result()

    def wait(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """RunContext.wait: run a node's coroutine on the event loop, block this thread."""
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("a flow's node coroutine cannot be waited for on the event loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    # Called on the worker thread.
    def http_reply(self, request_id: str, status: int, headers: list[tuple[str, str]], body: bytes) -> bool:
        return bool(self._on_loop(self.ports.http_reply, request_id, status, headers, body))

    def subscribed(self, topic: str, subscription_point: str) -> bool | None:
        return self._on_loop(self.ports.subscribed, topic, subscription_point)

    def trace(self, node: str, text: str, destination: str) -> None:
        self.ports.trace(node, text, destination)

    # Called on the event loop (HTTPRequest's coroutine, the commit).
    async def http_request(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes,
                           timeout: float) -> Any:
        return await self.ports.http_request(method, url, headers, body, timeout)

    def put(self, queue: str, message: Message, qmgr: str | None) -> Any:
        return self.ports.put(queue, message, qmgr)

    def publish(self, topic: str, message: Message, *, qos: int, retain: bool, subscription_point: str) -> Any:
        return self.ports.publish(topic, message, qos=qos, retain=retain, subscription_point=subscription_point)

    async def durable(self) -> None:
        await self.ports.durable()

    def submit(self, actions: list[Action], release: Callable[[], None] | None) -> Awaitable[None] | None:
        return self.ports.submit(actions, release)


class FlowRuntime:
    """The workers of one deployed flow. ``group`` is its execution group (the threads node
    code runs on); without one the runtime has a group of its own."""

    def __init__(self, flow: Flow, ports: Ports, group: ExecutionGroup | None = None) -> None:
        self.flow = flow
        self.ports = ports
        self.group = group if group is not None else ExecutionGroup(flow.name)
        self.stats = FlowStats()
        self.instances = 1 + flow.settings.additional_instances
        by_user = flow.settings.order_mode == "user_id"
        count = self.instances if by_user else 1
        self._queues: list[asyncio.Queue[Delivery | None]] = [asyncio.Queue(QUEUE_LIMIT) for _ in range(count)]
        self._by_user = by_user
        self._workers: list[asyncio.Task[None]] = []
        self._thread_ports: ThreadPorts | None = None

    def start(self) -> None:
        self._thread_ports = ThreadPorts(self.ports, asyncio.get_running_loop())
        self.group.reserve(self.instances)
        for i in range(self.instances):
            queue = self._queues[i % len(self._queues)]
            self._workers.append(asyncio.get_running_loop().create_task(
                self._work(queue), name=f"flow {self.flow.name} #{i}"))

    def _queue_for(self, delivery: Delivery) -> asyncio.Queue[Delivery | None]:
        if not self._by_user:
            return self._queues[0]
        # CRC-32, not hash(): str hashes change with each process (PYTHONHASHSEED), so which
        # users shared a worker changed from one start to the next
        user = delivery.message.mq.md.UserIdentifier.strip()
        return self._queues[zlib.crc32(user.encode("utf-8", "surrogatepass")) % len(self._queues)]

    async def submit(self, delivery: Delivery) -> None:
        """Queue a delivery (waits while the flow is QUEUE_LIMIT behind)."""
        self.stats.received += 1
        await self._queue_for(delivery).put(delivery)

    def submit_nowait(self, delivery: Delivery) -> bool:
        """Queue a delivery from synchronous code; False when the flow is too far behind."""
        try:
            self._queue_for(delivery).put_nowait(delivery)
        except asyncio.QueueFull:
            return False
        self.stats.received += 1
        return True

    async def drain(self) -> None:
        """Stop after every queued delivery has run (redeploy and undeploy lose nothing)."""
        for i in range(self.instances):
            await self._queues[i % len(self._queues)].put(None)
        if self._workers:
            await asyncio.gather(*self._workers, return_exceptions=True)
            self.group.release(self.instances)
        self._workers = []

    async def _work(self, queue: asyncio.Queue[Delivery | None]) -> None:
        while True:
            delivery = await queue.get()
            if delivery is None:
                return
            try:
                await self.run(delivery)
            except Exception:  # a bug in the runtime costs one message, never the worker
                log.exception("flow %s: internal error", self.flow.name)

    def _context(self) -> RunContext:
        if self._thread_ports is None:
            self._thread_ports = ThreadPorts(self.ports, asyncio.get_running_loop())
        return RunContext(self._thread_ports, self.flow.name, wait=self._thread_ports.wait)

    async def _on_thread(self, fn: Callable[..., None], *args: Any) -> None:
        """Run node code on a thread of the execution group (the loop stays free). The group
        has threads once the runtime started (or run_messages reserved one)."""
        await asyncio.get_running_loop().run_in_executor(self.group.executor, fn, *args)

    async def run(self, delivery: Delivery) -> str:
        """Run one delivery to its end: success, failure path or backout queue."""
        while True:
            context = self._context()
            assembly = Assembly(delivery.message, delivery.local_environment.copy())
            try:
                await self._on_thread(self.flow.process, delivery.input_node, assembly, context)
                await commit(context, delivery.release)
            except FlowException as err:
                context.rollback()
                md = delivery.message.mq.md
                md.BackoutCount += 1
                self.stats.backouts += 1
                log.info("flow %s: backed out message (BackoutCount %d): %s in %s",
                         self.flow.name, md.BackoutCount, err.text, err.node)
                if not delivery.redeliver or md.BackoutCount >= max(1, self.flow.settings.backout_threshold):
                    return self._finish(delivery, await self._failed(delivery, err), err)
                if delivery.backed_out is not None:
                    await delivery.backed_out(delivery.message)
                continue
            self.stats.completed += 1
            return self._finish(delivery, "ok", None)

    def _finish(self, delivery: Delivery, outcome: str, err: FlowException | None) -> str:
        if delivery.finished is not None:
            delivery.finished(outcome, err)
        return outcome

    async def _failed(self, delivery: Delivery, err: FlowException) -> str:
        """Past the threshold: the failure terminal, else the backout queue; either way the
        message carries why it failed (relaymq.flows.error_report)."""
        node = delivery.input_node
        failed = with_error(delivery.message, err, self.flow.name)
        if self.flow.connected(node, "failure"):
            context = self._context()
            assembly = Assembly(failed, delivery.local_environment.copy(), exceptions=[err])
            try:
                await self._on_thread(self.flow.propagate, node, "failure", assembly, context)
                await commit(context, delivery.release)
                self.stats.failures += 1
                return "failure"
            except FlowException as again:
                context.rollback()
                log.warning("flow %s: the failure path failed too: %s", self.flow.name, again.text)
        if not delivery.redeliver:  # nothing to back out to: the sender is told (HTTP 500)
            log.warning("flow %s: run failed: %s in %s", self.flow.name, err.text, err.node)
            self.stats.discarded += 1
            return "discarded"
        queue = self.flow.settings.backout_queue or DEAD_LETTER_QUEUE
        try:
            result = self.ports.put(queue, failed, None)
            if isinstance(result, Awaitable):
                await result
        except Exception as exc:  # noqa: BLE001 - no queue manager, or the queue refuses it
            log.error("flow %s: message discarded, cannot put it to %s: %s", self.flow.name, queue, exc)
            self.stats.discarded += 1
            return "discarded"
        self.stats.backout_queue += 1
        return "backout"


@dataclass
class RunResult:
    """What one message came to in :func:`run_messages`: ``outcome`` as ``Delivery.finished``
    says it (``ok``, ``failure``, ``backout``, ``discarded``), ``error`` why it failed (the
    FlowException of its last run; None when it ended ``ok``), ``message`` the input message
    (its MQMD BackoutCount counts the failed runs), and what the run that counted would commit:
    ``puts`` (queue, message) and ``publications`` (topic, message, qos, retain, subscription
    point). ``outcome`` ``failure``: the outputs of the input node's failure path; ``backout``:
    one put of the message to the backout queue."""

    outcome: str
    message: Message
    puts: list[tuple[str, Message]] = field(default_factory=list)
    publications: list[tuple[str, Message, int, bool, str]] = field(default_factory=list)
    error: FlowException | None = None


def run_messages(flow: Flow, messages: Iterable[Message], input_node: str | None = None) -> list[RunResult]:
    """Run ``messages`` through ``flow`` one after the other, outside the broker, with the
    broker runtime's failure handling: a message whose run fails is backed out and run again
    (BackoutCount + 1) up to the flow's backout threshold, then goes to the input node's
    ``failure`` terminal, else to the flow's backout queue (SYSTEM.DEAD.LETTER.QUEUE by
    default). Nothing is put or published: each result holds what its run would commit.

    ``input_node``: where the messages enter (default: the flow's first input node). Node code
    runs on one worker thread, as in a deployed flow with no additional instances; the call
    runs its own event loop, so it cannot be made from a coroutine (use the broker's runtime
    there). A node that needs I/O (HTTPRequest) fails its run.
    """
    from relaymq.flows.context import CollectingPorts

    node = input_node or flow.input_nodes()[0].name

    async def run_all() -> list[RunResult]:
        ports = CollectingPorts()
        runtime = FlowRuntime(flow, ports)
        runtime.group.reserve(1)
        try:
            results: list[RunResult] = []
            for message in messages:
                errors: list[FlowException | None] = [None]

                def finished(outcome: str, err: FlowException | None, errors: list = errors) -> None:
                    errors[0] = err

                outcome = await runtime.run(Delivery(node, message, finished=finished))
                results.append(RunResult(outcome, message, list(ports.puts), list(ports.publications), errors[0]))
                ports.puts.clear()
                ports.publications.clear()
            return results
        finally:
            runtime.group.release(1)

    return asyncio.run(run_all())
