"""The pub/sub engine inside the broker process (pubsub.md; server/app.py SERVICE_MODULES).

``start`` builds a ``PubSubEngine`` on the broker's own subscription tree and retained store
(one engine for every kind of client), switches the topic ACLs on for MQTT clients too when
``[pubsub] topic_security`` is set, and, when the queue manager runs
(``context.services["qmgr"]``), listens on SYSTEM.BROKER.CONTROL.QUEUE and the publication
input queues. It registers itself as ``context.services["pubsub"]``.

Threads and the loop: the queue manager calls listeners in the putting thread, so a listener
only wakes the queue's drain task on the loop. Puts leave from a single outbox task in
batches, one worker thread per destination queue (so each queue gets its messages in the order
the engine produced them, and puts to different queues share the queue manager's group
commits). MQTT publications reach queue subscribers through the broker's
publication tap. Subscriptions and named-point retained publications are kept in
``<data_dir>/pubsub-state.json``, written (off the loop) before the response that confirms the
change is put (README decision 4).

Callers that must know their publication's copies are on disk before they acknowledge it (a
flow's commit, so that SCADAInput's PUBACK keeps its promise) perform the engine's actions
with :meth:`PubSubService.perform` instead: it puts them itself - the copies the MQTT hand-over
produces through the tap included - and returns when every one is durable.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
from collections.abc import Iterable
from typing import Any

from relaymq.broker.retain import store_retained
from relaymq.message.message import Message
from relaymq.pubsub import reasons as r
from relaymq.pubsub.admin import PscAdmin
from relaymq.pubsub.engine import CONTROL_QUEUE, PubSubEngine, dead_letter_message
from relaymq.pubsub.model import (
    PSC_KEY,
    REMOVED_ADMIN,
    REMOVED_LAST_MEMBER,
    REMOVED_SESSION_ENDED,
    REMOVED_UNSUBSCRIBED,
    ClearRetained,
    DeadLetter,
    MqttPublish,
    Publication,
    Put,
)
from relaymq.pubsub.settings import PubSubSettings
from relaymq.pubsub.stats import CONTENT_TYPE as STATS_CONTENT_TYPE
from relaymq.pubsub.stats import statistics_payload, statistics_topic
from relaymq.pubsub.topicacl import CombinedAcl
from relaymq.qmgr.definitions import SYSTEM_DEAD_LETTER_QUEUE
from relaymq.qmgr.errors import BadName, UnknownQueue, UnknownQueueManager

log = logging.getLogger("relaymq.pubsub")

STATE_FILE = "pubsub-state.json"
#: Seconds between sweeps for expired subscriptions and retained publications.
EXPIRY_SWEEP_SECONDS = 5.0
#: Most puts the outbox takes in one batch, and destination queues it puts to side by side.
OUTBOX_BATCH = 512
OUTBOX_THREADS = 16


class PutFailed(RuntimeError):
    """``PubSubService.perform``: the queue manager refused a put (the others were made)."""


class PubSubService:
    """The running engine, its queue listeners and its outbox."""

    def __init__(self, context: Any, settings: PubSubSettings) -> None:
        self.context = context
        self.broker = context.broker
        self.settings = settings
        self.qm = context.services.get("qmgr")
        self.aio = context.services.get("qmgr.aio")
        broker_config = context.config.broker
        self.data_dir = broker_config.data_dir
        self.state_path = None if broker_config.store == "memory" else os.path.join(self.data_dir, STATE_FILE)
        self.topic_acl = settings.topic_acl(self.data_dir)
        self._acl_stamp = _stamp(settings.acl_path(self.data_dir))
        self.engine = PubSubEngine(
            self.qm.name if self.qm is not None else settings.broker_name,
            broker_name=settings.broker_name,
            default_tree=self.broker.subscriptions,
            default_retained=self.broker.retained,
            mqtt_bridge=True,
            acl=self.topic_acl if settings.topic_security else None,
            input_queues=settings.input_queue_points(),
            queue_check=queue_checker(self.qm) if self.qm is not None else None,
            events=settings.events,
        )
        self._loop = asyncio.get_running_loop()
        self._outbox: asyncio.Queue[Any] = asyncio.Queue()
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._listeners: list[tuple[str, Any]] = []
        self._bridging: Publication | None = None
        #: While ``perform`` runs actions: the puts they lead to, taken from the outbox.
        self._capture: list[Put | DeadLetter] | None = None
        self._busy = False
        self._putters = concurrent.futures.ThreadPoolExecutor(OUTBOX_THREADS, thread_name_prefix="pubsub-put")
        self._subscription_changes: list[tuple[bool, str, Any, str | None, str | None, Any]] = []
        self.http = context.services.get("http")
        self.admin: PscAdmin | None = None
        self._administrators = tuple(context.config.access.administrators)

    # ---------------------------------------------------------------- life cycle
    async def start(self) -> None:
        if self.state_path is not None and os.path.exists(self.state_path):
            data = await asyncio.to_thread(_read_json, self.state_path)
            self.engine.restore(data)
        if self.settings.topic_security:
            self.broker.acl = CombinedAcl(self.broker.acl, self.topic_acl)
        self.broker.publication_taps.append(self._tap)
        if self.settings.events:
            self.broker.subscriptions.observers.append(self._observe_subscription)
        self._tasks.append(asyncio.create_task(self._run_outbox()))
        self._tasks.append(asyncio.create_task(self._sweep()))
        if self.settings.stats_interval_ms > 0:
            self._tasks.append(asyncio.create_task(self._statistics()))
        if self.http is not None:
            self.admin = PscAdmin(self, admin_remote=self.settings.admin_remote, administrators=self._administrators)
            self.admin.install(self.http)
        if self.qm is None:
            log.warning("pub/sub: no queue manager, so psc commands are not served (MQTT pub/sub only)")
            return
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
        for queue, listener in self._listeners:
            try:
                self.qm.remove_listener(queue, listener)
            except Exception:  # the queue manager may be closing already
                log.debug("removing listener on %s failed", queue, exc_info=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._putters.shutdown(wait=True)
        await self._save()

    # ---------------------------------------------------------------- inputs
    async def _drain(self, queue: str, event: asyncio.Event) -> None:
        while True:
            await event.wait()
            event.clear()
            while True:
                try:
                    message = await self.aio.get(queue)
                except Exception:
                    log.exception("reading %s failed", queue)
                    break
                if message is None:
                    break
                try:
                    await self.handle(message, queue)
                except Exception:  # one bad message must not stop the queue's listener
                    log.exception("pub/sub: a message from %s could not be handled", queue)

    async def handle(self, message: Message, queue: str) -> None:
        """One command message: process it, make the change durable, then act. A change that
        cannot be made durable is undone (the engine goes back to the state on disk) and the
        command fails with 3008 COMMAND_FAILED: no ok leaves before the change is durable
        (README decision 4), and reissuing the command may succeed (seed 7020-7034)."""
        actions = self.engine.handle_message(message, queue, self.broker.clock.wall())
        try:
            await self._save()
        except OSError as error:
            log.error("pub/sub: cannot save %s (%s): the command is undone and fails with 3008",
                      self.state_path, error)
            await self._reload()
            actions = self.engine.failure(message, r.COMMAND_FAILED)
        puts = [a for a in actions if isinstance(a, (Put, DeadLetter))]
        for action in actions:
            if not isinstance(action, (Put, DeadLetter)):
                self._perform(action)  # the MQTT side (its tap may note a retained publication)
        if self.engine.changed:
            try:
                await self._save()  # before the response leaves
            except OSError as error:
                log.error("pub/sub: cannot save %s (%s)", self.state_path, error)
        for action in puts:
            self._perform(action)

    async def _reload(self) -> None:
        """Back to the last durable state (the state file, or nothing when there is none)."""
        data: Any = {}
        if self.state_path is not None and os.path.isfile(self.state_path):
            data = await asyncio.to_thread(_read_json, self.state_path)
        self.engine.reset()
        self.engine.restore(data)
        self.engine.changed = False

    async def remove_subscriptions(self, criteria: dict[str, Any], by: str | None = None) -> list[dict[str, Any]]:
        """An administrator removes the queue subscriptions matching ``criteria`` (item 19):
        durable first, then the Removed events (cause ``administrator``, item 45). Raises
        OSError, with nothing removed, when the change cannot be saved."""
        subs = self.engine.select(**criteria)
        described = [s.describe() for s in subs]
        actions: list[Any] = []
        for sub in subs:
            actions.extend(self.engine.remove(sub, REMOVED_ADMIN))
        try:
            await self._save()
        except OSError:
            await self._reload()
            raise
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

        The broker tells no cause, so it is inferred: a removal while the client's connection
        is live is an UNSUBSCRIBE (``unsubscribed``), otherwise the session ended (clean
        disconnect, expiry, clean-start takeover: ``session_ended``); a SUBSCRIBE that replaces
        a subscription to the same filter is no change when QoS and filter are the same, else
        a Removed (``replaced``) and an Added. A shared subscription is announced per group:
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
            connection = getattr(session, "connection", None)
            live = connection is not None and not connection.closed
            cause = REMOVED_UNSUBSCRIBED if live else REMOVED_SESSION_ENDED
        changes = self._subscription_changes
        if added and changes:
            last = changes[-1]
            if not last[0] and last[1] == topic_filter and last[2] == key:
                if last[5] == attributes:
                    changes.pop()  # the same subscription again: no change
                    return
                changes[-1] = (*last[:4], "replaced", last[5])
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

    def _tap(self, stored: Any) -> None:
        """Every routed MQTT publication: deliver to queue subscribers at the default point."""
        now = self.broker.clock.wall()
        bridging = self._bridging
        if bridging is not None and bridging.topic == stored.topic:
            if bridging.retain and stored.retain:
                self.engine.note_retained(stored.topic, stored.msg_id, bridging)
            actions = self.engine.route(bridging, now)
        else:
            actions = self.engine.deliver_mqtt(stored.topic, stored.payload, stored.qos, stored.properties,
                                               stored.expiry_at, now)
        for action in actions:
            self._perform(action)

    # ---------------------------------------------------------------- outputs
    async def perform(self, actions: Iterable[Any]) -> None:
        """Perform engine actions (``engine.publish``'s, for instance) and return once every
        put they lead to is on disk: the copies for queue subscribers, those that the hand-over
        of an ``MqttPublish`` to the broker produces through the tap (default subscription
        point) included, and a changed engine state (a retained publication at a named point)
        saved. Puts to one queue are made in order; puts to different queues side by side.
        A put that is refused (queue full, unknown queue) is logged, the others are still
        made, and then :class:`PutFailed` is raised naming the first refusal - the caller
        decides (a flow's commit fails, so its run is backed out)."""
        captured: list[Put | DeadLetter] = []
        outer, self._capture = self._capture, captured
        try:
            for action in actions:
                self._perform(action)
        finally:
            self._capture = outer
        errors: list[BaseException] = []
        if captured and self.qm is not None:
            await self._put_groups(captured, errors)
        elif captured:
            errors.append(RuntimeError("no queue manager is running"))
        await self._save()
        if errors:
            raise PutFailed(f"{len(errors)} of {len(captured)} put(s) to queue subscribers failed, "
                            f"the first: {errors[0]}") from errors[0]

    def _perform(self, action: Any) -> None:
        if isinstance(action, (Put, DeadLetter)) and self._capture is not None:
            self._capture.append(action)
        elif isinstance(action, Put):
            self._outbox.put_nowait(action)
        elif isinstance(action, MqttPublish):
            self._bridging = action.publication
            try:
                self.broker.publish(action.topic, action.payload, action.qos, action.retain,
                                    action.properties or None, action.expiry_interval)
            finally:
                self._bridging = None
        elif isinstance(action, ClearRetained):
            store_retained(self.broker, self.broker.new_message(action.topic, b"", 0, True))
        elif isinstance(action, DeadLetter):
            self._outbox.put_nowait(action)

    @property
    def busy(self) -> bool:
        """True while the outbox is putting something (``_outbox`` empty and not busy: every
        put produced so far has been made)."""
        return self._busy

    async def _run_outbox(self) -> None:
        """Puts in batches: what the engine produced meanwhile (up to OUTBOX_BATCH), grouped
        by destination queue; each group is put in order by one worker thread, groups run side
        by side (OUTBOX_THREADS), so a subscriber queue gets its messages in the engine's order
        while puts to different queues share the queue manager's group commits."""
        limit = asyncio.Semaphore(OUTBOX_THREADS)
        while True:
            self._busy = False
            first = await self._outbox.get()
            self._busy = True
            batch: list[Put | DeadLetter] = [first]
            while len(batch) < OUTBOX_BATCH and not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            if self.qm is None:
                continue
            await self._put_groups(batch, limit=limit)

    async def _put_groups(self, batch: list[Put | DeadLetter], errors: list[BaseException] | None = None,
                          limit: asyncio.Semaphore | None = None) -> None:
        """Put ``batch`` grouped by destination queue: each group in order on one worker
        thread, groups side by side; returns when all were made (or refused: see _put_all)."""
        groups: dict[tuple[str, str], list[Put | DeadLetter]] = {}
        for action in batch:
            key = ("", SYSTEM_DEAD_LETTER_QUEUE) if isinstance(action, DeadLetter) else (action.qmgr, action.queue)
            groups.setdefault(key, []).append(action)
        limit = limit or asyncio.Semaphore(OUTBOX_THREADS)

        async def put_group(actions: list[Put | DeadLetter]) -> None:
            async with limit:
                await self._loop.run_in_executor(self._putters, self._put_all, actions, self.broker.clock.wall(),
                                                 errors)

        await asyncio.gather(*(put_group(actions) for actions in groups.values()))

    def _put_all(self, actions: list[Put | DeadLetter], now: float,
                 errors: list[BaseException] | None = None) -> None:
        """One destination's puts, in order (a worker thread). A put that fails is logged
        (and added to ``errors`` when given) and the next one is tried."""
        for action in actions:
            if isinstance(action, DeadLetter):
                self._dead_letter(action, now, errors)
                continue
            qmgr = None if action.qmgr == self.qm.name else action.qmgr
            try:
                self.qm.put(action.queue, action.message, qmgr=qmgr)
            except Exception as error:
                log.warning("pub/sub %s to %s/%s failed: %s", action.purpose, action.qmgr, action.queue, error)
                if errors is not None:
                    errors.append(error)

    def _dead_letter(self, action: DeadLetter, now: float, errors: list[BaseException] | None = None) -> None:
        """A message the engine could not take, to the dead-letter queue with an MQDLH naming
        the reason and the queue it came from; logged and dropped when there is none."""
        if SYSTEM_DEAD_LETTER_QUEUE not in self.qm.queue_names():
            log.warning("pub/sub: no %s on %s: a message from %s that is not a command is dropped",
                        SYSTEM_DEAD_LETTER_QUEUE, self.qm.name, action.queue)
            return
        try:
            self.qm.put(SYSTEM_DEAD_LETTER_QUEUE, dead_letter_message(action, self.qm.name, now))
        except Exception as error:
            log.warning("pub/sub: the dead-letter queue refused a message from %s: %s", action.queue, error)
            if errors is not None:
                errors.append(error)

    async def _save(self) -> None:
        if not self.engine.changed:
            return
        self.engine.changed = False
        if self.state_path is not None:
            try:
                await asyncio.to_thread(_write_json, self.state_path, self.engine.snapshot())
            except OSError:
                self.engine.changed = True
                raise

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(EXPIRY_SWEEP_SECONDS)
            for action in self.engine.expire(self.broker.clock.wall()) + self.engine.remove_unreachable():
                self._perform(action)
            self.engine.forget_retained(self.broker.retained.get)
            await self._save()
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
            payload = statistics_payload(self.broker, broker_name=self.settings.broker_name,
                                         execution_group=self.settings.execution_group,
                                         queue_subscriptions=len(self.engine.subscriptions),
                                         now=self.broker.clock.wall())
            self.broker.publish(topic, payload, properties={"content_type": STATS_CONTENT_TYPE})



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


def _write_json(path: str, data: Any) -> None:
    """Atomically: a crash leaves the old state or the new one, never half of one."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


async def start(context: Any) -> PubSubService:
    settings = context.config.section("pubsub")
    service = PubSubService(context, settings)
    await service.start()
    context.services["pubsub"] = service
    return service
