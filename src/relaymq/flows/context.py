"""The context a flow runs one input message in: its unit of work and the I/O ports.

Why a unit of work: the seed's flows are transactional (seed 000 l.443; flows-http.md item 4):
a message that fails is backed out to its source, so whatever the failed run had already put
or published must not be seen. Output nodes therefore *record* puts and publications here;
the runtime commits them only after the whole run succeeded and discards them on a backout.
HTTP replies, HTTP requests and trace lines are not transactional (as in the seed's broker)
and go to the ports at once.

The commit submits every output in one unit of work of the broker's storage engine when the
ports can (``Ports.submit``: puts and publications that need no wait to be submitted), so
they commit in one transaction, with a SCADAInput's release marker (relaymq.flows.releases);
otherwise (a put over a synchronous route, a JMS send, no engine) it performs them one by
one, each awaited.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from relaymq.flows.errors import NeedsEventLoop
from relaymq.message.message import Message


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends to completion, synchronously; one that would wait
    for I/O is closed and NeedsEventLoop raised (the default ``RunContext.wait``)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise NeedsEventLoop("this flow waits for I/O: run it in the broker")


class Outputs(Protocol):
    """Where a recorded output goes (``Action.run``): the ports, or a unit of work of theirs."""

    def put(self, queue: str, message: Message, qmgr: str | None) -> Any: ...

    def publish(self, topic: str, message: Message, *, qos: int, retain: bool,
                subscription_point: str) -> Any: ...


class Ports(Outputs, Protocol):
    """The I/O a running flow needs; the broker service, tests and Spark each provide one."""

    def http_reply(self, request_id: str, status: int, headers: list[tuple[str, str]],
                   body: bytes) -> bool: ...

    async def http_request(self, method: str, url: str, headers: list[tuple[str, str]],
                           body: bytes, timeout: float) -> Any: ...

    def trace(self, node: str, text: str, destination: str) -> None: ...

    def subscribed(self, topic: str, subscription_point: str) -> bool | None:
        """Whether a subscription at the point matches ``topic`` (None: cannot tell)."""
        ...

    async def durable(self) -> None:
        """Wait until the publications made so far are as durable as the broker makes them."""
        ...

    def submit(self, actions: list[Action], release: Callable[[], None] | None) -> Awaitable[None] | None:
        """Submit every action in one unit of work of the storage engine, without waiting, with
        ``release()`` (a SCADAInput's release marker) when every output is in that unit; return
        what to await for all of them to be durable. None (nothing submitted) when one of them
        cannot be submitted so: the commit then performs them one by one."""
        ...


@dataclass
class Action:
    """A recorded output: ``kind`` is ``put`` or ``publish``; ``run(ports)`` performs it
    (``qmgr``: a put's queue manager)."""

    kind: str
    target: str
    message: Message
    run: Callable[[Outputs], Any]
    qmgr: str | None = None


@dataclass
class RunContext:
    """One run of one input message through a flow."""

    ports: Ports
    flow: str = ""
    pending: list[Action] = field(default_factory=list)
    #: Node evaluations so far in this run (bounded by flow.MAX_STEPS).
    steps: int = 0
    #: Runs a node's coroutine (HTTPRequest) to its result: on the broker's event loop from a
    #: worker thread, or ``drive`` outside the broker.
    wait: Callable[[Coroutine[Any, Any, Any]], Any] = drive

    def put(self, queue: str, message: Message, qmgr: str | None = None) -> None:
        self.pending.append(Action("put", queue, message, lambda p: p.put(queue, message, qmgr), qmgr))

    def publish(self, topic: str, message: Message, *, qos: int = 0, retain: bool = False,
                subscription_point: str = "") -> None:
        self.pending.append(Action("publish", topic, message, lambda p: p.publish(
            topic, message, qos=qos, retain=retain, subscription_point=subscription_point)))

    def rollback(self) -> list[Action]:
        """Forget the recorded outputs (a backout); returns them for the record."""
        dropped, self.pending = self.pending, []
        return dropped

    async def commit(self, release: Callable[[], None] | None = None) -> int:
        """Perform the recorded outputs in order; returns how many. In one unit of work with
        ``release()`` when the ports can (``Ports.submit``), else one by one, each awaited
        (ports may return awaitables: an asynchronous queue manager)."""
        actions, self.pending = self.pending, []
        submitted = self.ports.submit(actions, release)
        if submitted is not None:
            await submitted
        else:
            for action in actions:
                result = action.run(self.ports)
                if isinstance(result, Awaitable):
                    await result
        if any(action.kind == "publish" for action in actions):
            await self.ports.durable()
        return len(actions)


class CollectingPorts:
    """Ports that keep everything in lists: for running flows outside the broker (tests of
    pure flows, the Spark pipeline collecting what a flow would put and publish)."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, Message]] = []
        self.publications: list[tuple[str, Message, int, bool, str]] = []
        self.replies: list[tuple[str, int, list[tuple[str, str]], bytes]] = []
        self.traces: list[tuple[str, str, str]] = []

    def put(self, queue: str, message: Message, qmgr: str | None) -> None:
        self.puts.append((queue, message))

    def publish(self, topic: str, message: Message, *, qos: int, retain: bool,
                subscription_point: str) -> None:
        self.publications.append((topic, message, qos, retain, subscription_point))

    def http_reply(self, request_id: str, status: int, headers: list[tuple[str, str]],
                   body: bytes) -> bool:
        self.replies.append((request_id, status, headers, body))
        return True

    async def http_request(self, method: str, url: str, headers: list[tuple[str, str]],
                           body: bytes, timeout: float) -> Any:
        raise NeedsEventLoop("HTTPRequest needs the broker's HTTP client")

    def trace(self, node: str, text: str, destination: str) -> None:
        self.traces.append((node, text, destination))

    def subscribed(self, topic: str, subscription_point: str) -> bool | None:
        return None  # no subscribers to ask: a Publication node takes ``out``

    async def durable(self) -> None:
        return None

    def submit(self, actions: list[Action], release: Callable[[], None] | None) -> None:
        return None  # no storage engine: the commit performs each action
