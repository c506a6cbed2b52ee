"""The publish/subscribe engine of seed 003, sans-I/O (pubsub.md items 13-38, 45).

Why sans-I/O: the same engine serves MQTT clients, queue subscribers registered with ``psc``
commands and message flows, and it must be testable without sockets, threads or a queue
manager. It answers every input with a list of actions (``model.Put``, ``model.MqttPublish``,
``model.ClearRetained``) that the service performs.

``PubSubEngine`` is the façade the service, the admin routes and the flows use; the work is
done by parts that each own their state:

* ``registry.SubscriptionRegistry``: the queue subscriptions and their topic trees;
* ``retained_store.RetainedPublications``: retained publications of every point;
* ``delivery.Delivery``: the copies for queue subscribers (filters, authority, MQMD);
* ``registration.Registration``: RegSub, DeregSub, ReqUpdate;
* ``commands.CommandProcessor``: reading commands, Publish, DeletePub, responses;
* ``events.SubscriptionEvents``: the add/remove events of item 45.

One topic tree per subscription point. The default point's tree is the MQTT broker's own
``SubscriptionTree`` when the engine runs inside the broker: queue subscribers sit in it
beside MQTT sessions under ``(PSC_KEY, subscriber, filter)`` keys, so one match serves every
kind of client (README decision 2). The default point's retained publications are likewise
the broker's (``RetainedTree`` of ``StoredMessage``), so MQTT and ``psc`` see the same ones.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from relaymq.message.message import Message
from relaymq.pubsub import psc as wire
from relaymq.pubsub.authority import SenderAuthority
from relaymq.pubsub.checks import CommandChecks
from relaymq.pubsub.commands import CONTROL_QUEUE, CommandProcessor
from relaymq.pubsub.conversions import mqtt_publication, publication_from_mqtt, unique_ids
from relaymq.pubsub.delivery import MQAT_BROKER, Delivery
from relaymq.pubsub.events import SubscriptionEvents
from relaymq.pubsub.model import (
    DEFAULT_SUBPOINT,
    REMOVED_ADMIN,
    REMOVED_EXPIRED,
    REMOVED_QUEUE_DELETED,
    Action,
    MqttPublish,
    Publication,
    QueueSubscription,
)
from relaymq.pubsub.registration import Registration
from relaymq.pubsub.registry import SubKey, SubscriptionRegistry
from relaymq.pubsub.retained import RetainedTree
from relaymq.pubsub.retained_store import RetainedPublications
from relaymq.pubsub.topicacl import TopicAcl
from relaymq.pubsub.topictree import SubscriptionTree

__all__ = ["CONTROL_QUEUE", "MQAT_BROKER", "PubSubEngine"]


class PubSubEngine:
    """Subscriptions, retained publications and the psc command protocol for one broker."""

    def __init__(
        self,
        qmgr_name: str,
        *,
        broker_name: str = "relaymq",
        default_tree: SubscriptionTree | None = None,
        default_retained: RetainedTree[Any] | None = None,
        mqtt_bridge: bool = False,
        acl: TopicAcl | None = None,
        sender: SenderAuthority | None = None,
        input_queues: dict[str, str] | None = None,
        control_queue: str = CONTROL_QUEUE,
        queue_check: Callable[[str, str], int | None] | None = None,
        known_qmgrs: Iterable[str] = (),
        events: bool = True,
        new_id: Callable[[], bytes] | None = None,
        temporary_queue: Callable[[str], bool] | None = None,
    ) -> None:
        """``mqtt_bridge``: the default point belongs to the MQTT broker (its tree and
        retained store are passed in); psc publications there are handed to it as
        ``MqttPublish`` actions, which reach MQTT sessions and, through the broker's
        publication tap, ``deliver_mqtt`` for queue subscribers. ``temporary_queue(name)``:
        whether a queue of this queue manager is a temporary dynamic queue (item 20)."""
        self.broker_name = broker_name
        self.mqtt_bridge = mqtt_bridge
        self.acl = acl
        #: The sender's own rights, checked for every command (``acl`` is topic security's).
        self.sender = sender
        self.input_queues = dict(input_queues if input_queues is not None else {wire.DEFAULT_STREAM: DEFAULT_SUBPOINT})
        self.new_id = new_id or unique_ids()
        self.events = SubscriptionEvents(broker_name, events)
        self.registry = SubscriptionRegistry(default_tree, self.events)
        self.retained_store = RetainedPublications(default_retained, mqtt_bridge)
        self.checks = CommandChecks(qmgr_name, queue_check=queue_check, known_qmgrs=known_qmgrs, acl=acl, sender=sender,
                                    temporary_queue=temporary_queue)
        self.delivery = Delivery(qmgr_name, self.new_id, acl, sender)
        self.registration = Registration(self.registry, self.retained_store, self.delivery, self.checks, self.new_id)
        self.commands = CommandProcessor(qmgr_name, checks=self.checks, registration=self.registration,
                                         retained=self.retained_store, publish=self.publish,
                                         input_queues=self.input_queues, control_queue=control_queue)

    # ---------------------------------------------------------------- what the parts own
    @property
    def qmgr_name(self) -> str:
        return self.checks.qmgr_name

    @qmgr_name.setter
    def qmgr_name(self, name: str) -> None:
        self.checks.qmgr_name = self.delivery.qmgr_name = self.commands.qmgr_name = name

    @property
    def known_qmgrs(self) -> set[str]:
        return self.checks.known_qmgrs

    @property
    def subscriptions(self) -> dict[SubKey, QueueSubscription]:
        return self.registry.subscriptions

    @property
    def trees(self) -> dict[str, SubscriptionTree]:
        return self.registry.trees

    @property
    def retained(self) -> dict[str, RetainedTree[Any]]:
        return self.retained_store.trees

    @property
    def dirty(self) -> dict[SubKey, QueueSubscription | None]:
        return self.registry.dirty

    @property
    def subscribed(self) -> bool:
        """Whether any queue subscription exists: without one, no MQTT publication goes to
        a queue (``deliver_mqtt``), and the broker's tap returns at once."""
        return bool(self.registry.subscriptions)

    @property
    def changed(self) -> bool:
        """Whether anything changed that the service must make durable."""
        return self.registry.changed or self.retained_store.changed

    @changed.setter
    def changed(self, value: bool) -> None:
        self.registry.changed = self.retained_store.changed = value

    def take_dirty(self) -> dict[SubKey, QueueSubscription | None]:
        return self.registry.take_dirty()

    # ---------------------------------------------------------------- commands (items 24-37)
    def handle_message(self, message: Message, queue: str, now: float) -> list[Action]:
        """One message from the control queue or a publication input queue (items 26-37)."""
        return self.commands.handle_message(message, queue, now)

    def failure(self, message: Message, reason: int) -> list[Action]:
        return self.commands.failure(message, reason)

    # ---------------------------------------------------------------- publications
    def publish(self, pub: Publication, now: float) -> list[Action]:
        """Retain (RetainPub, item 21) and deliver a publication made at this broker by a psc
        command or a flow's Publication node (which gives its subscription point)."""
        if self.mqtt_bridge and pub.sub_point == DEFAULT_SUBPOINT:
            # The broker retains it and routes it to MQTT sessions; its tap brings it back to
            # deliver_mqtt for queue subscribers, with the psc details kept by the service.
            return [mqtt_publication(pub, now)]
        if pub.retain:
            self.retained_store.retain(pub)
        return self.route(pub, now)

    def mqtt_publish_action(self, pub: Publication, now: float) -> MqttPublish:
        """psc publication -> MQTT: usr as MQTT 5 user properties, persistence as QoS 1."""
        return mqtt_publication(pub, now)

    def route(self, pub: Publication, now: float, matches: Iterable[tuple[Hashable, Any]] | None = None) -> list[Action]:
        """Queue-subscriber deliveries of a live publication: one copy per subscriber
        (items 14-17, 35); matched subscriptions past their expiry go (item 19)."""
        if matches is None:
            tree = self.registry.trees.get(pub.sub_point)
            if tree is None:
                return []
            matches = tree.match(pub.topic)
        copies, expired = self.delivery.live(pub, matches, now)
        actions: list[Action] = list(copies)
        for sub in expired:
            actions.extend(self.registry.remove(sub, REMOVED_EXPIRED))
        return actions

    def deliver_mqtt(self, topic: str, payload: bytes, qos: int, properties: dict[str, Any],
                     expiry_at: float | None, now: float,
                     matches: Iterable[tuple[Hashable, Any]] | None = None,
                     publication: Callable[[], Publication] | None = None) -> list[Action]:
        """An MQTT publication (default point) -> queue subscribers as MQ messages (item 35).
        Called for every MQTT publication, so it returns at once when no queue subscriber
        matches (the match itself is a cache hit of the broker's own lookup). ``publication``
        makes it as ``publication_from_mqtt`` would: the broker's routing view's, whose filter
        verdicts the sessions' filters already found (``lazy_view.LazyView``)."""
        if not self.subscribed:
            return []
        if matches is None:
            matches = self.registry.trees[DEFAULT_SUBPOINT].match(topic)
        for _key, value in matches:
            if type(value) is QueueSubscription:
                pub = (publication() if publication is not None
                       else publication_from_mqtt(topic, payload, qos, properties, expiry_at))
                return self.route(pub, now, matches)
        return []

    # ---------------------------------------------------------------- retained (items 21-25)
    def note_retained(self, topic: str, msg_id: int, pub: Publication) -> None:
        self.retained_store.note(topic, msg_id, pub)

    def forget_retained(self, current: Callable[[str], Any]) -> None:
        self.retained_store.forget(current)

    def delete_retained(self, topic_filters: Iterable[str], sub_point: str = DEFAULT_SUBPOINT) -> list[Action]:
        return self.retained_store.delete(topic_filters, sub_point)

    # ---------------------------------------------------------------- subscriptions (item 19)
    def remove(self, sub: QueueSubscription, cause: str = REMOVED_ADMIN) -> list[Action]:
        """Remove a subscription for one of the causes of item 19; returns the event."""
        return self.registry.remove(sub, cause)

    def select(self, **criteria: Any) -> list[QueueSubscription]:
        """Queue subscriptions by exact attributes, for an administrator (``registry.select``)."""
        return self.registry.select(**criteria)

    def remove_queue(self, qmgr: str, queue: str) -> list[Action]:
        """The subscriber queue was deleted (a temporary dynamic queue closed, item 19)."""
        return self.registry.remove_queue(qmgr, queue, REMOVED_QUEUE_DELETED)

    def remove_unreachable(self) -> list[Action]:
        """Subscriptions whose queue at this queue manager no longer exists (a deleted queue,
        a closed temporary dynamic queue: item 19, seed 2830-2843)."""
        check = self.checks.queue_check
        if check is None:
            return []
        actions: list[Action] = []
        for subscriber in [s for s in self.registry.by_subscriber if s.qmgr == self.qmgr_name]:
            if check(subscriber.qmgr, subscriber.queue) is not None:
                actions.extend(self.remove_queue(subscriber.qmgr, subscriber.queue))
        return actions

    def expire(self, now: float) -> list[Action]:
        """Subscriptions past their expiry (item 19) and named-point retained publications
        past theirs (item 22)."""
        actions = self.registry.expire(now)
        self.retained_store.expire(now)
        return actions

    def mqtt_subscription_event(self, added: bool, topic_filter: str, *, client_id: str | None,
                                share_group: str | None, user: str | None, filter_text: str,
                                qos: int | None, cause: str | None) -> MqttPublish:
        """Item 45 for an MQTT SUBSCRIBE/UNSUBSCRIBE (or a session's end)."""
        return self.events.mqtt_subscription(added, topic_filter, client_id=client_id, share_group=share_group,
                                             user=user, filter_text=filter_text, qos=qos, cause=cause)

    # ---------------------------------------------------------------- persistence
    def snapshot(self) -> dict[str, Any]:
        """Everything to keep across a restart (items 19, 22): subscriptions, and retained
        publications of named points (the default point's are the broker's)."""
        return {"subscriptions": self.registry.records(), **self.retained_store.snapshot()}

    def retained_snapshot(self) -> dict[str, Any]:
        """The retained part of :meth:`snapshot`, without walking every subscription."""
        return self.retained_store.snapshot()

    def reset(self) -> None:
        """Forget every queue subscription and named-point retained publication (before a
        ``restore`` of the last durable state); MQTT sessions in a shared tree are untouched."""
        self.registry.reset()
        self.retained_store.reset()

    def restore(self, data: dict[str, Any]) -> None:
        self.registry.restore(data.get("subscriptions", ()))
        self.retained_store.restore(data)
