"""Input transports bound to flows: a telemetry port, an HTTP path, a queue.

A binding outlives the flow it feeds: redeploying a flow points the same binding at the new
flow's runtime before the old one drains, so a device stays connected, an HTTP path never
answers 404 in between, and no message is lost or run twice (issue 6: "redeploying a flow
under load loses no message"). A binding is closed when no flow uses it any more.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from relaymq.flows import http_headers, qmgr_port
from relaymq.flows.errors import FlowException
from relaymq.flows.pending import PendingReplies
from relaymq.message.mqtt_mapping import from_mqtt, user_identifier
from relaymq.flows.nodes.http_reply import REQUEST_ID_PATH
from relaymq.flows.runtime import Delivery, FlowRuntime
from relaymq.flows.scada import ScadaEndpoint
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.tree import Element
from relaymq.store.base import StoredMessage

log = logging.getLogger("relaymq.flows")


@dataclass
class Target:
    """Where a binding sends messages: a runtime and the input node's name and domain."""

    runtime: FlowRuntime
    node: str
    domain: str | None
    timeout: float = 0.0


class Binding:
    """Base: a key (``port:1884``, ``path:/x``, ``queue:Q``), the current target, open/close."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.target: Target | None = None

    @property
    def flow_name(self) -> str | None:
        return self.target.runtime.flow.name if self.target is not None else None

    async def open(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class ScadaBinding(Binding):
    """A SCADAInput port. When its flow falls QUEUE_LIMIT messages behind, the publications
    already decoded wait in a backlog and the port stops reading from its devices until the
    flow has caught up (TCP backpressure), so a burst of QoS 1 batches is slowed, never dropped.
    A publication is acknowledged to its device only when its run has finished
    (relaymq.flows.scada)."""

    def __init__(self, config: Any, host: str, port: int, main_broker: Any = None) -> None:
        super().__init__(f"port:{port}")
        self.endpoint = ScadaEndpoint(config, host, port, self._publication, main_broker=main_broker)
        self.dropped = 0
        self._backlog: deque[Delivery] = deque()
        self._drainer: asyncio.Task[None] | None = None

    def _publication(self, stored: StoredMessage, user: str, done: Callable[[], None],
                     release: Callable[[], None] | None) -> None:
        target = self.target
        if target is None:  # only while the port closes: the device gets no ack for it
            self.dropped += 1
            log.warning("port %s: no flow bound, publication on %s dropped", self.endpoint.port, stored.topic)
            return
        users = stored.properties.get("user_property") or []
        message = from_mqtt(stored.topic, stored.payload, stored.qos, list(users), target.domain or "BLOB",
                            user_id=user)
        delivery = Delivery(target.node, message, finished=lambda outcome, err: done(), release=release)
        if not self._backlog and target.runtime.submit_nowait(delivery):
            return
        self._backlog.append(delivery)
        if self._drainer is None:
            self._reading(False)
            self._drainer = asyncio.get_running_loop().create_task(self._drain_backlog())

    def _reading(self, on: bool) -> None:
        broker = self.endpoint.broker
        for conn in list(broker.connections) if broker is not None else []:
            switch = getattr(conn.link, "resume_reading" if on else "pause_reading", None)
            if switch is not None:
                try:
                    switch()
                except RuntimeError:  # already paused/resumed or closing
                    pass

    async def _drain_backlog(self) -> None:
        try:
            while self._backlog:
                target = self.target
                if target is None:
                    self.dropped += len(self._backlog)
                    self._backlog.clear()
                    break
                delivery = self._backlog.popleft()
                delivery.input_node = target.node
                await target.runtime.submit(delivery)
        finally:
            self._drainer = None
            self._reading(True)

    async def open(self) -> None:
        await self.endpoint.start()

    async def close(self) -> None:
        await self.endpoint.stop()
        if self._drainer is not None:
            await self._drainer


def error_reply(status: int, text: str) -> tuple[int, list[tuple[str, str]], bytes]:
    body = (text + "\n").encode("utf-8")
    return status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))], body


class HttpBinding(Binding):
    """An HTTPInput path on the broker's HTTP server."""

    def __init__(self, server: Any, path: str, pending: PendingReplies,
                 response_type: Callable[..., Any]) -> None:
        super().__init__(f"path:{path}")
        self.server = server
        self.path = path
        self.pending = pending
        self.response_type = response_type

    async def open(self) -> None:
        # The HTTP server's authentication (relaymq.http.auth) guards flow paths too: with a
        # password file, callers log in with basic authentication, and their user name is
        # the message's UserIdentifier.
        auth = getattr(self.server, "auth", None)
        self.server.add_route("*", self.path, auth.protect(self.handle) if auth is not None else self.handle)

    async def close(self) -> None:
        self.server.remove_route("*", self.path)

    async def handle(self, request: Any) -> Any:
        target = self.target
        if target is None:
            return self.response_type(*error_reply(503, "no flow serves this path"))
        query = urlencode(request.query, doseq=True) if request.query else ""
        folder = http_headers.input_header_folder(request.method, request.path + ("?" + query if query else ""),
                                                  request.http_version, list(request.headers))
        message = Message(MQMessage(body=bytes(request.body)), configured_domain=target.domain or "BLOB",
                          transport=[folder])
        message.mq.md.UserIdentifier = user_identifier(request.user or "")
        request_id = secrets.token_hex(12)
        local = Element("LocalEnvironment")
        local.set(REQUEST_ID_PATH, request_id)
        future: asyncio.Future[tuple[int, list[tuple[str, str]], bytes]] = asyncio.get_running_loop().create_future()
        self.pending.waiting[request_id] = future

        def finished(outcome: str, err: FlowException | None) -> None:
            if outcome != "ok" and not future.done():
                why = f"{err.kind} in node {err.node}: {err.text}" if err is not None else outcome
                future.set_result(error_reply(500, f"the flow failed: {why}"))

        try:
            await target.runtime.submit(Delivery(target.node, message, local, finished, redeliver=False))
            status, headers, body = await asyncio.wait_for(asyncio.shield(future), target.timeout)
        except TimeoutError:
            status, headers, body = error_reply(504, f"no reply from the flow within {target.timeout:g}s")
        finally:
            self.pending.waiting.pop(request_id, None)
        return self.response_type(status, headers, body)


class QueueBinding(Binding):
    """An MQInput queue: one getter task hands messages to the current target. It gets the
    next message only once the target accepted the previous one, so a redeploy never leaves
    a message between two flows; each message is confirmed (deleted) only when its run has
    finished (relaymq.flows.qmgr_port)."""

    def __init__(self, aio: Any, queue: str, counts: qmgr_port.BackoutCounts | None = None) -> None:
        super().__init__(f"queue:{queue}")
        self.aio = aio
        self.queue = queue
        self.counts = counts if counts is not None else qmgr_port.BackoutCounts(None)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._confirms: set[asyncio.Task[None]] = set()

    def _notify(self, queue: str) -> None:  # called in the putting thread after a put commits
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        await qmgr_port.recover(self.aio, self.queue)
        self.aio.add_listener(self.queue, self._notify)
        self._task = self._loop.create_task(self._run(), name=f"MQInput {self.queue}")

    async def close(self) -> None:
        # Not cancelled: a get in progress must hand its message over, never drop it.
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        if self._confirms:
            await asyncio.gather(*self._confirms, return_exceptions=True)
        self.aio.remove_listener(self.queue, self._notify)

    def _finished(self, uid: str) -> Callable[[str, FlowException | None], None]:
        async def confirm() -> None:
            await qmgr_port.confirm(self.aio, uid)
            await self.counts.forget(self.queue, uid)

        def done(outcome: str, err: FlowException | None) -> None:
            task = asyncio.get_running_loop().create_task(confirm())
            self._confirms.add(task)
            task.add_done_callback(self._confirms.discard)
        return done

    def _backed_out(self, uid: str) -> Callable[[Message], Awaitable[None]]:
        def harden(message: Message) -> Awaitable[None]:
            return self.counts.record(self.queue, uid, message.mq.md.BackoutCount)
        return harden

    async def _run(self) -> None:
        while not self._stopping:
            target = self.target
            if target is None:
                await self._wait()
                continue
            self._wake.clear()
            try:
                got = await qmgr_port.get_unconfirmed(self.aio, self.queue)
            except Exception as err:  # noqa: BLE001 - the queue was deleted, the store failed
                log.error("MQInput %s: get failed: %s", self.queue, err)
                await self._wait(1.0)
                continue
            if got is None:
                await self._wait()
                continue
            uid, message = got
            # A redeploy may have switched flows while the get ran: the message goes to the
            # current one (the old one may have drained already); while the binding closes
            # (target None) the flow it was got for is still running and takes it.
            target = self.target or target
            if target.domain and message.configured_domain is None:
                message.configured_domain = target.domain
            md = message.mq.md
            md.BackoutCount = max(md.BackoutCount, self.counts.get(self.queue, uid))
            await target.runtime.submit(Delivery(target.node, message, finished=self._finished(uid),
                                                 backed_out=self._backed_out(uid)))

    async def _wait(self, limit: float = 0.5) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), limit)
        except TimeoutError:
            pass
