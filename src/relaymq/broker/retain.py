"""Retained publications (mqtt.md item 31): kept per topic, replaced by the next retained
publication, cleared by an empty payload, persisted, and sent after SUBACK at
min(original QoS, granted QoS) with RETAIN=1. A subscription's content filter applies to
retained messages too (pubsub.md item 17)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from relaymq.broker.delivery import deliver
from relaymq.pubsub.content_filter import FilteredSubscription
from relaymq.pubsub.lazy_view import LazyView

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage, SubscriptionRecord


def store_retained(broker: Broker, message: StoredMessage, persist: bool = True) -> None:
    old = broker.retained.get(message.topic)
    if old is not None:
        broker.retained.delete(message.topic)
        broker.refs.release(old)
        if not message.payload:
            broker.store.delete_retained(message.topic)
    if message.payload:
        broker.retained.set(message.topic, message)
        if persist:
            broker.refs.acquire(message)
            broker.store.put_retained(message.topic, message.msg_id)


def send_retained(broker: Broker, session: Session, sub: SubscriptionRecord, topic_filter: str) -> None:
    """Deliver every retained message matching a new subscription."""
    wall = broker.clock.wall()
    acl = broker.acl
    for topic, msg in list(broker.retained.match(topic_filter)):
        if msg.expiry_at is not None and msg.expiry_at <= wall:
            broker.retained.delete(topic)
            broker.refs.release(msg)
            broker.store.delete_retained(topic)
            continue
        if acl is not None and not acl.can_receive(session.username, session.client_id, topic):
            continue
        if type(sub) is FilteredSubscription and sub.selector is not None and not LazyView(msg).selects(sub.selector):
            continue
        qos = min(msg.qos, sub.qos)
        deliver(broker, session, msg, qos, True, [sub.subscription_id] if sub.subscription_id else [])
