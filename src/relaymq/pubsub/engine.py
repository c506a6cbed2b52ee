"""The publish/subscribe engine of seed 003, sans-I/O (pubsub.md items 13-38, 45).

Why sans-I/O: the same engine serves MQTT clients, queue subscribers registered with ``psc``
commands and message flows, and it must be testable without sockets, threads or a queue
manager. It keeps the state (subscriptions of queue subscribers, retained publications of
named subscription points, names, identity sets) and answers every input with a list of
actions (``model.Put``, ``model.MqttPublish``, ``model.ClearRetained``) that the service
performs.

One topic tree per subscription point. The default point's tree is the MQTT broker's own
``SubscriptionTree`` when the engine runs inside the broker: queue subscribers sit in it
beside MQTT sessions under ``(PSC_KEY, subscriber, filter)`` keys, so one match serves every
kind of client (README decision 2). The default point's retained publications are likewise
the broker's (``RetainedTree`` of ``StoredMessage``), so MQTT and ``psc`` see the same ones.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

from relaymq.message.constants import (
    MQMT_DATAGRAM,
    MQMT_REPLY,
    MQMT_REPORT,
    MQPER_PERSISTENCE_AS_Q_DEF,
    MQPER_PERSISTENT,
)
from relaymq.message.folders import is_usr_name
from relaymq.message.headers import MQMessage, SharedMQMessage, SharedParts
from relaymq.message.jms_mq import put_date_time
from relaymq.message.message import Message
from relaymq.message.mqdlh import MQDLH
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh import MQRFH
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element
from relaymq.pubsub import psc as wire
from relaymq.pubsub import reasons as r
from relaymq.pubsub.model import (
    DEFAULT_SUBPOINT,
    NON_PERS,
    PERS,
    PERS_AS_PUB,
    PERS_AS_QUEUE,
    PERSISTENCE_OPTIONS,
    REMOVED_ADMIN,
    REMOVED_DEREGISTERED,
    REMOVED_EXPIRED,
    REMOVED_QUEUE_DELETED,
    Action,
    ClearRetained,
    DeadLetter,
    MqttPublish,
    Publication,
    Put,
    QueueSubscription,
    SubscriberId,
)
from relaymq.pubsub.retained import RetainedTree
from relaymq.pubsub.topicacl import PERSISTENT, PUBLISH, SUBSCRIBE, TopicAcl
from relaymq.pubsub.topics import (
    MULTI_LEVEL_WILDCARD,
    SINGLE_LEVEL_WILDCARD,
    TopicError,
    validate_topic_filter,
    validate_topic_name,
)
from relaymq.pubsub.topictree import SubscriptionTree
from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.resolvers import message_resolver
from relaymq.selector.values import UntypedText

log = logging.getLogger("relaymq.pubsub")


#: SenderAuthority.topic's permission for a publication delivered to a subscription's owner.
RECEIVE = "receive"


class SenderAuthority(Protocol):
    """What a psc command's sender may do (issue 15 finding 3), asked whatever
    ``topic_security`` says: the broker's topic ACL and the queue authorities. ``user`` is
    the command's MQMD.UserIdentifier as its entrance stamped it (None: blank, anonymous);
    ``permission`` PUBLISH, SUBSCRIBE (a filter) or RECEIVE (a delivery on a topic)."""

    def topic(self, user: str | None, topic: str, permission: str) -> bool: ...

    def queue(self, user: str | None, qmgr: str, queue: str, action: str) -> bool: ...


CONTROL_QUEUE = "SYSTEM.BROKER.CONTROL.QUEUE"
#: MQAT_BROKER (cmqc.h): the PutApplType of publications the broker sends (item 35).
MQAT_BROKER = 26

#: Option names per command (items 28-30). Anything else: 3083/3084/3087.
#: MQ pub/sub (MQRFH v1) options of seed 3773-3822 that have no effect here are accepted.
_V1_ONLY = frozenset({"Anon", "DirectReq", "InclStreamName"})
REG_OPTIONS = frozenset({
    "AddName", "CorrelAsId", "FullResp", "InformIfRet", "JoinExcl", "JoinShared", "Local",
    "NewPubsOnly", "NoAlter", "None", "PubOnReqOnly", "VariableUserId", *PERSISTENCE_OPTIONS, *_V1_ONLY,
})
DEREG_OPTIONS = frozenset({"CorrelAsId", "DeregAll", "LeaveOnly", "Local", "None", "VariableUserId", "FullResp", *_V1_ONLY})
REQ_OPTIONS = frozenset({"CorrelAsId", "Local", "None", "VariableUserId"})
PUB_OPTIONS = frozenset({"RetainPub", "IsRetainedPub", "Local", "OtherSubsOnly", "CorrelAsId", "None", "NoReg"})
DEL_OPTIONS = frozenset({"Local", "None"})
#: RegOpt flags that a subscription keeps (the persistence option is kept apart).
_KEPT_FLAGS = frozenset({"CorrelAsId", "InformIfRet", "Local", "NewPubsOnly", "PubOnReqOnly", "VariableUserId"})
_ZERO_ID = bytes(24)


def guess_domain(content_type: str | None, payload: bytes) -> str | None:
    """The body's message domain when the publisher did not name one: from an MQTT 5 Content
    Type, else from the first byte (``{``/``[`` JSON, ``<`` XML), so that a content filter
    ``Body.x`` works on MQTT payloads (docs/pubsub.md)."""
    if content_type:
        lowered = content_type.lower()
        if "json" in lowered:
            return "JSON"
        if "xml" in lowered:
            return "XMLNSC"
    head = payload[:64].lstrip()[:1]
    if head in (b"{", b"["):
        return "JSON"
    if head == b"<":
        return "XMLNSC"
    return None


def publication_folders(pub: Publication, *, retained_inform: bool = False) -> list[Element]:
    """psc (+ mcd + usr) folders of a delivered publication (items 28 and 35): the broker adds
    SubPoint (seed 5902-5914) and IsRetainedPub when the subscriber asked (InformIfRet)."""
    psc = Element("psc")
    psc.add("Command", wire.PUBLISH)
    psc.add("Topic", pub.topic)
    if pub.sub_point:
        psc.add("SubPoint", pub.sub_point)
    if retained_inform:
        psc.add("PubOpt", "IsRetainedPub")
    if pub.pub_time is not None:
        psc.add("PubTime", pub.pub_time)
    if pub.seq_num is not None:
        psc.add("SeqNum", pub.seq_num)
    folders = [psc]
    if pub.domain:
        mcd = Element("mcd")
        mcd.add("Msd", pub.domain.lower())
        folders.append(mcd)
    if pub.usr:
        # MQTT 5 user properties may repeat a name or use one no XML element can have; the
        # usr folder holds each name once (seed 003 l.5266-5281) as an XML name: the first
        # value of a name is kept, names it cannot hold are left out (else the subscriber's
        # copy would be an RFH2 nobody can read).
        usr = Element("usr")
        for name, value in pub.usr:
            if is_usr_name(name) and usr.child(name) is None:
                usr.add(name, value)
        if usr.children:
            folders.append(usr)
    return folders


def filter_view(pub: Publication) -> Message:
    """The message a content filter sees (built once per publication, only when a matching
    subscription has a filter): usr folder, body in its (guessed) domain."""
    if pub._view is None:
        view_pub = pub
        if pub.domain is None:
            domain = guess_domain(None, pub.body)
            if domain is not None:
                view_pub = Publication(pub.topic, pub.body, pub.sub_point, pub.usr, domain)
        md = MQMD(Format="MQHRF2", Persistence=1 if pub.persistent else 0, Priority=pub.priority)
        pub._view = Message(MQMessage(md=md, headers=[MQRFH2(Format=pub.body_format, folders=publication_folders(view_pub))],
                                      body=pub.body))
    return pub._view


def filter_resolver(pub: Publication) -> Callable[[str], object]:
    """What a content filter reads of a publication (item 17): ``filter_view``, where the
    ``usr`` values of a publication whose usr folder has no types (MQTT user properties,
    MQRFH v1 name/values) are untyped text, so ``usr.level > 5`` compares a "7" as a number
    and ``usr.level = '7'`` as a string (selector ``UntypedText``; docs/pubsub.md)."""
    resolve = message_resolver(filter_view(pub))
    if not pub.untyped_usr:
        return resolve

    def untyped(name: str) -> object:
        value = resolve(name)
        if type(value) is str and name.startswith("usr."):
            return UntypedText(value)
        return value

    return untyped


class PubSubEngine:
    """Subscriptions, retained publications and the psc command protocol for one broker."""

    def __init__(
        self,
        qmgr_name: str,
        *,
        broker_name: str = "relaymq",
        default_tree: SubscriptionTree | None = None,
        default_retained: RetainedTree | None = None,
        mqtt_bridge: bool = False,
        acl: TopicAcl | None = None,
        sender: SenderAuthority | None = None,
        input_queues: dict[str, str] | None = None,
        control_queue: str = CONTROL_QUEUE,
        queue_check: Callable[[str, str], int | None] | None = None,
        known_qmgrs: Iterable[str] = (),
        events: bool = True,
        new_id: Callable[[], bytes] | None = None,
    ) -> None:
        """``mqtt_bridge``: the default point belongs to the MQTT broker (its tree and
        retained store are passed in); psc publications there are handed to it as
        ``MqttPublish`` actions, which reach MQTT sessions and, through the broker's
        publication tap, ``deliver_mqtt`` for queue subscribers."""
        self.qmgr_name = qmgr_name
        self.broker_name = broker_name
        self.mqtt_bridge = mqtt_bridge
        self.acl = acl
        #: The sender's own rights, checked for every command (``acl`` is topic security's).
        self.sender = sender
        self.input_queues = dict(input_queues if input_queues is not None else {wire.DEFAULT_STREAM: DEFAULT_SUBPOINT})
        self.control_queue = control_queue
        self.queue_check = queue_check
        self.known_qmgrs = {qmgr_name, *known_qmgrs}
        self.events = events
        self.new_id = new_id or unique_ids()
        self.trees: dict[str, SubscriptionTree] = {DEFAULT_SUBPOINT: default_tree if default_tree is not None else SubscriptionTree()}
        self.retained: dict[str, RetainedTree] = {DEFAULT_SUBPOINT: default_retained if default_retained is not None else RetainedTree()}
        self.subscriptions: dict[tuple, QueueSubscription] = {}
        self.by_name: dict[str, QueueSubscription] = {}
        self.by_subscriber: dict[SubscriberId, set[tuple]] = {}
        #: What the broker's store cannot keep of a psc publication retained at the default
        #: point (kept there as an MQTT message): topic -> its msg_id and psc attributes
        #: (PubTime, SeqNum, Priority, domain, Format, typed usr), so that a RegSub/ReqUpdate
        #: copy carries them (item 23). Stale once the topic's retained message changes.
        self.retained_psc: dict[str, dict[str, Any]] = {}
        self.changed = False  # set by every change the service must make durable
        #: Subscriptions changed since the service last saved (``take_dirty``): key -> the
        #: subscription, or None when it was removed.
        self.dirty: dict[tuple[Any, ...], QueueSubscription | None] = {}

    # ================================================================ commands
    def handle_message(self, message: Message, queue: str, now: float) -> list[Action]:
        """One message from the control queue or a publication input queue (items 26-37)."""
        try:
            command = wire.read_command(message)
        except r.PscError as err:
            command = _loose_command(message)
            return self._respond(command, wire.Response.error(err)) if command is not None else []
        if command is None:
            if wire.is_response(message):
                return []  # an inbound pscr is ignored (item 26, seed 5248-5264)
            return self._not_a_command(message, queue)
        actions: list[Action] = []
        try:
            if (command.name in wire.CONTROL_COMMANDS) != (queue == self.control_queue):
                raise r.PscError(r.INCORRECT_Q, f"{command.name} sent to {queue}")
            handler = {
                wire.PUBLISH: self._publish, wire.DELETE_PUB: self._delete_pub, wire.REG_SUB: self._reg_sub,
                wire.DEREG_SUB: self._dereg_sub, wire.REQ_UPDATE: self._req_update,
            }[command.name]
            response = wire.Response()
            after = handler(command, response, queue, now)
        except r.PscError as err:
            return self._respond(command, wire.Response.error(err))
        except Exception:  # an internal failure must answer, not kill the listener (3008)
            log.exception("pub/sub %s command failed", command.name)
            return self._respond(command, wire.Response.error(r.PscError(r.COMMAND_FAILED)))
        actions.extend(self._respond(command, response))
        actions.extend(after)
        return actions

    def _not_a_command(self, message: Message, queue: str) -> list[Action]:
        """A message with no psc command on the control queue or a publication input queue:
        logged, answered with 2336 RFH_COMMAND_ERROR when it names a ReplyToQ (and is not
        itself a reply or report, so that two brokers never bounce errors forever), and put on
        the dead-letter queue with that reason, so nothing is lost silently (docs/pubsub.md)."""
        md = message.mq.md
        log.warning("pub/sub: a message on %s has no psc command (MsgId %s, from %s); "
                    "it goes to the dead-letter queue", queue, md.MsgId.hex(), md.PutApplName.strip() or "?")
        actions: list[Action] = []
        if md.ReplyToQ.strip() and md.MsgType not in (MQMT_REPLY, MQMT_REPORT):
            command = wire.Command("", {}, Element("psc"), md)
            address = wire.reply_address(command, self.qmgr_name)
            error = wire.Response.error(r.PscError(r.RFH_COMMAND_ERROR, "no psc command"))
            if address is not None:
                actions.append(Put(address[0], address[1], wire.response_message(command, error, self.qmgr_name), "response"))
        actions.append(DeadLetter(message, r.RFH_COMMAND_ERROR, queue))
        return actions

    def failure(self, message: Message, reason: int) -> list[Action]:
        """The error response (if one is wanted) of a command that failed outside the engine
        (3008: its change could not be made durable)."""
        command = wire.command_of(message) or _loose_command(message)
        return self._respond(command, wire.Response.error(r.PscError(reason))) if command is not None else []

    def _respond(self, command: wire.Command, response: wire.Response) -> list[Action]:
        if not wire.response_wanted(command.md, response.completion, command.in_body):
            return []
        address = wire.reply_address(command, self.qmgr_name)
        if address is None:
            return []
        return [Put(address[0], address[1], wire.response_message(command, response, self.qmgr_name), "response")]

    # ---------------------------------------------------------------- common checks
    def _options(self, command: wire.Command, name: str, allowed: frozenset[str], reason: int) -> list[str]:
        options = command.options(name)
        for option in options:
            if option not in allowed:
                raise r.PscError(reason, f"unknown {name} {option!r}", **{name: option})
        return options

    def _topics(self, command: wire.Command, *, publish: bool) -> list[str]:
        """Validate every Topic first: a bad one fails the whole command (3072)."""
        topics = command.options("Topic") if "Topic" in command.params else []
        for topic in topics:
            try:
                if publish:
                    validate_topic_name(topic, strict=False)
                else:
                    validate_topic_filter(topic, strict=False)
            except TopicError as err:
                raise r.PscError(r.TOPIC_ERROR, str(err), Topic=topic) from None
            if command.rfh1 and not publish and any(
                    level in (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD) for level in topic.split("/")):
                # MQRFH subscribers use the wildcards of MQ pub/sub, not these (item 37, 4378-4384)
                raise r.PscError(r.TOPIC_ERROR, "wildcard in an MQRFH subscription", Topic=topic)
        return topics

    def _subscriber(self, command: wire.Command, correl_as_id: bool) -> SubscriberId:
        """QMgrName/QName with their defaults (item 31), CorrelId with CorrelAsId (3080)."""
        qmgr = command.one("QMgrName") or command.md.ReplyToQMgr.strip() or self.qmgr_name
        queue = command.one("QName") or command.md.ReplyToQ.strip()
        if not queue:
            raise r.PscError(r.Q_NAME_ERROR, "no QName and a blank ReplyToQ")
        if self.queue_check is not None:
            reason = self.queue_check(qmgr, queue)
            if reason is not None:
                raise r.PscError(reason, f"cannot reach {queue!r} at {qmgr!r}", QMgrName=qmgr, QName=queue)
        elif qmgr not in self.known_qmgrs:
            raise r.PscError(r.Q_MGR_NAME_ERROR, f"unknown queue manager {qmgr!r}", QMgrName=qmgr)
        correl = b""
        if correl_as_id:
            correl = command.md.CorrelId
            if correl == _ZERO_ID or not correl.strip(b"\0"):
                raise r.PscError(r.CORREL_ID_ERROR, "CorrelAsId with a zero CorrelId")
        return SubscriberId(qmgr, queue, correl)

    def _filter(self, command: wire.Command) -> str:
        return self._filter_text(command.one("Filter") or "")

    @staticmethod
    def _filter_text(text: str) -> str:
        """A Filter value, checked: an invalid expression is 3150 (item 17)."""
        if text:
            try:
                compile_selector(text)
            except SelectorError as err:
                raise r.PscError(r.FILTER_ERROR, str(err), Filter=text) from None
        return text

    def _authorised(self, command: wire.Command, topics: list[str], permission: str,
                    response: wire.Response) -> list[str]:
        """Partial authority (item 32): refused topics become 3081 warnings; all refused is
        an error (nothing processed)."""
        if self.acl is None and self.sender is None:
            return topics
        user = command.user_id or None
        ok = topics
        if self.sender is not None:
            ok = [t for t in ok if self.sender.topic(user, t, permission)]
        if self.acl is not None and permission == SUBSCRIBE:
            ok = [t for t in ok if self.acl.may_subscribe(user, t)]
        elif self.acl is not None:
            ok = [t for t in ok if self.acl.allowed(user, t, permission)]
        refused = [t for t in topics if t not in ok]
        if refused and not ok:
            raise r.PscError(r.NOT_AUTHORIZED, "not authorised", Topic=refused[0])
        for topic in refused:
            response.warn(r.NOT_AUTHORIZED, Topic=topic)
        return ok

    # ---------------------------------------------------------------- Publish (item 28)
    def _publish(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        options = self._options(command, "PubOpt", PUB_OPTIONS, r.PUB_OPTIONS_ERROR)
        if "IsRetainedPub" in options:
            raise r.PscError(r.PUB_OPTIONS_ERROR, "IsRetainedPub is set by the broker only", PubOpt="IsRetainedPub")
        topics = self._topics(command, publish=True)
        publisher = None
        own_queue = command.one("QName") or command.md.ReplyToQ.strip()
        if "OtherSubsOnly" in options or (own_queue and ("QName" in command.params or "QMgrName" in command.params)):
            # The publisher's own subscriber queue (seed 6021-6043): 3074/3076 when it is not
            # valid (seed 7082-7118 lists Publish among the commands that issue them); it must
            # not be blank only with OtherSubsOnly.
            correl = command.md.CorrelId if "CorrelAsId" in options and command.md.CorrelId != _ZERO_ID else b""
            own = self._subscriber(command, False)
            publisher = SubscriberId(own.qmgr, own.queue, correl)
        seq = command.one("SeqNum")
        if seq is not None and not seq.lstrip("-").isdigit():
            raise r.PscError(r.RFH_PARM_ERROR, "SeqNum is not an integer", SeqNum=seq)
        topics = self._authorised(command, topics, PUBLISH, response)
        md = command.md
        domain = str(command.mcd.get("Msd")) if command.mcd is not None and command.mcd.get("Msd") else None
        usr = [(c.name, "" if c.value is None else str(c.value)) for c in command.usr.children] if command.usr else []
        actions: list[Action] = []
        for topic in topics:
            pub = Publication(
                topic, command.body, self.input_queues.get(queue, DEFAULT_SUBPOINT), usr, domain,
                command.body_format, md.Persistence == MQPER_PERSISTENT, max(md.Priority, 0),
                now + md.Expiry / 10 if md.Expiry > 0 else None, command.one("PubTime"), seq,
                retain="RetainPub" in options, local="Local" in options, publisher=publisher,
                other_subs_only="OtherSubsOnly" in options, user_id=command.user_id,
                untyped_usr=command.rfh1,
            )
            actions.extend(self.publish(pub, now))
        return actions

    def publish(self, pub: Publication, now: float) -> list[Action]:
        """Retain (RetainPub, item 21) and deliver a publication made at this broker by a psc
        command or a flow's Publication node (which gives its subscription point)."""
        if self.mqtt_bridge and pub.sub_point == DEFAULT_SUBPOINT:
            # The broker retains it and routes it to MQTT sessions; its tap brings it back to
            # deliver_mqtt for queue subscribers, with the psc details kept by the service.
            return [self.mqtt_publish_action(pub, now)]
        if pub.retain:
            self.retained.setdefault(pub.sub_point, RetainedTree()).set(pub.topic, pub)
            self.changed = True
        return self.route(pub, now)

    def mqtt_publish_action(self, pub: Publication, now: float) -> MqttPublish:
        """psc publication -> MQTT: usr as MQTT 5 user properties, persistence as QoS 1."""
        properties: dict[str, Any] = {}
        if pub.usr:
            properties["user_property"] = list(pub.usr)
        if pub.domain:
            properties["content_type"] = {"JSON": "application/json"}.get(pub.domain.upper(), f"application/x-{pub.domain.lower()}")
        if pub.body_format == "MQSTR":
            properties["payload_format_indicator"] = 1
        expiry = None if pub.expiry_at is None else max(1, int(-(-(pub.expiry_at - now) // 1)))
        return MqttPublish(pub.topic, pub.body, 1 if pub.persistent else 0, pub.retain, properties, expiry, pub)

    # ---------------------------------------------------------------- delivery (items 14-17, 23, 35)
    def route(self, pub: Publication, now: float, matches: Iterable[tuple[Hashable, Any]] | None = None) -> list[Action]:
        """Queue-subscriber deliveries of a live publication: one copy per subscriber."""
        if matches is None:
            tree = self.trees.get(pub.sub_point)
            if tree is None:
                return []
            matches = tree.match(pub.topic)
        actions: list[Action] = []
        seen: set[SubscriberId] = set()
        expired: list[QueueSubscription] = []
        shared: list[SharedParts] = []  # the copies' RFH2 and body, made and encoded once
        for _key, sub in matches:
            if type(sub) is not QueueSubscription:
                continue
            if sub.expired(now):
                expired.append(sub)
                continue
            if "PubOnReqOnly" in sub.flags or sub.subscriber in seen:
                continue
            if pub.other_subs_only and pub.publisher is not None and _same_subscriber(pub.publisher, sub.subscriber):
                continue
            if not self._selected(sub, pub):
                continue
            seen.add(sub.subscriber)
            actions.append(self._delivery(sub, pub, now, retained_inform=False, shared=shared))
        for sub in expired:
            actions.extend(self.remove(sub, REMOVED_EXPIRED))
        return actions

    def deliver_mqtt(self, topic: str, payload: bytes, qos: int, properties: dict[str, Any],
                     expiry_at: float | None, now: float,
                     matches: Iterable[tuple[Hashable, Any]] | None = None) -> list[Action]:
        """An MQTT publication (default point) -> queue subscribers as MQ messages (item 35).
        Called for every MQTT publication, so it returns at once when no queue subscriber
        matches (the match itself is a cache hit of the broker's own lookup)."""
        if not self.subscriptions:
            return []
        if matches is None:
            matches = self.trees[DEFAULT_SUBPOINT].match(topic)
        for _key, value in matches:
            if type(value) is QueueSubscription:
                return self.route(publication_from_mqtt(topic, payload, qos, properties, expiry_at), now, matches)
        return []

    def _selected(self, sub: QueueSubscription, pub: Publication) -> bool:
        """Topic already matched; then the filter (item 17) and the subscriber's right to see
        this topic (a ``#`` subscription sees only permitted topics, item 38)."""
        if sub.selector is not None and not sub.selector.matches(filter_resolver(pub)):
            return False
        if self.acl is not None and not self.acl.allowed(sub.user_id or None, pub.topic, SUBSCRIBE):
            return False
        # the owner's ACL at delivery too, as for MQTT: a subscription registered before a
        # rule changed (or before issue 15) must not go on leaking what its owner may not read
        return self.sender is None or self.sender.topic(sub.user_id or None, pub.topic, RECEIVE)

    def _delivery(self, sub: QueueSubscription, pub: Publication, now: float, *, retained_inform: bool,
                  shared: list[SharedParts] | None = None) -> Put:
        """One subscriber's copy. ``shared`` (a live publication's copies: empty at first) holds
        the MQRFH2 and body that every MQRFH2 copy of it has in common, made once and encoded
        once (each copy's own part is its MQMD: MsgId, CorrelId, Persistence)."""
        persistent = {PERS: MQPER_PERSISTENT, NON_PERS: 0, PERS_AS_QUEUE: MQPER_PERSISTENCE_AS_Q_DEF}.get(
            sub.persistence, MQPER_PERSISTENT if pub.persistent else 0)
        if persistent == MQPER_PERSISTENT and self.acl is not None and not self.acl.allowed(
                sub.user_id or None, pub.topic, PERSISTENT):
            persistent = 0  # no Persistent authority: delivered non-persistent (item 38)
        md = MQMD(
            Report=0, MsgType=MQMT_DATAGRAM, Format="MQHRF2", MsgId=self.new_id(),
            CorrelId=(sub.subscriber.correl_id.ljust(24, b"\0") if sub.subscriber.correl_id else sub.broker_correl_id),
            ReplyToQ="", ReplyToQMgr=self.qmgr_name, PutApplType=MQAT_BROKER, PutApplName=self.qmgr_name[:28],
            Priority=pub.priority, Persistence=persistent, Expiry=pub.expiry_tenths(now),
        )
        if shared is not None and not sub.rfh1 and not retained_inform:
            if not shared:
                shared.append(SharedParts([MQRFH2(Format=pub.body_format, folders=publication_folders(pub))],
                                          pub.body))
            return Put(sub.subscriber.qmgr, sub.subscriber.queue, Message(SharedMQMessage(md, shared[0])),
                       "publication", sub)
        folders = publication_folders(pub, retained_inform=retained_inform)
        if sub.rfh1:
            md.Format = "MQHRF"
            header: Any = MQRFH(Format=pub.body_format, name_values=wire.rfh1_publication(folders[0], pub.usr))
        else:
            header = MQRFH2(Format=pub.body_format, folders=folders)
        message = Message(MQMessage(md=md, headers=[header], body=pub.body))
        return Put(sub.subscriber.qmgr, sub.subscriber.queue, message, "publication", sub)

    def _retained_for(self, sub: QueueSubscription, topic_filter: str, now: float) -> list[Action]:
        """Retained publications matching a subscription, sent because of a RegSub or a
        ReqUpdate: IsRetainedPub when the subscriber asked with InformIfRet (item 23)."""
        tree = self.retained.get(sub.sub_point)
        if tree is None:
            return []
        actions: list[Action] = []
        stale: list[str] = []
        for topic, value in list(tree.match(topic_filter)):
            pub = value if isinstance(value, Publication) else self._stored_publication(value, sub.sub_point)
            if pub.expired(now):
                stale.append(topic)
                continue
            if self._selected(sub, pub):
                actions.append(self._delivery(sub, pub, now, retained_inform="InformIfRet" in sub.flags))
        if not (self.mqtt_bridge and sub.sub_point == DEFAULT_SUBPOINT):
            for topic in stale:  # expiry counts down while stored (item 22)
                tree.delete(topic)
                self.changed = True
        return actions

    def note_retained(self, topic: str, msg_id: int, pub: Publication) -> None:
        """The broker retained ``pub`` (a psc publication at the default point) as message
        ``msg_id``: keep what its store cannot (see ``retained_psc``)."""
        self.retained_psc[topic] = {
            "msg_id": msg_id, "pub_time": pub.pub_time, "seq_num": pub.seq_num, "priority": pub.priority,
            "domain": pub.domain, "body_format": pub.body_format, "untyped_usr": pub.untyped_usr,
        }
        self.changed = True

    def _stored_publication(self, message: Any, sub_point: str) -> Publication:
        """A retained message of the broker as a Publication, with the psc attributes it was
        published with when it came from a psc Publish (and has not been replaced since)."""
        pub = publication_from_stored(message, sub_point)
        details = self.retained_psc.get(message.topic)
        if details is not None:
            if details["msg_id"] == message.msg_id:
                pub.pub_time, pub.seq_num, pub.priority = details["pub_time"], details["seq_num"], details["priority"]
                pub.domain, pub.body_format = details["domain"], details["body_format"]
                pub.untyped_usr, pub.from_mqtt = details["untyped_usr"], False
            else:
                del self.retained_psc[message.topic]  # an MQTT publication replaced it
                self.changed = True
        return pub

    def forget_retained(self, current: Callable[[str], Any]) -> None:
        """Drop ``retained_psc`` entries whose topic no longer holds that message
        (``current(topic)`` is the broker's retained message there, or None)."""
        for topic, details in list(self.retained_psc.items()):
            message = current(topic)
            if message is None or message.msg_id != details["msg_id"]:
                del self.retained_psc[topic]
                self.changed = True

    # ---------------------------------------------------------------- DeletePub (item 25)
    def _delete_pub(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        self._options(command, "DelOpt", DEL_OPTIONS, r.DEL_OPTIONS_ERROR)
        topics = self._topics(command, publish=False)
        topics = self._authorised(command, topics, PUBLISH, response)
        sub_point = command.one("SubPoint", self.input_queues.get(queue, DEFAULT_SUBPOINT)) or DEFAULT_SUBPOINT
        return self.delete_retained(topics, sub_point)

    def delete_retained(self, topic_filters: Iterable[str], sub_point: str = DEFAULT_SUBPOINT) -> list[Action]:
        """Delete the retained publications matching each filter at one subscription point."""
        tree = self.retained.get(sub_point)
        if tree is None:
            return []
        actions: list[Action] = []
        for topic_filter in topic_filters:
            for topic, _value in list(tree.match(topic_filter)):
                if self.mqtt_bridge and sub_point == DEFAULT_SUBPOINT:
                    actions.append(ClearRetained(topic))
                    if self.retained_psc.pop(topic, None) is not None:
                        self.changed = True
                else:
                    tree.delete(topic)
                    self.changed = True
        return actions

    # ---------------------------------------------------------------- RegSub (items 15-23, 29)
    def _reg_sub(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        options = self._options(command, "RegOpt", REG_OPTIONS, r.REG_OPTIONS_ERROR)
        topics = self._topics(command, publish=False)
        if "FullResp" in options and len(topics) != 1:
            raise r.PscError(r.REG_OPTIONS_ERROR, "FullResp needs exactly one Topic", RegOpt="FullResp")
        sub_name = command.one("SubName")
        if "AddName" in options and not sub_name:
            raise r.PscError(r.REG_OPTIONS_ERROR, "AddName needs SubName", RegOpt="AddName")
        if sub_name is not None and not sub_name.strip():
            raise r.PscError(r.SUB_NAME_ERROR, "blank SubName", SubName=sub_name)
        identity = command.one("SubIdentity")
        if identity is not None and len(identity) > wire.SUB_IDENTITY_MAX:
            raise r.PscError(r.SUB_IDENTITY_ERROR, "SubIdentity longer than 64 characters")
        filter_text = self._filter(command)
        subscriber = self._subscriber(command, "CorrelAsId" in options)
        if self.sender is not None and not self.sender.queue(command.user_id or None, subscriber.qmgr,
                                                             subscriber.queue, "put"):
            # the broker puts there on the subscriber's behalf: only into a queue it could put to
            raise r.PscError(r.NOT_AUTHORIZED, f"no put authority on the subscriber queue {subscriber.queue!r}",
                             QMgrName=subscriber.qmgr, QName=subscriber.queue)
        sub_point = command.one("SubPoint", DEFAULT_SUBPOINT) or DEFAULT_SUBPOINT
        user = command.user_id
        topics = self._authorised(command, topics, SUBSCRIBE, response)
        expiry_at = now + command.md.Expiry / 10 if command.md.Expiry > 0 else None
        # Pass 1: every check, so that an error leaves nothing half done (item 33).
        plans = []
        for topic in topics:
            key = (topic, sub_point, filter_text, subscriber)
            existing = self.subscriptions.get(key)
            named = self.by_name.get(sub_name) if sub_name else None
            if named is not None and existing is not None and named is not existing:
                raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "the name refers to another subscription", Topic=topic)
            if named is not None:
                existing = named
            elif existing is not None and sub_name and existing.sub_name != sub_name:
                if existing.sub_name:
                    raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "subscribed under another name", Topic=topic)
                if "AddName" not in options:
                    # The SubName section (seed 6454-6460) says 3152 for this case; the reason
                    # table's 3153 text (7303-7309) also covers it. The command's own section
                    # is followed (docs/pubsub.md "Reason codes").
                    raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "the subscription has no name (AddName adds one)",
                                     Topic=topic)
            if existing is not None and existing.user_id != user and "VariableUserId" not in existing.flags:
                raise r.PscError(r.WRONG_USER, f"registered by {existing.user_id!r}", Topic=topic)
            if "VariableUserId" not in options and any(
                    other.user_id != user and "VariableUserId" not in other.flags
                    for other in self._of_subscriber(subscriber) if other is not existing):
                raise r.PscError(r.DUPLICATE_IDENTITY, "the subscriber identity belongs to another user", Topic=topic)
            if existing is not None and "VariableUserId" in options and "VariableUserId" not in existing.flags \
                    and existing.user_id != user:
                raise r.PscError(r.WRONG_USER, "only the owner may add VariableUserId", Topic=topic)
            join = _check_join(existing, identity, options)
            plans.append((topic, key, existing, join))
        # Pass 2: apply.
        actions: list[Action] = []
        for topic, key, existing, join in plans:
            sub = existing
            if sub is None:
                sub = QueueSubscription(topic, sub_point, filter_text, subscriber, user,
                                        broker_correl_id=b"RMQ" + self.new_id()[:21], rfh1=command.rfh1)
                _apply_options(sub, options, new=True)
                added = True
            else:
                added = False
                self._unindex(sub)
                sub.topic, sub.sub_point, sub.filter_text, sub.subscriber = key
                if "NoAlter" not in options:
                    if command.options("RegOpt"):
                        _apply_options(sub, options, new=False)
                    if command.one("SubUserData") is not None:
                        sub.sub_user_data = command.one("SubUserData")
                    sub.user_id = user
            sub.selector = compile_selector(filter_text) if filter_text else None
            if "NoAlter" not in options or added:
                sub.expiry_at = expiry_at
                if command.one("SubUserData") is not None:
                    sub.sub_user_data = command.one("SubUserData")
            if sub_name:
                sub.sub_name = sub_name
            if identity is not None and join is not None:
                sub.identities[identity] = join
            self._index(sub)
            self.changed = True
            if added and self.events:
                actions.append(self._event("Added", sub, None))
            if "NewPubsOnly" not in sub.flags and "PubOnReqOnly" not in sub.flags:
                actions.extend(self._retained_for(sub, topic, now))
            if "FullResp" in options:
                response.extra.extend(_full_response(sub))
        return actions

    # ---------------------------------------------------------------- DeregSub (item 30)
    def _dereg_sub(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        options = self._options(command, "RegOpt", DEREG_OPTIONS, r.REG_OPTIONS_ERROR)
        identity = command.one("SubIdentity")
        if "LeaveOnly" in options and identity is None:
            raise r.PscError(r.REG_OPTIONS_ERROR, "LeaveOnly needs SubIdentity", RegOpt="LeaveOnly")
        if identity is not None and len(identity) > wire.SUB_IDENTITY_MAX:
            raise r.PscError(r.SUB_IDENTITY_ERROR, "SubIdentity longer than 64 characters")
        sub_name = command.one("SubName")
        topics = self._topics(command, publish=False)
        filters = [self._filter_text(f) for f in command.options("Filter")]
        sub_point = command.one("SubPoint")
        # DeregAll with Topic, SubPoint and Filter all given names one subscription: ignored
        # (seed 5479-5481).
        deregister_all = "DeregAll" in options and not (topics and filters and sub_point is not None)
        if not deregister_all and not topics and not sub_name:
            raise r.PscError(r.RFH_PARM_MISSING, "DeregSub needs Topic")
        if "FullResp" in options and ("DeregAll" in options or len(topics) != 1):
            # seed 5679-5693: FullResp refers to one subscription
            raise r.PscError(r.REG_OPTIONS_ERROR, "FullResp needs exactly one Topic and no DeregAll", RegOpt="FullResp")
        variable = "VariableUserId" in options
        targets: list[QueueSubscription] = []
        if sub_name and not deregister_all:
            targets.append(self._named(command, sub_name, topics[:1], filters[:1], sub_point))
        elif deregister_all:
            subscriber = self._subscriber(command, "CorrelAsId" in options)
            candidates = [s for s in self._of_subscriber(subscriber) if not s.expired(now)]
            targets = [s for s in candidates
                       if (sub_point is None or s.sub_point == sub_point)
                       and (not topics or s.topic in topics)
                       and (not filters or s.filter_text in filters)
                       and self._identified(s, command.user_id, variable)]
            # 3073 when one of the given values deregistered nothing (seed 7056-7070).
            for name, values, attr in (("Topic", topics, "topic"), ("Filter", filters, "filter_text")):
                for value in values:
                    if not any(getattr(s, attr) == value for s in targets):
                        raise r.PscError(r.NOT_REGISTERED, f"no subscription with {name} {value!r}", **{name: value})
            if sub_point is not None and not targets:
                raise r.PscError(r.NOT_REGISTERED, f"no subscription at SubPoint {sub_point!r}", SubPoint=sub_point)
            if not targets:
                raise r.PscError(r.NOT_REGISTERED, "nothing to deregister")
        else:
            # wildcard topics and filters must match the registered strings exactly (item 30);
            # several Topics and Filters: each value must deregister something.
            subscriber = self._subscriber(command, "CorrelAsId" in options)
            point = sub_point or DEFAULT_SUBPOINT
            for topic in topics:
                found = [self.subscriptions.get((topic, point, f, subscriber)) for f in (filters or [""])]
                found = [s for s in found if s is not None and not s.expired(now)]
                if not found:
                    raise r.PscError(r.NOT_REGISTERED, "not registered", Topic=topic)
                for sub in found:
                    if not self._identified(sub, command.user_id, variable):
                        raise r.PscError(r.NOT_REGISTERED, "registered with VariableUserId: give it to refer to it",
                                         Topic=topic)
                targets.extend(found)
            for value in filters:
                if not any(s.filter_text == value for s in targets):
                    raise r.PscError(r.NOT_REGISTERED, "not registered", Filter=value)
        for sub in targets:
            self._check_owner(sub, command.user_id)
            if identity is not None and identity not in sub.identities:
                raise r.PscError(r.SUB_IDENTITY_ERROR, "not a member of the identity set", Topic=sub.topic)
        if "FullResp" in options:
            response.extra.extend(_full_response(targets[0]))
        actions: list[Action] = []
        for sub in targets:
            if identity is not None:
                sub.identities.pop(identity, None)
                self.dirty[sub.key] = sub
                self.changed = True
                if sub.identities or "LeaveOnly" in options:
                    continue  # others remain, or LeaveOnly keeps it even when empty (5695-5712)
            actions.extend(self.remove(sub, REMOVED_DEREGISTERED))
        return actions

    def _named(self, command: wire.Command, sub_name: str, topics: list[str], filters: list[str],
               sub_point: str | None) -> QueueSubscription:
        """The subscription a SubName refers to (DeregSub, ReqUpdate). Not found: 3153 when a
        subscription with the command's traditional identity exists without a name (seed
        5805-5809, 6735-6739), else 3073."""
        named = self.by_name.get(sub_name)
        if named is not None:
            return named
        if topics:
            try:
                subscriber = self._subscriber(command, "CorrelAsId" in command.options("RegOpt"))
            except r.PscError:
                subscriber = None
            if subscriber is not None:
                unnamed = self.subscriptions.get((topics[0], sub_point or DEFAULT_SUBPOINT, (filters or [""])[0], subscriber))
                if unnamed is not None and not unnamed.sub_name:
                    raise r.PscError(r.SUB_NAME_ERROR, "the subscription has no name", SubName=sub_name)
        raise r.PscError(r.NOT_REGISTERED, f"no subscription named {sub_name!r}", SubName=sub_name)

    @staticmethod
    def _identified(sub: QueueSubscription, user: str, variable: bool) -> bool:
        """Whether a command that gives no SubName refers to ``sub``: a subscription registered
        with VariableUserId is referred to only by a command that gives VariableUserId too;
        otherwise the command's userid identifies it (seed 5758-5766, 6672-6682)."""
        return variable or sub.user_id == user or "VariableUserId" not in sub.flags

    @staticmethod
    def _check_owner(sub: QueueSubscription, user: str) -> None:
        """Only the registering user changes a subscription, unless it has VariableUserId
        (seed 5483-5485, 6341-6363): 3151 (pubsub.md decision: a userid mismatch is 3151)."""
        if sub.user_id != user and "VariableUserId" not in sub.flags:
            raise r.PscError(r.WRONG_USER, f"registered by {sub.user_id!r}", Topic=sub.topic)

    # ---------------------------------------------------------------- ReqUpdate (item 24)
    def _req_update(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        options = self._options(command, "RegOpt", REQ_OPTIONS, r.REG_OPTIONS_ERROR)
        topics = self._topics(command, publish=False)
        filter_text = self._filter(command)
        topics = self._authorised(command, topics, SUBSCRIBE, response)
        topic = topics[0]
        sub_name = command.one("SubName")
        sub_point = command.one("SubPoint", DEFAULT_SUBPOINT) or DEFAULT_SUBPOINT
        if sub_name:
            sub: QueueSubscription | None = self._named(command, sub_name, [topic], [filter_text], sub_point)
        else:
            subscriber = self._subscriber(command, "CorrelAsId" in options)
            sub = self.subscriptions.get((topic, sub_point, filter_text, subscriber))
            if sub is not None and not self._identified(sub, command.user_id, "VariableUserId" in options):
                raise r.PscError(r.NOT_REGISTERED, "registered with VariableUserId: give it to refer to it", Topic=topic)
        if sub is None or sub.expired(now):
            raise r.PscError(r.NOT_REGISTERED, "no matching subscription", Topic=topic)
        self._check_owner(sub, command.user_id)
        actions = self._retained_for(sub, topic, now)
        if not actions:
            raise r.PscError(r.NO_RETAINED_MSG, "no retained publication", Topic=topic)
        return actions

    # ================================================================ subscriptions
    def _of_subscriber(self, subscriber: SubscriberId) -> list[QueueSubscription]:
        return [self.subscriptions[k] for k in self.by_subscriber.get(subscriber, ())]

    def take_dirty(self) -> dict[tuple[Any, ...], QueueSubscription | None]:
        """The subscriptions changed since the last call (key -> subscription, None: removed)."""
        dirty, self.dirty = self.dirty, {}
        return dirty

    def _index(self, sub: QueueSubscription) -> None:
        self.dirty[sub.key] = sub
        self.subscriptions[sub.key] = sub
        self.by_subscriber.setdefault(sub.subscriber, set()).add(sub.key)
        if sub.sub_name:
            self.by_name[sub.sub_name] = sub
        self.trees.setdefault(sub.sub_point, SubscriptionTree()).insert(sub.topic, sub.tree_key, sub)

    def _unindex(self, sub: QueueSubscription) -> None:
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

    def remove(self, sub: QueueSubscription, cause: str = REMOVED_ADMIN) -> list[Action]:
        """Remove a subscription for one of the causes of item 19; returns the event."""
        if self.subscriptions.get(sub.key) is not sub:
            return []
        self._unindex(sub)
        self.changed = True
        return [self._event("Removed", sub, cause)] if self.events else []

    def select(self, *, topic: str | None = None, sub_point: str | None = None, filter_text: str | None = None,
               qmgr: str | None = None, queue: str | None = None, correl_id: bytes | None = None,
               sub_name: str | None = None, user: str | None = None) -> list[QueueSubscription]:
        """The queue subscriptions whose attributes equal every criterion given (None: any),
        for an administrator (item 19, seed 1840-1854): topic filters and filters compare as
        the exact registered strings, as DeregSub does."""
        out = []
        for sub in self.subscriptions.values():
            if ((topic is None or sub.topic == topic) and (sub_point is None or sub.sub_point == sub_point)
                    and (filter_text is None or sub.filter_text == filter_text)
                    and (qmgr is None or sub.subscriber.qmgr == qmgr) and (queue is None or sub.subscriber.queue == queue)
                    and (correl_id is None or sub.subscriber.correl_id.ljust(24, b"\0") == correl_id.ljust(24, b"\0"))
                    and (sub_name is None or sub.sub_name == sub_name) and (user is None or sub.user_id == user)):
                out.append(sub)
        return sorted(out, key=lambda s: (s.sub_point, s.topic, s.subscriber.qmgr, s.subscriber.queue, s.filter_text))

    def remove_queue(self, qmgr: str, queue: str) -> list[Action]:
        """The subscriber queue was deleted (a temporary dynamic queue closed, item 19)."""
        actions: list[Action] = []
        for sub in [s for s in self.subscriptions.values() if s.subscriber.qmgr == qmgr and s.subscriber.queue == queue]:
            actions.extend(self.remove(sub, REMOVED_QUEUE_DELETED))
        return actions

    def remove_unreachable(self) -> list[Action]:
        """Subscriptions whose queue at this queue manager no longer exists (a deleted queue,
        a closed temporary dynamic queue: item 19, seed 2830-2843)."""
        if self.queue_check is None:
            return []
        actions: list[Action] = []
        for subscriber in [s for s in self.by_subscriber if s.qmgr == self.qmgr_name]:
            if self.queue_check(subscriber.qmgr, subscriber.queue) is not None:
                actions.extend(self.remove_queue(subscriber.qmgr, subscriber.queue))
        return actions

    def expire(self, now: float) -> list[Action]:
        """Subscriptions past their expiry (item 19) and named-point retained publications
        past theirs (item 22)."""
        actions: list[Action] = []
        for sub in [s for s in self.subscriptions.values() if s.expired(now)]:
            actions.extend(self.remove(sub, REMOVED_EXPIRED))
        for point, tree in self.retained.items():
            if self.mqtt_bridge and point == DEFAULT_SUBPOINT:
                continue
            for topic, value in list(tree.match("#")) + list(tree.match("$SYS/#")) + list(tree.match("$ISYS/#")):
                if isinstance(value, Publication) and value.expired(now):
                    tree.delete(topic)
                    self.changed = True
        return actions

    def _event(self, what: str, sub: QueueSubscription, cause: str | None) -> MqttPublish:
        """Subscription add/remove events (item 45) on ``$SYS/Broker/<broker>/Subscriptions/<what>``."""
        body: dict[str, Any] = {"topic": sub.topic, "subPoint": sub.sub_point, "filter": sub.filter_text,
                                "qmgr": sub.subscriber.qmgr, "queue": sub.subscriber.queue, "user": sub.user_id}
        if sub.sub_name:
            body["subName"] = sub.sub_name
        if cause:
            body["cause"] = cause
        return MqttPublish(f"$SYS/Broker/{self.broker_name}/Subscriptions/{what}", json.dumps(body).encode())

    def mqtt_subscription_event(self, added: bool, topic_filter: str, *, client_id: str | None,
                                share_group: str | None, user: str | None, filter_text: str,
                                qos: int | None, cause: str | None) -> MqttPublish:
        """Item 45 for an MQTT SUBSCRIBE/UNSUBSCRIBE (or a session's end): the same topics as a
        queue subscription's events, with the client instead of the queue."""
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
        what = "Added" if added else "Removed"
        return MqttPublish(f"$SYS/Broker/{self.broker_name}/Subscriptions/{what}", json.dumps(body).encode())

    # ================================================================ persistence
    def snapshot(self) -> dict[str, Any]:
        """Everything to keep across a restart (items 19, 22): subscriptions, and retained
        publications of named points (the default point's are the broker's)."""
        return {"subscriptions": [s.to_record() for s in self.subscriptions.values()], **self.retained_snapshot()}

    def retained_snapshot(self) -> dict[str, Any]:
        """The retained part of :meth:`snapshot` (named points' publications, ``retained_psc``),
        without walking every subscription."""
        retained = {}
        for point, tree in self.retained.items():
            if self.mqtt_bridge and point == DEFAULT_SUBPOINT:
                continue
            found = list(tree.match("#")) + list(tree.match("$SYS/#")) + list(tree.match("$ISYS/#"))
            retained[point] = [v.to_record() for _t, v in found if isinstance(v, Publication)]
        return {"retained": retained, "retained_psc": self.retained_psc}

    def reset(self) -> None:
        """Forget every queue subscription and named-point retained publication (before a
        ``restore`` of the last durable state); MQTT sessions in a shared tree are untouched."""
        for sub in list(self.subscriptions.values()):
            self._unindex(sub)
        for point in list(self.retained):
            if not (self.mqtt_bridge and point == DEFAULT_SUBPOINT):
                self.retained[point] = RetainedTree()
        self.retained_psc = {}

    def restore(self, data: dict[str, Any]) -> None:
        for rec in data.get("subscriptions", ()):
            sub = QueueSubscription(
                rec["topic"], rec["sub_point"], rec["filter"],
                SubscriberId(rec["qmgr"], rec["queue"], bytes.fromhex(rec["correl_id"])), rec["user_id"],
                compile_selector(rec["filter"]) if rec["filter"] else None, set(rec["flags"]), rec["persistence"],
                rec["expiry_at"], rec["sub_name"], rec["sub_user_data"], dict(rec["identities"]),
                bytes.fromhex(rec["broker_correl_id"]), rec.get("rfh1", False))
            self._index(sub)
        for point, records in data.get("retained", {}).items():
            tree = self.retained.setdefault(point, RetainedTree())
            for rec in records:
                tree.set(rec["topic"], Publication.from_record(rec))
        self.retained_psc.update(data.get("retained_psc", {}))


# ==================================================================== helpers
def unique_ids() -> Callable[[], bytes]:
    """24-byte ids, unique across processes and restarts: 16 random bytes drawn once, then a
    counter (an MsgId per copy for a queue subscriber; a system call for each cost more than
    the rest of making the copy's header)."""
    prefix = os.urandom(16)
    counter = itertools.count(1)
    return lambda: prefix + next(counter).to_bytes(8, "big")


def _loose_command(message: Message) -> wire.Command | None:
    """Enough of a malformed command to address its error response."""
    rfh2 = message.mq.first_rfh2()
    psc = rfh2.folder("psc") if rfh2 is not None else None
    if psc is not None:
        return wire.Command("", {}, psc, message.mq.md)
    v1 = next((h for h in message.mq.headers if isinstance(h, MQRFH)), None)
    if v1 is not None:
        return wire.Command("", {}, wire._psc_from_rfh1(v1), message.mq.md, rfh1=True)
    found = wire.psc_in_body(message.mq)
    return wire.Command("", {}, found[0], message.mq.md, in_body=True) if found is not None else None


def dead_letter_message(action: DeadLetter, qmgr_name: str, now: float) -> Message:
    """``action.message`` as it goes to the dead-letter queue: an MQDLH (reason, the queue it
    was taken from, the broker as putter) in front of its headers and body, as MQ does."""
    original = action.message.mq
    put_date, put_time = put_date_time(int(now * 1000))
    dlh = MQDLH(Reason=action.reason, DestQName=action.queue, DestQMgrName=qmgr_name,
                Encoding=original.md.Encoding, CodedCharSetId=original.md.CodedCharSetId,
                Format=original.md.Format, PutApplType=MQAT_BROKER, PutApplName=qmgr_name[:28],
                PutDate=put_date, PutTime=put_time)
    md = dataclasses.replace(original.md, Format=MQDLH.FORMAT_NAME)
    return Message(MQMessage(md=md, headers=[dlh, *original.headers], body=original.body))


def _same_subscriber(publisher: SubscriberId, subscriber: SubscriberId) -> bool:
    """OtherSubsOnly (item 28): QMgrName+QName, plus CorrelId when the publisher gave one."""
    if (publisher.qmgr, publisher.queue) != (subscriber.qmgr, subscriber.queue):
        return False
    return not publisher.correl_id or publisher.correl_id.ljust(24, b"\0") == subscriber.correl_id.ljust(24, b"\0")


def _apply_options(sub: QueueSubscription, options: list[str], *, new: bool) -> None:
    """RegOpt on a subscription (item 29): ``None`` alone resets to defaults; the last
    persistence option given wins (item 20); an existing subscription given options gets
    exactly those."""
    meaningful = [o for o in options if o != "None"]
    sub.flags = {o for o in meaningful if o in _KEPT_FLAGS}
    persistence = [o for o in meaningful if o in PERSISTENCE_OPTIONS]
    sub.persistence = persistence[-1] if persistence else PERS_AS_PUB


def _check_join(existing: QueueSubscription | None, identity: str | None, options: list[str]) -> str | None:
    """The identity-set rules of SubIdentity with JoinShared/JoinExcl (seed 6160-6200,
    6436-6523): 3154, 3155, 3156, 3157. Returns the access to record, or None."""
    if identity is None:
        return None
    if "JoinExcl" in options:
        if existing is not None:
            others = {i: a for i, a in existing.identities.items() if i != identity}
            if others:
                raise r.PscError(r.SUBSCRIPTION_IN_USE, "other identities share the subscription")
            if existing.identities.get(identity) == "exclusive":
                raise r.PscError(r.ALREADY_JOINED, "already joined exclusively")
        return "exclusive"
    if "JoinShared" in options:
        if existing is not None:
            holder = [i for i, a in existing.identities.items() if a == "exclusive"]
            if holder and holder[0] != identity:
                raise r.PscError(r.SUBSCRIPTION_LOCKED, f"locked by {holder[0]!r}")
            if existing.identities.get(identity) == "shared":
                raise r.PscError(r.ALREADY_JOINED, "already joined")
        return "shared"
    if existing is None:
        return "shared"
    if identity not in existing.identities:
        raise r.PscError(r.SUB_IDENTITY_ERROR, "not a member of the identity set and no Join option")
    if len(existing.identities) > 1 and "NoAlter" not in options:
        raise r.PscError(r.SUBSCRIPTION_IN_USE, "other identities share the subscription")
    return existing.identities[identity]


def _full_response(sub: QueueSubscription) -> list[tuple[str, str]]:
    """FullResp (item 29): the subscription's attributes in the pscr."""
    out = [("Topic", sub.topic), ("QMgrName", sub.subscriber.qmgr), ("QName", sub.subscriber.queue)]
    if sub.sub_point:
        out.append(("SubPoint", sub.sub_point))
    if sub.filter_text:
        out.append(("Filter", sub.filter_text))
    out += [("RegOpt", o) for o in sorted(sub.flags)] + [("RegOpt", sub.persistence)]
    if sub.sub_name:
        out.append(("SubName", sub.sub_name))
    if sub.sub_user_data is not None:
        out.append(("SubUserData", sub.sub_user_data))
    out += [("SubIdentity", i) for i in sorted(sub.identities)]
    return out


def publication_from_mqtt(topic: str, payload: bytes, qos: int, properties: dict[str, Any],
                          expiry_at: float | None, sub_point: str = DEFAULT_SUBPOINT) -> Publication:
    """An MQTT publication as the engine sees it: user properties are its usr folder, QoS > 0
    is persistent, a UTF-8 payload (format indicator 1) is MQSTR (issue 4)."""
    usr = [(str(k), str(v)) for k, v in properties.get("user_property", ())]
    content_type = properties.get("content_type")
    return Publication(topic, payload, sub_point, usr,
                       guess_domain(content_type, b"") if content_type else None,
                       "MQSTR" if properties.get("payload_format_indicator") == 1 else "",
                       persistent=qos > 0, expiry_at=expiry_at, from_mqtt=True, untyped_usr=True)


def publication_from_stored(message: Any, sub_point: str = DEFAULT_SUBPOINT) -> Publication:
    """A broker ``StoredMessage`` (a retained MQTT publication) as a Publication."""
    pub = publication_from_mqtt(message.topic, message.payload, message.qos, message.properties,
                                message.expiry_at, sub_point)
    pub.retain = True
    return pub
