"""From one publication to every matching session (design guide: "How the parts meet").

Topic tree match (cached) -> per subscription: no-local, content filter, ACL -> one delivery
per client at the highest granted QoS with every matching subscription identifier ->
delivery.deliver.

The tree is shared with the pub/sub engine (pubsub.md: one engine for every client): queue
subscribers registered with ``psc`` sit in it under tuple keys that are not session ids, so
they are skipped here and served by the engine through its publication tap. A subscription
with a content filter (``relaymq-filter``) is a ``FilteredSubscription``; the message view its
filter needs is built lazily, once per publication, only when one is matched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.backpressure import HELD
from relaymq.broker.delivery import deliver
from relaymq.broker.records import RoutingTarget
from relaymq.broker.retain import store_retained
from relaymq.broker.shared import SharedGroup
from relaymq.pubsub.content_filter import FilteredSubscription, LazyView

log = logging.getLogger("relaymq.routing")

if TYPE_CHECKING:
    from relaymq.broker.ack_watch import AckWatch
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage


def process_publication(broker: Broker, message: StoredMessage, origin: Session | None,
                        hold: bool = False, watch: AckWatch | None = None) -> int:
    """Route and retain (if flagged) a publication. Returns the number of receivers: clients,
    and the copies the taps made (queue subscribers), so an MQTT 5 PUBACK says 0x10 No matching
    subscribers only when nobody at all took it; or HELD when ``hold`` (a client's QoS 1/2
    publication, whose acknowledgement can wait) and a session it goes to at QoS 1/2 is full
    and blocking (``broker.backpressure.held_on``): then nothing was delivered nor retained
    (backpressure.py)."""
    receivers = route(broker, message, origin, hold, watch)
    if receivers < 0:
        return receivers
    if message.retain:
        store_retained(broker, message)
    for tap in broker.publication_taps:
        try:
            taken = tap(message)  # the copies it made (queue subscribers), or None
        except Exception:  # a faulty tap must not stop delivery to the others
            log.exception("publication tap %r failed on %s", tap, message.topic)
            continue
        if taken:
            receivers += taken
    return receivers


def route(broker: Broker, message: StoredMessage, origin: Session | None, hold: bool = False,
          watch: AckWatch | None = None) -> int:
    """Deliver ``message`` to every session with a matching subscription, once per client;
    ``watch``: the publisher's QoS 1 PUBACK that may leave before the commit (ack_watch.py),
    told of each delivery stored on the way."""
    topic = message.topic
    sessions = broker.sessions
    acl = broker.acl
    origin_id = origin.client_id if origin is not None else None
    matches = broker.subscriptions.match(topic)
    if not matches:
        return 0
    # One delivery per client: with a single match there is nothing to merge.
    targets: dict[str, RoutingTarget] | None = {} if len(matches) > 1 else None  # by client id
    view: LazyView | None = None
    for key, value in matches:
        if isinstance(value, SharedGroup):
            chosen = value.choose(sessions)
            if chosen is None:
                continue
            client_id, sub = chosen
        else:
            client_id, sub = key, value
        if sub.no_local and client_id == origin_id:
            continue
        session = sessions.get(client_id)
        if session is None:
            # A psc queue subscriber: the pub/sub engine keeps it in this tree under a
            # (PSC_KEY, subscriber, filter) key, which is no session's, and delivers to it
            # through its publication tap (pubsub/engine.py, README decision 2).
            continue
        if type(sub) is FilteredSubscription and sub.selector is not None:
            if view is None:
                view = LazyView(message)
            if not view.selects(sub.selector):
                continue
        if acl is not None and not acl.can_receive(session.username, client_id, topic):
            continue
        qos = sub.qos if sub.qos < message.qos else message.qos  # mqtt.md item 12
        # 3.1.1 sets RETAIN 0 on live messages; MQTT 5 keeps it with retain-as-published
        retain = message.retain and sub.retain_as_published
        if targets is None:
            if hold and qos and session.blocking is not None:
                broker.backpressure.held_on = session
                return HELD
            deliver(broker, session, message, qos, retain, [sub.subscription_id] if sub.subscription_id else None, watch)
            return 1
        t = targets.get(client_id)
        if t is None:
            targets[client_id] = RoutingTarget(session, qos, retain, [sub.subscription_id] if sub.subscription_id else [])
        else:
            t.qos = max(t.qos, qos)
            t.retain = t.retain or retain
            if sub.subscription_id:
                t.subscription_ids.append(sub.subscription_id)
    if not targets:
        return 0
    if hold and broker.backpressure.blocking:
        for target in targets.values():
            if target.qos and target.session.blocking is not None:
                broker.backpressure.held_on = target.session
                return HELD
    for target in targets.values():
        deliver(broker, target.session, message, target.qos, target.retain, target.subscription_ids, watch)
    return len(targets)
