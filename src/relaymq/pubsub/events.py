"""Subscription add/remove events (pubsub.md item 45, seed 003 l.4523-4556).

Why a module of its own: queue subscriptions (the registry) and MQTT subscriptions (the
service watching the broker) announce the same events on the same topics; one place writes
their topic and JSON body. The seed does not name the topics: the product publishes on
``$SYS/Broker/<broker>/Subscriptions/Added`` and ``.../Removed``.
"""

from __future__ import annotations

import json
from typing import Any

from relaymq.pubsub.model import DEFAULT_SUBPOINT, MqttPublish, QueueSubscription

ADDED = "Added"
REMOVED = "Removed"


class SubscriptionEvents:
    """Makes the event publications of one broker; ``enabled`` is ``[pubsub] events``."""

    def __init__(self, broker_name: str, enabled: bool = True) -> None:
        self.broker_name = broker_name
        self.enabled = enabled

    def topic(self, what: str) -> str:
        return f"$SYS/Broker/{self.broker_name}/Subscriptions/{what}"

    def queue_subscription(self, what: str, sub: QueueSubscription, cause: str | None) -> MqttPublish:
        """A queue subscription added or removed (``cause``: why it was removed, item 19)."""
        body: dict[str, Any] = {"topic": sub.topic, "subPoint": sub.sub_point, "filter": sub.filter_text,
                                "qmgr": sub.subscriber.qmgr, "queue": sub.subscriber.queue, "user": sub.user_id}
        if sub.sub_name:
            body["subName"] = sub.sub_name
        if cause:
            body["cause"] = cause
        return MqttPublish(self.topic(what), json.dumps(body).encode())

    def mqtt_subscription(self, added: bool, topic_filter: str, *, client_id: str | None,
                          share_group: str | None, user: str | None, filter_text: str,
                          qos: int | None, cause: str | None) -> MqttPublish:
        """An MQTT SUBSCRIBE/UNSUBSCRIBE (or a session's end): the same topics as a queue
        subscription's events, with the client instead of the queue."""
        body: dict[str, Any] = {"topic": topic_filter, "subPoint": DEFAULT_SUBPOINT, "filter": filter_text}
        if share_group is not None:
            body["shareGroup"] = share_group
        else:
            body["clientId"] = client_id
            body["user"] = user or ""
        if qos is not None:
            body["qos"] = qos
        if cause:
            body["cause"] = cause
        return MqttPublish(self.topic(ADDED if added else REMOVED), json.dumps(body).encode())
