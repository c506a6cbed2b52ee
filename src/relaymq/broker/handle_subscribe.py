"""SUBSCRIBE and UNSUBSCRIBE (mqtt.md items 11, 12, 30, 31; MQTT 5 subscription options,
subscription identifiers, shared subscriptions).

Grants the requested QoS (capped by the broker's maximum) unless the ACL refuses: then 0x80 in
3.1.1, 0x87 in 5.0, and in MQIsdp v3, which has no failure code, the requested QoS with nothing
delivered (mqtt.md decision). SUBACK leaves once the subscriptions are durable; retained
messages follow it.

An MQTT 5 SUBSCRIBE may carry a content filter in the user property ``relaymq-filter``
(pubsub.md item 17, docs/pubsub.md); an invalid one is refused with 0x83 (implementation
specific error) for that topic filter.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.backpressure import wake
from relaymq.broker.retain import send_retained
from relaymq.broker.session import made
from relaymq.broker.shared import SharedGroup
from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.mqtt.errors import ProtocolError
from relaymq.pubsub.content_filter import FilteredSubscription, filter_from_properties, with_filter
from relaymq.pubsub.model import REMOVED_REPLACED, REMOVED_UNSUBSCRIBED
from relaymq.pubsub.topics import TopicError, parse_shared, validate_topic_filter
from relaymq.selector import SelectorError
from relaymq.store.base import SubscriptionRecord

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.connection import Connection
    from relaymq.broker.session import Session

log = logging.getLogger("relaymq.subscribe")


def add_subscription_to_tree(broker: Broker, session: Session, sub: SubscriptionRecord) -> None:
    stored_filter = sub.content_filter  # a record restored from the store keeps its filter text
    if stored_filter and not isinstance(sub, FilteredSubscription):
        try:
            sub = with_filter(sub, stored_filter)
            session.subscriptions = made(session.subscriptions)
            session.subscriptions[sub.topic_filter] = sub
        except SelectorError:
            log.warning("client %s: stored filter %r no longer compiles", session.client_id, stored_filter)
    group, topic_filter = parse_shared(sub.topic_filter)
    if group is None:
        broker.subscriptions.insert(topic_filter, session.client_id, sub)
        return
    shared = broker.shared_groups.get((group, topic_filter))
    if shared is None:
        shared = SharedGroup(group, topic_filter)
        broker.shared_groups[(group, topic_filter)] = shared
        broker.subscriptions.insert(topic_filter, ("$share", group), shared)
    shared.members[session.client_id] = sub


def remove_subscription(broker: Broker, session: Session, full_filter: str, persist: bool, cause: str) -> bool:
    """Remove one of the session's subscriptions; ``cause`` (pubsub.model REMOVED_*) is what
    the tree's observers read in ``broker.removal_cause`` while it goes (pubsub.md item 45)."""
    sub = session.subscriptions.pop(full_filter, None)
    if sub is None:
        return False
    previous, broker.removal_cause = broker.removal_cause, cause
    try:
        _remove_from_tree(broker, session, full_filter)
    finally:
        broker.removal_cause = previous
    if persist and session.persisted:
        broker.store.delete_subscription(session.client_id, full_filter)
    if session.blocking:
        wake(broker, session)  # what it held back may no longer be for it
    return True


def _remove_from_tree(broker: Broker, session: Session, full_filter: str) -> None:
    group, topic_filter = parse_shared(full_filter)
    if group is None:
        broker.subscriptions.remove(topic_filter, session.client_id)
    else:
        shared = broker.shared_groups.get((group, topic_filter))
        if shared is not None:
            shared.members.pop(session.client_id, None)
            if not shared.members:
                del broker.shared_groups[(group, topic_filter)]
                broker.subscriptions.remove(topic_filter, ("$share", group))


def handle_subscribe(conn: Connection, session: Session, pkt: p.Subscribe) -> None:
    broker = conn.broker
    level = conn.level
    sub_id = pkt.properties.get("subscription_identifier") if level == 5 else None
    filter_text = filter_from_properties(pkt.properties) if level == 5 else None
    codes: list[int] = []
    refusals: list[str] = []  # why, for the MQTT 5 SUBACK's Reason String (issue 18)
    retained_to_send: list[tuple[SubscriptionRecord, str]] = []
    for req in pkt.subscriptions:
        code, retained = subscribe(conn, session, req, sub_id, filter_text, refusals)
        codes.append(code)
        if retained is not None:
            retained_to_send.append(retained)
    pid = pkt.packet_id

    def acknowledge() -> None:
        why = refusals and level == 5 and conn.problem_information
        conn.send(p.Suback(pid, codes, {"reason_string": "; ".join(refusals)} if why else {}))
        if conn.closed:
            return
        for sub, topic_filter in retained_to_send:
            if session.subscriptions.get(sub.topic_filter) is sub:
                send_retained(broker, session, sub, topic_filter)

    broker.store.on_durable(acknowledge)


def subscribe(conn: Connection, session: Session, req: p.Subscription, sub_id: int | None,
              filter_text: str | None, refusals: list[str]) -> tuple[int, tuple[SubscriptionRecord, str] | None]:
    """One topic filter of a SUBSCRIBE: its SUBACK code, and the subscription with its filter
    when retained messages are to follow the SUBACK (None when not). Why a filter was refused
    goes to ``refusals``."""
    broker = conn.broker
    level = conn.level
    full = req.topic_filter
    try:
        group, topic_filter = parse_shared(full)
    except TopicError as err:
        raise ProtocolError(f"invalid shared subscription {full!r}: {err.reason}") from None
    try:
        validate_topic_filter(topic_filter, strict=True, max_length=broker.limits.max_topic_length,
                              mixed_literal=level == 3)
    except TopicError as err:
        log.info("client %s: invalid topic filter %r: %s", conn.client_id, full, err.reason)
        if level == 5:
            refusals.append(f"invalid topic filter {full!r}: {err.reason}")
            return rc.TOPIC_FILTER_INVALID, None
        raise ProtocolError(f"invalid topic filter {full!r}: {err.reason}") from None
    if group is not None and req.no_local and level == 5:
        raise ProtocolError("no local on a shared subscription")  # MQTT 5 3.8.3.1
    qos = min(req.qos, broker.limits.max_qos)
    if broker.acl is not None and not broker.acl.can_subscribe(conn.username, conn.client_id, full):
        log.info("client %s may not subscribe to %r", conn.client_id, full)
        return (req.qos if level == 3 else (rc.NOT_AUTHORIZED if level == 5 else 0x80)), None
    existed = full in session.subscriptions
    sub = SubscriptionRecord(session.client_id, full, qos, req.no_local,
                             req.retain_as_published, req.retain_handling, sub_id)
    try:
        sub = with_filter(sub, filter_text)
    except SelectorError as err:
        log.info("client %s: invalid content filter %r: %s", conn.client_id, filter_text, err)
        refusals.append(f"invalid content filter {filter_text!r}: {err}")
        return rc.IMPLEMENTATION_SPECIFIC_ERROR, None
    if existed:
        remove_subscription(broker, session, full, persist=False, cause=REMOVED_REPLACED)
    session.subscriptions = made(session.subscriptions)
    session.subscriptions[full] = sub
    add_subscription_to_tree(broker, session, sub)
    if session.persistent:
        broker.store.put_subscription(sub)
    # retain handling: 0 always, 1 only for a new subscription, 2 never; none for shared
    if group is None and (req.retain_handling == 0 or (req.retain_handling == 1 and not existed)):
        return qos, (sub, topic_filter)
    return qos, None


def handle_unsubscribe(conn: Connection, session: Session, pkt: p.Unsubscribe) -> None:
    broker = conn.broker
    codes = []
    for full in pkt.topic_filters:
        try:
            group, topic_filter = parse_shared(full)
            validate_topic_filter(topic_filter, strict=True, max_length=broker.limits.max_topic_length,
                                  mixed_literal=conn.level == 3)
        except TopicError as err:
            if conn.level == 5:
                codes.append(rc.TOPIC_FILTER_INVALID)
                continue
            raise ProtocolError(f"invalid topic filter {full!r}: {err.reason}") from None
        existed = remove_subscription(broker, session, full, persist=True, cause=REMOVED_UNSUBSCRIBED)
        codes.append(rc.SUCCESS if existed else rc.NO_SUBSCRIPTION_EXISTED)
    pid = pkt.packet_id
    reason_codes = codes if conn.level == 5 else []
    broker.store.on_durable(lambda: conn.send(p.Unsuback(pid, reason_codes)))
