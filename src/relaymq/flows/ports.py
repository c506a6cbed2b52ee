"""The flows' I/O inside the broker process (the :class:`relaymq.flows.context.Ports` the
runtime commits to): puts through the queue manager, publications through the pub/sub engine
(MQTT subscribers and queue subscribers, at any subscription point), HTTP replies to waiting
requests, HTTP requests through relaymq.http.client, trace lines to the log or a file.

Every method but ``trace`` runs on the broker's event loop; the runtime's worker threads reach
them through :class:`relaymq.flows.runtime.ThreadPorts`.

What a commit waits for (README decision 4, so that SCADAInput may acknowledge afterwards):
each put returns once the queue manager has it on disk; a publication's copies for queue
subscribers, at a named subscription point and at the default one (those the hand-over to the
MQTT broker produces), are on disk when the pub/sub service's ``perform`` returns; its
deliveries to persistent MQTT sessions are waited for in the broker's store (``durable``).
``submit`` puts a run's outputs into one unit of work of the storage engine instead (one
transaction, one commit awaited; docs/flows.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from relaymq.flows.context import Action
from relaymq.flows.pending import PendingReplies
from relaymq.message.mqtt_mapping import mqtt_publication
from relaymq.flows.publishing import engine_publication
from relaymq.message.message import Message

log = logging.getLogger("relaymq.flows.trace")


class NoQueueManager(RuntimeError):
    """A flow put to a queue but the broker runs without a queue manager."""


class NoPubSubEngine(RuntimeError):
    """A publication at a named subscription point, but the pub/sub engine is not running."""


class BrokerPorts:
    def __init__(self, broker: Any, services: dict[str, Any], pending: PendingReplies) -> None:
        self.broker = broker
        self.services = services
        self.pending = pending
        self._trace_lock = threading.Lock()

    async def put(self, queue: str, message: Message, qmgr: str | None) -> bytes:
        aio = self.services.get("qmgr.aio")
        if aio is None:
            raise NoQueueManager(f"cannot put to {queue}: no queue manager is running")
        return await aio.put(queue, message, qmgr=qmgr)

    async def publish(self, topic: str, message: Message, *, qos: int, retain: bool, subscription_point: str) -> None:
        """Publish through the pub/sub engine at ``subscription_point`` (seed 003 l.1925-1962).

        The engine answers with actions, which the pub/sub service performs: the copies for
        queue subscribers at a named point, or the hand-over to the MQTT broker at the default
        point (which reaches the default point's queue subscribers through the service's tap).
        Returns when every copy for a queue subscriber is on disk; a refused one fails the
        commit (``PutFailed``), as a refused MQOutput put does."""
        service: Any = self.services.get("pubsub")
        performed = publish_now(self.broker, service, topic, message, qos=qos, retain=retain,
                                subscription_point=subscription_point)
        if performed is not None:
            await service.durable()
            performed.check()

    def submit(self, actions: list[Action], release: Callable[[], None] | None) -> Awaitable[None] | None:
        """Ports.submit: the puts (to queues this queue manager puts to on the event loop) and
        publications of a run, and ``release()`` after them, in one unit of work of the
        broker's storage engine, which holds the queues, the queue subscribers' copies and the
        persistent sessions: one transaction. ``release`` is left out when an output escapes
        the unit (a copy put over a synchronous route, or refused at once); None (nothing
        submitted) when an output cannot join it at all (a put over a synchronous route, a
        JMS send, no storage engine)."""
        engine = getattr(self.broker.store, "engine", None)
        aio = self.services.get("qmgr.aio")
        if engine is None or not all(action.kind == "publish" or (
                action.kind == "put" and aio is not None and aio.on_loop(action.target, action.qmgr))
                for action in actions):
            return None
        unit = _Submitting(self.broker, self.services.get("pubsub"), aio)
        with engine.unit():
            for action in actions:
                action.run(unit)
            if release is not None and unit.whole:
                release()
        return unit.settle(engine)

    async def durable(self) -> None:
        """Wait until what the broker's store was given so far (deliveries to persistent
        sessions of the publications just made) is on disk."""
        done = asyncio.get_running_loop().create_future()

        def ready() -> None:
            if not done.done():
                done.set_result(None)

        self.broker.store.on_durable(ready)
        await done

    def subscribed(self, topic: str, subscription_point: str) -> bool:
        """Whether any subscription (MQTT session or queue subscriber) at the point matches
        ``topic``: a Publication node takes ``noMatch`` when none does."""
        service = self.services.get("pubsub")
        if not subscription_point:
            tree = self.broker.subscriptions
        elif service is not None:
            tree = service.engine.trees.get(subscription_point)
            if tree is None:
                return False
        else:
            return False
        return any(True for _ in tree.match(topic))

    def http_reply(self, request_id: str, status: int, headers: list[tuple[str, str]], body: bytes) -> bool:
        return self.pending.reply(request_id, status, headers, body)

    async def http_request(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes,
                           timeout: float) -> Any:
        from relaymq.http.client import HttpClientError, request

        try:
            return await request(method, url, headers=headers, body=body, timeout=timeout)
        except HttpClientError as err:
            if "no response within" in str(err):
                raise TimeoutError(str(err)) from None
            raise OSError(str(err)) from None

    def trace(self, node: str, text: str, destination: str) -> None:
        """A Trace node's line: to the log, or appended to a file. Called from the runtime's
        worker threads (blocking file I/O is fine there); lines of one file never interleave."""
        if destination == "log":
            log.info("%s: %s", node, text)
            return
        with self._trace_lock:
            try:
                with open(destination, "a", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            except OSError as err:
                log.error("trace file %s: %s", destination, err)


def publish_now(broker: Any, service: Any, topic: str, message: Message, *, qos: int, retain: bool,
                subscription_point: str) -> Any:
    """The synchronous part of a publication (BrokerPorts.publish): the pub/sub service's
    ``submit`` of the engine's actions (returned: await its ``durable``, then ``check()``), or
    without the pub/sub engine the hand-over to the MQTT broker (None)."""
    from relaymq.pubsub.model import MqttPublish

    if service is None:
        if subscription_point:
            raise NoPubSubEngine(f"cannot publish at subscription point {subscription_point!r}: "
                                 "the pub/sub engine is not running")
        payload, properties = mqtt_publication(message)
        broker.publish(topic, payload, qos=qos, retain=retain, properties=properties)
        return None
    now = broker.clock.wall()
    publication = engine_publication(topic, message, subscription_point=subscription_point, qos=qos,
                                     retain=retain, now=now)
    actions = service.engine.publish(publication, now)
    for action in actions:
        if isinstance(action, MqttPublish):
            action.qos = qos  # the node's QoS (the engine would derive it from persistence)
    return service.submit(actions)


class _Submitting:
    """The ports a run's actions are submitted to inside one unit of work (BrokerPorts.submit):
    each put and publication submitted without waiting; ``whole`` stays True while every copy
    is in the unit (none refused at once, none put over a synchronous route)."""

    def __init__(self, broker: Any, service: Any, aio: Any) -> None:
        self.broker, self.service, self.aio = broker, service, aio
        self.performed: list[Any] = []
        self.whole = True

    def put(self, queue: str, message: Message, qmgr: str | None) -> None:
        self.aio.sync.put(queue, message, qmgr=qmgr, wait=False)

    def publish(self, topic: str, message: Message, *, qos: int, retain: bool, subscription_point: str) -> None:
        performed = publish_now(self.broker, self.service, topic, message, qos=qos, retain=retain,
                                subscription_point=subscription_point)
        if performed is not None:
            self.performed.append(performed)
            self.whole = self.whole and not performed.errors and not performed.remote

    async def settle(self, engine: Any) -> None:
        """Return once the unit is committed (and the copies put over synchronous routes are
        done); raise the first refusal (PutFailed) or a failed commit (StoreFailed)."""
        if self.service is not None and self.performed:
            await self.service.durable()
        elif self.aio is not None and engine is getattr(self.aio.sync.store, "engine", None):
            await self.aio.wait_committed(engine)
        else:
            from relaymq.qmgr.aio import committed

            await committed(engine)
        for performed in self.performed:
            performed.check()
