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
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from relaymq.broker.backpressure import HELD
from relaymq.broker.delivery import deliver, deliver_qos0
from relaymq.broker.records import RoutingTarget
from relaymq.broker.retain import store_retained
from relaymq.broker.shared import SharedGroup
from relaymq.pubsub.content_filter import FilteredSubscription
from relaymq.pubsub.lazy_view import LazyView
from relaymq.store.base import SubscriptionRecord

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
    view = LazyView(message)  # built on first use only; the taps share it (Broker.tapped_view)
    receivers = route(broker, message, origin, hold, watch, view)
    if receivers < 0:
        return receivers
    if message.retain:
        store_retained(broker, message)
    outer, broker.tapped_view = broker.tapped_view, view
    try:
        for tap in broker.publication_taps:
            try:
                taken = tap(message)  # the copies it made (queue subscribers), or None
            except Exception:  # a faulty tap must not stop delivery to the others
                log.exception("publication tap %r failed on %s", tap, message.topic)
                continue
            if taken:
                receivers += taken
    finally:
        broker.tapped_view = outer  # a tap may publish (psc), which routes another publication
    return receivers


def route(broker: Broker, message: StoredMessage, origin: Session | None, hold: bool = False,
          watch: AckWatch | None = None, view: LazyView | None = None) -> int:
    """Deliver ``message`` to every session with a matching subscription, once per client;
    ``watch``: the publisher's QoS 1 PUBACK that may leave before the commit (ack_watch.py),
    told of each delivery stored on the way; ``view``: the publication's view for content
    filters (made here when None). A single match (the common case) is delivered here;
    several go through ``route_merged``."""
    matches = broker.subscriptions.match(message.topic)
    if not matches:
        return 0
    origin_id = origin.client_id if origin is not None else None
    if len(matches) > 1:
        return route_merged(broker, message, origin_id, hold, watch, matches, view)
    key, value = matches[0]
    found = receiver(broker, message, origin_id, key, value, view)
    if found is None:
        return 0
    session, sub = found
    qos = sub.qos if sub.qos < message.qos else message.qos  # mqtt.md item 12
    if hold and qos and session.blocking is not None:
        broker.backpressure.held_on = session
        return HELD
    # 3.1.1 sets RETAIN 0 on live messages; MQTT 5 keeps it with retain-as-published
    deliver(broker, session, message, qos, message.retain and sub.retain_as_published,
            [sub.subscription_id] if sub.subscription_id else None, watch)
    return 1


def receiver(broker: Broker, message: StoredMessage, origin_id: str | None, key: Hashable, value: Any,
             view: LazyView | None) -> tuple[Session, SubscriptionRecord] | None:
    """The session one match of the tree delivers to and the subscription it delivers by;
    None when it delivers to nobody: a shared group without a member, no-local, a queue
    subscriber, a content filter that does not select it, the ACL. ``view``: the
    publication's view for content filters, shared by the matches of one publication (made
    here when None)."""
    if isinstance(value, SharedGroup):
        chosen = value.choose(broker.sessions)
        if chosen is None:
            return None
        client_id, sub = chosen
    elif isinstance(key, str):
        client_id, sub = key, value
    else:
        # A psc queue subscriber: the pub/sub engine keeps it in this tree under a
        # (PSC_KEY, subscriber, filter) key, which is no session's, and delivers to it
        # through its publication tap (pubsub/engine.py, README decision 2).
        return None
    if sub.no_local and client_id == origin_id:
        return None
    session = broker.sessions.get(client_id)
    if session is None:
        return None
    if type(sub) is FilteredSubscription and sub.selector is not None and not (
            view or LazyView(message)).selects(sub.selector):
        return None
    acl = broker.acl
    if acl is not None and not acl.can_receive(session.username, client_id, message.topic):
        return None
    return session, sub


def route_merged(broker: Broker, message: StoredMessage, origin_id: str | None, hold: bool,
                 watch: AckWatch | None, matches: tuple[tuple[Hashable, Any], ...],
                 view: LazyView | None = None) -> int:
    """Several subscriptions matched: one delivery per client, at the highest granted QoS,
    RETAIN if any subscription keeps it, with every matching subscription identifier
    (mqtt.md item 12; MQTT 5 3.3.4)."""
    targets: dict[str, RoutingTarget] = {}  # by client id
    if view is None:
        view = LazyView(message)  # built on first use only
    sessions = broker.sessions
    plain = broker.acl is None
    for key, value in matches:
        if plain and type(value) is SubscriptionRecord and type(key) is str and not value.no_local:
            # the common match of a fan-out (a session's own unfiltered subscription, no ACL):
            # what receiver() would find, without a call per match
            session = sessions.get(key)
            if session is None:
                continue
            sub = value
        else:
            found = receiver(broker, message, origin_id, key, value, view)
            if found is None:
                continue
            session, sub = found
        qos = sub.qos if sub.qos < message.qos else message.qos  # mqtt.md item 12
        retain = message.retain and sub.retain_as_published
        t = targets.get(session.client_id)
        if t is None:
            targets[session.client_id] = RoutingTarget(session, qos, retain,
                                                       [sub.subscription_id] if sub.subscription_id else [])
            continue
        t.qos = max(t.qos, qos)
        t.retain = t.retain or retain
        if sub.subscription_id:
            t.subscription_ids.append(sub.subscription_id)
    if hold and broker.backpressure.blocking and _held(broker, targets):
        return HELD
    for target in targets.values():
        if target.qos:
            deliver(broker, target.session, message, target.qos, target.retain, target.subscription_ids, watch)
        else:
            deliver_qos0(broker, target.session.connection, message, target.retain, target.subscription_ids)
    return len(targets)


def _held(broker: Broker, targets: dict[str, RoutingTarget]) -> bool:
    """A client's QoS 1/2 publication goes to a session that is full and blocking: it is held
    back (``broker.backpressure.held_on`` says which session it waits for)."""
    for target in targets.values():
        if target.qos and target.session.blocking is not None:
            broker.backpressure.held_on = target.session
            return True
    return False
