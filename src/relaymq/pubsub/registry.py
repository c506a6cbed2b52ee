"""The queue subscriptions of one broker and their indexes (pubsub.md items 13, 19).

Why a part of its own: RegSub, DeregSub, ReqUpdate, the administrator, expiry and the
deletion of a subscriber queue all add, find and remove queue subscriptions; this class owns
them (by key, by SubName, by subscriber, in the topic tree of their subscription point) and
the record of what changed since the service last made it durable.
"""

from __future__ import annotations

from typing import Any

from relaymq.pubsub.events import ADDED, REMOVED, SubscriptionEvents
from relaymq.pubsub.model import (
    DEFAULT_SUBPOINT,
    REMOVED_ADMIN,
    REMOVED_EXPIRED,
    REMOVED_QUEUE_DELETED,
    Action,
    QueueSubscription,
    SubscriberId,
)
from relaymq.pubsub.topictree import SubscriptionTree

#: A subscription's key: (topic, subscription point, filter, subscriber).
SubKey = tuple[str, str, str, SubscriberId]


class SubscriptionRegistry:
    """Queue subscriptions: one topic tree per subscription point (the default point's may
    be the MQTT broker's own tree, shared with MQTT sessions)."""

    def __init__(self, default_tree: SubscriptionTree | None, events: SubscriptionEvents) -> None:
        self.trees: dict[str, SubscriptionTree] = {
            DEFAULT_SUBPOINT: default_tree if default_tree is not None else SubscriptionTree()}
        self.subscriptions: dict[SubKey, QueueSubscription] = {}
        self.by_name: dict[str, QueueSubscription] = {}
        self.by_subscriber: dict[SubscriberId, set[SubKey]] = {}
        self.events = events
        self.changed = False  # set by every change the service must make durable
        #: Subscriptions changed since the service last saved (``take_dirty``): key -> the
        #: subscription, or None when it was removed.
        self.dirty: dict[SubKey, QueueSubscription | None] = {}

    def get(self, key: SubKey) -> QueueSubscription | None:
        return self.subscriptions.get(key)

    def named(self, sub_name: str) -> QueueSubscription | None:
        return self.by_name.get(sub_name)

    def of_subscriber(self, subscriber: SubscriberId) -> list[QueueSubscription]:
        return [self.subscriptions[k] for k in self.by_subscriber.get(subscriber, ())]

    def take_dirty(self) -> dict[SubKey, QueueSubscription | None]:
        """The subscriptions changed since the last call (key -> subscription, None: removed)."""
        dirty, self.dirty = self.dirty, {}
        return dirty

    def mark(self, sub: QueueSubscription) -> None:
        """``sub`` changed in place (its identity set): save it."""
        self.dirty[sub.key] = sub
        self.changed = True

    def index(self, sub: QueueSubscription) -> None:
        self.dirty[sub.key] = sub
        self.subscriptions[sub.key] = sub
        self.by_subscriber.setdefault(sub.subscriber, set()).add(sub.key)
        if sub.sub_name:
            self.by_name[sub.sub_name] = sub
        self.trees.setdefault(sub.sub_point, SubscriptionTree()).insert(sub.topic, sub.tree_key, sub)

    def unindex(self, sub: QueueSubscription) -> None:
        if self.subscriptions.pop(sub.key, None) is not None:
            self.dirty[sub.key] = None
        keys = self.by_subscriber.get(sub.subscriber)
        if keys is not None:
            keys.discard(sub.key)
            if not keys:
                del self.by_subscriber[sub.subscriber]
        if sub.sub_name and self.by_name.get(sub.sub_name) is sub:
            del self.by_name[sub.sub_name]
        tree = self.trees.get(sub.sub_point)
        if tree is not None:
            tree.remove(sub.topic, sub.tree_key)

    def added(self, sub: QueueSubscription) -> list[Action]:
        """The Added event of a new subscription (item 45)."""
        return [self.events.queue_subscription(ADDED, sub, None)] if self.events.enabled else []

    def remove(self, sub: QueueSubscription, cause: str = REMOVED_ADMIN) -> list[Action]:
        """Remove a subscription for one of the causes of item 19; returns the event."""
        if self.subscriptions.get(sub.key) is not sub:
            return []
        self.unindex(sub)
        self.changed = True
        return [self.events.queue_subscription(REMOVED, sub, cause)] if self.events.enabled else []

    def select(self, *, topic: str | None = None, sub_point: str | None = None, filter_text: str | None = None,
               qmgr: str | None = None, queue: str | None = None, correl_id: bytes | None = None,
               sub_name: str | None = None, user: str | None = None) -> list[QueueSubscription]:
        """The queue subscriptions whose attributes equal every criterion given (None: any),
        for an administrator (item 19, seed 1840-1854): topic filters and filters compare as
        the exact registered strings, as DeregSub does."""
        wanted: dict[str, Any] = {"topic": topic, "sub_point": sub_point, "filter_text": filter_text,
                                  "sub_name": sub_name, "user_id": user}
        criteria = {name: value for name, value in wanted.items() if value is not None}
        out = []
        for sub in self.subscriptions.values():
            if any(getattr(sub, name) != value for name, value in criteria.items()):
                continue
            if (qmgr is not None and sub.subscriber.qmgr != qmgr) or (queue is not None and sub.subscriber.queue != queue):
                continue
            if correl_id is not None and sub.subscriber.correl_id.ljust(24, b"\0") != correl_id.ljust(24, b"\0"):
                continue
            out.append(sub)
        return sorted(out, key=lambda s: (s.sub_point, s.topic, s.subscriber.qmgr, s.subscriber.queue, s.filter_text))

    def remove_queue(self, qmgr: str, queue: str, cause: str = REMOVED_QUEUE_DELETED) -> list[Action]:
        """The subscriber queue was deleted (a temporary dynamic queue closed, item 19)."""
        actions: list[Action] = []
        for sub in [s for s in self.subscriptions.values() if s.subscriber.qmgr == qmgr and s.subscriber.queue == queue]:
            actions.extend(self.remove(sub, cause))
        return actions

    def expire(self, now: float) -> list[Action]:
        """Subscriptions past their expiry (item 19, seed 6294-6296)."""
        actions: list[Action] = []
        for sub in [s for s in self.subscriptions.values() if s.expired(now)]:
            actions.extend(self.remove(sub, REMOVED_EXPIRED))
        return actions

    def records(self) -> list[dict[str, Any]]:
        return [s.to_record() for s in self.subscriptions.values()]

    def reset(self) -> None:
        """Forget every queue subscription; MQTT sessions in a shared tree are untouched."""
        for sub in list(self.subscriptions.values()):
            self.unindex(sub)

    def restore(self, records: Any) -> None:
        for rec in records:
            selector = None
            if rec["filter"]:
                from relaymq.selector.compiled import compile_selector

                selector = compile_selector(rec["filter"])
            sub = QueueSubscription(
                rec["topic"], rec["sub_point"], rec["filter"],
                SubscriberId(rec["qmgr"], rec["queue"], bytes.fromhex(rec["correl_id"])), rec["user_id"],
                selector, set(rec["flags"]), rec["persistence"],
                rec["expiry_at"], rec["sub_name"], rec["sub_user_data"], dict(rec["identities"]),
                bytes.fromhex(rec["broker_correl_id"]), rec.get("rfh1", False))
            self.index(sub)
