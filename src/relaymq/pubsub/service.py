"""The pub/sub engine inside the broker process (pubsub.md; relaymq.services.registry SERVICE_MODULES).

``start`` builds a ``PubSubEngine`` on the broker's own subscription tree and retained store
(one engine for every kind of client), switches the topic ACLs on for MQTT clients too when
``[pubsub] topic_security`` is set, and, when the queue manager runs
(``context.services["qmgr"]``), listens on SYSTEM.BROKER.CONTROL.QUEUE and the publication
input queues. It registers itself as ``context.services["pubsub"]``.

Threads and the loop: the queue manager calls listeners in the putting thread, so a listener
only wakes the queue's drain task on the loop.

One commit for every copy (issue 14): the engine's puts are made synchronously, on the loop,
without waiting (``QueueManager.put(wait=False)``), so a publication's copies for queue
subscribers join the unit of work of the MQTT packet that published it and commit in the
transaction its PUBACK waits for. A psc command is taken off its queue, processed, its state
changes and its replies submitted in one unit of work, and nothing of it is durable until all
of it is (a crash before the commit leaves the command on its queue, to be processed after the
restart, exactly once). Subscriptions and named-point retained publications are rows of the
broker's database (:mod:`relaymq.pubsub.state`); with ``--store memory`` nothing is kept.

A copy that its subscriber queue refuses (full, put-inhibited) goes to the dead-letter queue
with an MQDLH naming the reason, never silently away; only when the dead-letter queue refuses
it too is it dropped, logged as an error and counted (``put_failures``).

Callers that must know their publication's copies are on disk before they acknowledge it (a
flow's commit, so that SCADAInput's PUBACK keeps its promise) perform the engine's actions
with :meth:`PubSubService.perform`: it returns when every one is durable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Iterable
from typing import Any

from relaymq.auth.authorities import ANONYMOUS
from relaymq.broker.retain import store_retained
from relaymq.message.message import Message
from relaymq.pubsub.admin import PscAdmin
from relaymq.pubsub.authority import RECEIVE
from relaymq.pubsub.commands import CONTROL_QUEUE, dead_letter_message
from relaymq.pubsub.engine import PubSubEngine
from relaymq.pubsub.model import (
    PSC_KEY,
    REMOVED_ADMIN,
    REMOVED_LAST_MEMBER,
    REMOVED_REPLACED,
    ClearRetained,
    DeadLetter,
    MqttPublish,
    Publication,
    Put,
)
from relaymq.pubsub import reasons as r
from relaymq.pubsub.locality import from_neighbour, mark_local, not_for_local_subscriptions
from relaymq.pubsub.settings import PubSubSettings
from relaymq.pubsub.state import PubSubState
from relaymq.pubsub.stats import CONTENT_TYPE as STATS_CONTENT_TYPE
from relaymq.pubsub.stats import statistics_payload, statistics_topic
from relaymq.pubsub.topicacl import SUBSCRIBE, CombinedAcl
from relaymq.qmgr.definitions import SYSTEM_DEAD_LETTER_QUEUE
from relaymq.qmgr.resolution import SYNCHRONOUS_ROUTES
from relaymq.qmgr.aio import committed
from relaymq.qmgr.errors import BadName, QueueError, StoreFailed, UnknownQueue, UnknownQueueManager
from relaymq.store.base import StoreError

log = logging.getLogger("relaymq.pubsub")

#: Seconds between sweeps for expired subscriptions and retained publications.
EXPIRY_SWEEP_SECONDS = 5.0
#: Commands a queue's drain takes before it waits for their commit (``handle_next``): the
#: units commit as the writer reaches them; the wait is shared.
DRAIN_BATCH = 64
DRAIN_SLICE = 0.01
#: MQRC_Q_FULL: the reason in the MQDLH of a copy whose subscriber queue had no room.
MQRC_Q_FULL = 2053


class PutFailed(RuntimeError):
    """``PubSubService.perform``: the queue manager refused a put (the others were made)."""


class Performed:
    """What :meth:`PubSubService.submit` did: the puts it tried, the refusals so far (a put
    over a synchronous route adds its own when it fails), how many of those it started
    (they are not in the caller's unit of work)."""

    __slots__ = ("attempts", "errors", "remote")

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self.attempts = 0
        self.remote = 0

    def check(self) -> None:
        """Raise :class:`PutFailed` naming the first refusal, if any."""
        if self.errors:
            raise PutFailed(f"{len(self.errors)} of {self.attempts} put(s) to queue subscribers failed, "
                            f"the first: {self.errors[0]}") from self.errors[0]


class PubSubService:
    """The running engine and its queue listeners."""

    def __init__(self, context: Any, settings: PubSubSettings) -> None:
        self.context = context
        self.broker = context.broker
        self.settings = settings
        self.qm = context.services.get("qmgr")
        self.aio = context.services.get("qmgr.aio")
        broker_config = context.config.broker
        self.data_dir = broker_config.data_dir
        #: The broker's storage engine (None with --store memory: nothing is kept).
        self.store_engine = getattr(self.broker.store, "engine", None)
        self.state = PubSubState(self.store_engine, self.data_dir) if self.store_engine is not None else None
        self.topic_acl = settings.topic_acl(self.data_dir)
        self._acl_stamp = _stamp(settings.acl_path(self.data_dir))
        self.engine = PubSubEngine(
            self.qm.name if self.qm is not None else settings.broker_name,
            broker_name=settings.broker_name,
            default_tree=self.broker.subscriptions,
            default_retained=self.broker.retained,
            mqtt_bridge=True,
            acl=self.topic_acl if settings.topic_security else None,
            sender=BrokerSenderAuthority(self.broker, self.qm),
            input_queues=settings.input_queue_points(),
            queue_check=queue_checker(self.qm) if self.qm is not None else None,
            events=settings.events,
            temporary_queue=self.qm.dynamic.is_temporary if self.qm is not None else None,
        )
        self._loop = asyncio.get_running_loop()
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._listeners: list[tuple[str, Any]] = []
        self._bridging: Publication | None = None
        #: While ``perform`` runs actions: the puts that failed, for its PutFailed.
        self._errors: list[BaseException] | None = None
        self._subscription_changes: list[tuple[bool, str, Any, str | None, str | None, Any]] = []
        self.http = context.services.get("http")
        self.admin: PscAdmin | None = None
        self._administrators = tuple(context.config.access.administrators)
        #: Copies for queue subscribers that neither their queue nor the dead-letter queue took.
        self.put_failures = 0
        self._attempts = 0  # puts tried in the current perform, for its PutFailed
        #: Puts over synchronous routes still being made (``_remote_put``).
        self._remote: set[asyncio.Future[bytes]] = set()
        #: Subscriptions of deleted queues being removed (``_queue_deleted``).
        self._removals: set[asyncio.Future[None]] = set()

    # ---------------------------------------------------------------- life cycle
    async def start(self) -> None:
        if self.state is not None:
            data = await asyncio.to_thread(self.state.load)
            legacy = self.state.legacy_file()
            if legacy is not None and not data["subscriptions"]:
                data = await asyncio.to_thread(_read_json, legacy)
                self.engine.restore(data)
                self.state.save_all(self.engine)
                await asyncio.to_thread(self.state.engine.flush)
                os.replace(legacy, legacy + ".imported")
                log.info("pub/sub: imported %d subscription(s) from %s (renamed %s.imported)",
                         len(self.engine.subscriptions), legacy, legacy)
            else:
                self.engine.restore(data)
            self.engine.take_dirty()
            self.engine.changed = False
        if self.settings.topic_security:
            self.broker.acl = CombinedAcl(self.broker.acl, self.topic_acl)
        self.broker.publication_taps.append(self._tap)
        if self.settings.events:
            self.broker.subscriptions.observers.append(self._observe_subscription)
        self._tasks.append(asyncio.create_task(self._sweep()))
        if self.settings.stats_interval_ms > 0:
            self._tasks.append(asyncio.create_task(self._statistics()))
        if self.http is not None:
            self.admin = PscAdmin(self, admin_remote=self.settings.admin_remote, administrators=self._administrators)
            self.admin.install(self.http)
        if self.qm is None:
            log.warning("pub/sub: no queue manager, so psc commands are not served (MQTT pub/sub only)")
            return
        # A deleted subscriber queue takes its subscriptions at once (item 19, seed 2830-2843);
        # those of queues deleted while the broker was down go now.
        self.qm.queue_deleted_listeners.append(self._queue_deleted)
        await self._remove_queue_subscriptions(self.engine.remove_unreachable)
        for queue in [CONTROL_QUEUE, *self.engine.input_queues]:
            if queue not in self.qm.queue_names():
                await self.aio.define_queue(queue)
            event = asyncio.Event()
            self._wake[queue] = event

            def listener(_queue: str, event: asyncio.Event = event) -> None:
                self._loop.call_soon_threadsafe(event.set)

            self.qm.add_listener(queue, listener)
            self._listeners.append((queue, listener))
            event.set()  # drain what arrived while the broker was down
            self._tasks.append(asyncio.create_task(self._drain(queue, event)))
        log.info("pub/sub engine of %s: %d queue subscriptions, commands on %s; topic security %s",
                 self.qm.name, len(self.engine.subscriptions), ", ".join([CONTROL_QUEUE, *self.engine.input_queues]),
                 "on" if self.settings.topic_security else "off")

    async def stop(self) -> None:
        if self.admin is not None:
            self.admin.uninstall(self.http)
        if self._tap in self.broker.publication_taps:
            self.broker.publication_taps.remove(self._tap)
        if self._observe_subscription in self.broker.subscriptions.observers:
            self.broker.subscriptions.observers.remove(self._observe_subscription)
        if self.qm is not None and self._queue_deleted in self.qm.queue_deleted_listeners:
            self.qm.queue_deleted_listeners.remove(self._queue_deleted)
        for queue, listener in self._listeners:
            try:
                self.qm.remove_listener(queue, listener)
            except Exception:  # the queue manager may be closing already
                log.debug("removing listener on %s failed", queue, exc_info=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._removals, return_exceptions=True)
        try:
            with self.unit():
                self._save()
            await self.durable(through_outage=False)
        except StoreError as error:  # the store failed earlier and said so; nothing more to keep
            log.error("pub/sub: the last state changes are not stored: %s", error)

    # ---------------------------------------------------------------- the storage engine
    def unit(self) -> contextlib.AbstractContextManager[None]:
        """A unit of work of the broker's storage engine (nothing to group without one)."""
        return self.store_engine.unit() if self.store_engine is not None else contextlib.nullcontext()

    async def durable(self, through_outage: bool = True) -> None:
        """Return once everything submitted so far is committed (at once without a store) and
        the puts over synchronous routes made so far are done; raise StoreError when the commit
        cannot be (the store failed: nothing of it is acknowledged), or (``through_outage``
        False: stopping) when the store cannot write just now."""
        if self.store_engine is None:
            if self._remote:
                await asyncio.gather(*list(self._remote), return_exceptions=True)
            return
        remote = list(self._remote)
        try:
            await committed(self.store_engine, through_outage)
        except StoreFailed as error:
            raise StoreError(str(error)) from error
        if remote:
            await asyncio.gather(*remote, return_exceptions=True)

    def _save(self) -> None:
        """Submit the engine's changed state (inside the caller's unit of work)."""
        if self.state is not None:
            self.state.save(self.engine)
        else:
            self.engine.take_dirty()
            self.engine.changed = False

    # ---------------------------------------------------------------- inputs
    async def _drain(self, queue: str, event: asyncio.Event) -> None:
        while True:
            await event.wait()
            event.clear()
            while True:
                try:
                    handled = await self.handle_next(queue, DRAIN_BATCH)
                except Exception:  # one bad message must not stop the queue's listener
                    log.exception("pub/sub: a message from %s could not be handled", queue)
                    break
                if not handled:
                    break

    async def handle_next(self, queue: str, most: int = 1) -> int:
        """Take the next commands off ``queue``, up to ``most``, and process each as one unit of
        work: its removal from the queue, the (de)registration it makes, the publications it
        causes and its reply commit together (a crash before the commit leaves the command on
        the queue); returns how many were taken once they are all durable (0: the queue was
        empty). The commands are processed one after the other, each seeing what the ones
        before it did, and their units share the wait for the commit: one group commit serves
        a run of commands instead of one commit each (issue 14, ``bench_pubsub.py``'s psc
        rows). A run also ends after DRAIN_SLICE seconds, so other clients are served between
        runs; a command that raises ends it too: the ones before it are still made durable."""
        taken = 0
        deadline = self._loop.time() + DRAIN_SLICE
        try:
            while taken < most and self._take_one(queue):
                taken += 1
                if self._loop.time() >= deadline:
                    break
        finally:
            if taken:
                await self.durable()
        return taken

    def _take_one(self, queue: str) -> bool:
        """Take one command off ``queue`` and process it in its own unit of work; False when
        the queue is empty."""
        with self.unit():
            message = self.qm.get(queue, durable=False)
            if message is None:
                return False
            try:
                self._handle(message, queue)
            finally:
                self._save()
        return True

    async def handle(self, message: Message, queue: str) -> None:
        """One command message (already taken off its queue): process it and make its effects
        durable before returning."""
        with self.unit():
            try:
                self._handle(message, queue)
            finally:
                self._save()
        await self.durable()

    def _handle(self, message: Message, queue: str) -> None:
        for action in self.engine.handle_message(message, queue, self.broker.clock.wall()):
            self._perform(action)

    async def remove_subscriptions(self, criteria: dict[str, Any], by: str | None = None) -> list[dict[str, Any]]:
        """An administrator removes the queue subscriptions matching ``criteria`` (item 19):
        durable first, then the Removed events (cause ``administrator``, item 45)."""
        subs = self.engine.select(**criteria)
        described = [s.describe() for s in subs]
        actions: list[Any] = []
        with self.unit():
            for sub in subs:
                actions.extend(self.engine.remove(sub, REMOVED_ADMIN))
            self._save()
        await self.durable()
        with self.unit():
            for action in actions:
                self._perform(action)
        if subs:
            log.info("pub/sub: %s removed %d subscription(s): %s", by or "an administrator", len(subs),
                     "; ".join(f"{d['topic']} -> {d['qmgr']}/{d['queue']}" for d in described))
        return described

    # ---------------------------------------------------------------- MQTT subscription events
    def _observe_subscription(self, added: bool, topic_filter: str, key: Any, value: Any) -> None:
        """Every change of the broker's tree (item 45): MQTT SUBSCRIBE/UNSUBSCRIBE and ended
        sessions; queue subscriptions announce themselves through the engine. What the event
        says is decided now, while the session is as the change left it; the events are
        published once the broker has finished handling the packet.

        A removal's cause is the broker's, set while it removes (``broker.removal_cause``):
        ``unsubscribed``, ``replaced``, ``session_ended`` (a clean session's client left),
        ``clean_start``, ``expired``, ``administrator``. A SUBSCRIBE that replaces a
        subscription to the same filter is no change when QoS and filter are the same, else a
        Removed (``replaced``) and an Added. A shared subscription is announced per group:
        Added with its first member, Removed (``last_member_left``) with its last."""
        if type(key) is tuple and key and key[0] == PSC_KEY:
            return
        shared = type(key) is tuple
        session = None if shared else self.broker.sessions.get(key)
        attributes = None if shared else (getattr(value, "qos", None), getattr(value, "filter_text", ""))
        cause = None
        if shared and not added:
            cause = REMOVED_LAST_MEMBER
        elif not added:
            cause = self.broker.removal_cause
        changes = self._subscription_changes
        if added and changes:
            last = changes[-1]
            if not last[0] and last[1] == topic_filter and last[2] == key:
                if last[5] == attributes:
                    changes.pop()  # the same subscription again: no change
                    return
                changes[-1] = (*last[:4], REMOVED_REPLACED, last[5])
        if not changes:
            self._loop.call_soon(self._announce_subscriptions)
        changes.append((added, topic_filter, key, getattr(session, "username", None), cause, attributes))

    def _announce_subscriptions(self) -> None:
        changes, self._subscription_changes = self._subscription_changes, []
        for added, topic_filter, key, user, cause, attributes in changes:
            shared = type(key) is tuple
            qos, filter_text = attributes if attributes is not None else (None, "")
            self._perform(self.engine.mqtt_subscription_event(
                added, topic_filter, client_id=None if shared else key, share_group=key[1] if shared else None,
                user=user, filter_text=filter_text or "", qos=qos, cause=cause))

    def _tap(self, stored: Any) -> int:
        """Every routed MQTT publication: deliver to queue subscribers at the default point,
        in the publication's unit of work. Returns how many queue subscribers it was put for."""
        bridging = self._bridging
        engine = self.engine
        if bridging is None and not engine.subscribed:
            # no queue subscriber at all (the common broker): nothing to route, no clock read
            if engine.changed:
                self._save()
            return 0
        now = self.broker.clock.wall()
        if bridging is not None and bridging.topic == stored.topic:
            if bridging.retain and stored.retain:
                self.engine.note_retained(stored.topic, stored.msg_id, bridging)
            actions = self.engine.route(bridging, now)
        else:
            view = self.broker.tapped_view  # the filters' verdicts of the sessions' routing, shared
            actions = self.engine.deliver_mqtt(stored.topic, stored.payload, stored.qos, stored.properties,
                                               stored.expiry_at, now, publication=(
                                                   view.publication if view is not None and view.message is stored
                                                   else None))
            if actions and from_neighbour(stored.properties):  # item 18: Local subscriptions see this broker's only
                actions = not_for_local_subscriptions(actions)
        copies = self._perform_all(actions)
        if self.engine.changed:
            self._save()
        return copies

    # ---------------------------------------------------------------- outputs
    async def perform(self, actions: Iterable[Any]) -> None:
        """Perform engine actions (``engine.publish``'s, for instance) and return once every
        put they lead to is on disk: the copies for queue subscribers, those that the hand-over
        of an ``MqttPublish`` to the broker produces through the tap (default subscription
        point) included, and a changed engine state (a retained publication at a named point).
        A put that is refused (queue full, unknown queue) is logged, the others are still
        made, and then :class:`PutFailed` is raised naming the first refusal - the caller
        decides (a flow's commit fails, so its run is backed out)."""
        performed = self.submit(actions)
        await self.durable()
        performed.check()

    def submit(self, actions: Iterable[Any]) -> Performed:
        """The synchronous part of :meth:`perform`: every put submitted in one unit of work
        (the caller's, when it has one open); await :meth:`durable`, then ``check()``."""
        remote = len(self._remote)
        performed = Performed()
        outer, self._errors = self._errors, performed.errors
        self._attempts = 0
        try:
            with self.unit():
                self._perform_all(actions)
                self._save()
        finally:
            self._errors = outer
        performed.attempts, performed.remote = self._attempts, len(self._remote) - remote
        return performed

    def _perform_all(self, actions: Iterable[Any]) -> int:
        """Perform ``actions`` in order; each run of puts to queues of this queue manager (a
        publication's copies) goes to it in one call, one submission to the store (issue 14).
        Returns how many copies of publications were put for."""
        copies = 0
        run: list[Put] = []
        for action in actions:
            if isinstance(action, Put):
                copies += action.purpose == "publication"
                if self.qm is not None and action.qmgr == self.qm.name:
                    run.append(action)
                    continue
            if run:
                self._put_all(run)
                run = []
            self._perform(action)
        if run:
            self._put_all(run)
        return copies

    def _put_all(self, puts: list[Put]) -> None:
        """Puts to queues of this queue manager, as :meth:`_put` makes each."""
        assert self.qm is not None
        self._attempts += len(puts)
        try:
            results = self.qm.put_all([(put.queue, put.message) for put in puts])
        except Exception as error:  # noqa: BLE001 - logged and counted, as each put's
            for put in puts:
                self._failed(error, put)
            return
        for put, result in zip(puts, results, strict=True):
            if isinstance(result, QueueError):
                self._refused(put, result)

    def _perform(self, action: Any) -> None:
        if isinstance(action, Put):
            self._put(action)
        elif isinstance(action, MqttPublish):
            self._bridging = action.publication
            properties = action.properties or None
            if action.publication is not None and action.publication.local:
                properties = mark_local(properties)  # item 18: never forwarded to a neighbour
            try:
                self.broker.publish(action.topic, action.payload, action.qos, action.retain,
                                    properties, action.expiry_interval)
            finally:
                self._bridging = None
        elif isinstance(action, ClearRetained):
            store_retained(self.broker, self.broker.new_message(action.topic, b"", 0, True))
        elif isinstance(action, DeadLetter):
            self._dead_letter(action)

    def _put(self, action: Put) -> None:
        """One put, submitted in the current unit of work. A copy that its queue refuses goes to
        the dead-letter queue (MQDLH with the reason); a failed response is logged."""
        self._attempts += 1
        if self.qm is None:
            self._failed(RuntimeError("no queue manager is running"), action)
            return
        qmgr = None if action.qmgr == self.qm.name else action.qmgr
        try:
            if qmgr is not None and self.qm.resolve(action.queue, qmgr).kind in SYNCHRONOUS_ROUTES:
                # a synchronous route puts at the destination at once, over the channel: not
                # on the loop, and its durability is the destination's own commit
                self._remote_put(action, qmgr)
                return
            self.qm.put(action.queue, action.message, qmgr=qmgr, wait=False)
        except QueueError as error:
            self._refused(action, error)
        except Exception as error:  # noqa: BLE001 - logged and counted, the others are still made
            self._failed(error, action)

    def _refused(self, action: Put, error: QueueError) -> None:
        """A put its queue refused: from a publisher inside the broker (perform: a flow) the
        refusal goes back to it, which backs its run out; from an MQTT publisher the copy goes
        to the dead-letter queue."""
        if action.purpose == "publication" and self._errors is None and self._dead_letter(
                DeadLetter(action.message, getattr(error, "reason", MQRC_Q_FULL) or MQRC_Q_FULL,
                           action.queue), quiet=True):
            log.warning("pub/sub: %s/%s refused a publication (%s): it went to %s", action.qmgr, action.queue,
                        error, SYSTEM_DEAD_LETTER_QUEUE)
            return
        self._failed(error, action)

    def _remote_put(self, action: Put, qmgr: str) -> None:
        """A put over a synchronous route, on a worker thread; ``durable`` waits for it too."""
        errors = self._errors
        future = self._loop.run_in_executor(None, lambda: self.qm.put(action.queue, action.message, qmgr=qmgr))

        def done(finished: asyncio.Future[bytes]) -> None:
            self._remote.discard(finished)
            error = finished.exception() if not finished.cancelled() else None
            if error is not None:
                self.put_failures += 1
                log.error("pub/sub %s to %s/%s failed: %s", action.purpose, action.qmgr, action.queue, error)
                if errors is not None:
                    errors.append(error)

        self._remote.add(future)
        future.add_done_callback(done)

    def _failed(self, error: BaseException, action: Put) -> None:
        self.put_failures += 1
        log.error("pub/sub %s to %s/%s failed (%d so far): %s", action.purpose, action.qmgr, action.queue,
                  self.put_failures, error)
        if self._errors is not None:
            self._errors.append(error)

    def _dead_letter(self, action: DeadLetter, quiet: bool = False) -> bool:
        """A message the engine could not take, to the dead-letter queue with an MQDLH naming
        the reason and the queue it came from. False (logged unless ``quiet``) when there is
        no dead-letter queue or it refuses the message."""
        if self.qm is None or SYSTEM_DEAD_LETTER_QUEUE not in self.qm.queue_names():
            if not quiet:
                log.warning("pub/sub: no %s: a message from %s that is not a command is dropped",
                            SYSTEM_DEAD_LETTER_QUEUE, action.queue)
            return False
        try:
            self.qm.put(SYSTEM_DEAD_LETTER_QUEUE, dead_letter_message(action, self.qm.name, self.broker.clock.wall()),
                        wait=False)
        except Exception as error:  # noqa: BLE001
            if not quiet:
                log.warning("pub/sub: the dead-letter queue refused a message from %s: %s", action.queue, error)
                if self._errors is not None:
                    self._errors.append(error)
            return False
        return True

    def _queue_deleted(self, definition: Any) -> None:
        """The queue manager deleted a queue (in the deleting thread): its subscriptions go,
        with the Removed event, cause ``queue_deleted`` (item 19). Only this queue manager's
        own queues: a subscription naming an alias of the queue stays (seed 2837-2843)."""
        if definition.owner != self.qm.name:
            return
        name = definition.name

        def removal() -> None:
            task = asyncio.ensure_future(self._remove_queue_subscriptions(
                lambda: self.engine.remove_queue(self.qm.name, name)))
            self._removals.add(task)
            task.add_done_callback(self._removals.discard)

        self._loop.call_soon_threadsafe(removal)

    async def _remove_queue_subscriptions(self, remove: Any) -> None:
        with self.unit():
            for action in remove():
                self._perform(action)
            self._save()
        await self.durable()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(EXPIRY_SWEEP_SECONDS)
            with self.unit():
                for action in self.engine.expire(self.broker.clock.wall()):
                    self._perform(action)
                self.engine.forget_retained(self.broker.retained.get)
                self._save()
            await self.durable()
            self.reload_acl()

    def reload_acl(self) -> bool:
        """Take a changed ACL file (``relaymq acl set|remove``) into the running ACLs, in
        place, so the engine and the MQTT side see it at once. True if it changed."""
        path = self.settings.acl_path(self.data_dir)
        stamp = _stamp(path)
        if stamp == self._acl_stamp:
            return False
        self._acl_stamp = stamp
        try:
            fresh = self.settings.topic_acl(self.data_dir)
        except (OSError, ValueError, KeyError) as error:
            log.warning("topic ACL file %s not taken: %s", path, error)
            return False
        self.topic_acl.groups, self.topic_acl.entries = fresh.groups, fresh.entries
        log.info("topic ACLs reloaded from %s", path)
        return True

    async def _statistics(self) -> None:
        """Item 44: the report every ``stats_interval_ms`` on the execution group's topic."""
        topic = statistics_topic(self.settings.broker_name, self.settings.execution_group)
        while True:
            await asyncio.sleep(self.settings.stats_interval_ms / 1000)
            network = self.context.services.get("network")
            payload = statistics_payload(self.broker, broker_name=self.settings.broker_name,
                                         execution_group=self.settings.execution_group,
                                         queue_subscriptions=len(self.engine.subscriptions),
                                         now=self.broker.clock.wall(),
                                         neighbors=network.statistics_rows() if network is not None else ())
            self.broker.publish(topic, payload, properties={"content_type": STATS_CONTENT_TYPE})



class BrokerSenderAuthority:
    """A psc command's sender's rights (issue 15 finding 3; engine.SenderAuthority): the
    broker's ACL (the ACL file, and the topic ACLs when topic security is on - ``broker.acl``,
    read per command so a SIGHUP reload applies) and the queue authorities of the queue
    manager. A blank UserIdentifier is an anonymous sender, never the broker itself."""

    def __init__(self, broker: Any, qm: Any) -> None:
        self.broker = broker
        self.qm = qm

    def topic(self, user: str | None, topic: str, permission: str) -> bool:
        acl = self.broker.acl
        if acl is None:
            return True
        # client id "": an ACL ``pattern`` with %c does not apply to a psc command
        if permission == SUBSCRIBE:
            return acl.can_subscribe(user, "", topic)
        if permission == RECEIVE:
            return acl.can_receive(user, "", topic)
        return acl.can_publish(user, "", topic)

    def queue(self, user: str | None, qmgr: str, queue: str, action: str) -> bool:
        """A queue of this queue manager only: another one's queues are guarded there, by
        its own authorities, when the broker's message arrives over the channel."""
        if self.qm is None or not (qmgr == self.qm.name or self.qm.is_local_name(qmgr)):
            return True
        return self.qm.may(user or ANONYMOUS, action, queue)


def queue_checker(qm: Any) -> Any:
    """The engine's ``queue_check`` for a real queue manager (item 31): 3074 for a queue
    manager it has no route to, 3076 for a queue that does not exist or has an invalid name;
    None when a put there would resolve (a local queue, a remote definition, a route)."""

    def check(qmgr: str, queue: str) -> int | None:
        try:
            qm.resolve(queue, None if qmgr == qm.name else qmgr)
        except UnknownQueueManager:
            return r.Q_MGR_NAME_ERROR
        except (UnknownQueue, BadName):
            return r.Q_NAME_ERROR
        return None

    return check


def _stamp(path: str) -> tuple[float, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime, info.st_size)


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


async def start(context: Any) -> PubSubService:
    settings = context.config.section("pubsub")
    service = PubSubService(context, settings)
    await service.start()
    context.services["pubsub"] = service
    return service
