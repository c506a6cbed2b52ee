"""Delivery to queue subscribers (pubsub.md items 14-17, 23, 35, 38).

Why a part of its own: a live publication (routed through the topic tree) and the retained
publications sent because of a RegSub or ReqUpdate become the same copies: one per
subscriber, selected by filter and authority, as an MQ message with the MQMD of item 35.
This class makes them; it keeps no state but the broker's identity and the ACLs it asks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from relaymq.message.constants import MQMT_DATAGRAM, MQPER_PERSISTENCE_AS_Q_DEF, MQPER_PERSISTENT
from relaymq.message.headers import MQMessage, SharedMQMessage, SharedParts, encode_message
from relaymq.message.message import Message, StoredMessage
from relaymq.message.mqmd import MQMD, PutFields, around_ids, put_fields
from relaymq.message.mqrfh import MQRFH
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.pubsub import psc as wire
from relaymq.pubsub.authority import RECEIVE, SenderAuthority
from relaymq.pubsub.conversions import filter_selects, publication_folders
from relaymq.pubsub.model import NON_PERS, PERS, PERS_AS_QUEUE, Publication, Put, QueueSubscription, SubscriberId
from relaymq.pubsub.topicacl import PERSISTENT, SUBSCRIBE, TopicAcl

#: MQAT_BROKER (cmqc.h): the PutApplType of publications the broker sends (item 35).
MQAT_BROKER = 26

#: A subscription's Persistence option as the copy's MQMD Persistence (item 35); PersAsPub,
#: absent here, takes the publication's.
_PERSISTENCE = {PERS: MQPER_PERSISTENT, NON_PERS: 0, PERS_AS_QUEUE: MQPER_PERSISTENCE_AS_Q_DEF}


class Delivery:
    """The copies of publications for queue subscribers of one broker."""

    def __init__(self, qmgr_name: str, new_id: Callable[[], bytes], acl: TopicAcl | None,
                 sender: SenderAuthority | None) -> None:
        self.qmgr_name = qmgr_name
        self.new_id = new_id
        self.acl = acl
        self.sender = sender

    def live(self, pub: Publication, matches: Iterable[tuple[Hashable, Any]],
             now: float) -> tuple[list[Put], list[QueueSubscription]]:
        """One copy per subscriber of a live publication among the tree's ``matches``
        (item 14); also the matched subscriptions found expired, for their removal."""
        copies: list[Put] = []
        seen: set[SubscriberId] = set()
        expired: list[QueueSubscription] = []
        shared = _Copies()  # what the copies have in common, made and encoded once
        expiry = pub.expiry_tenths(now)  # the same for every copy
        readers: dict[str, bool] = {}  # user -> may_read(user, pub.topic), asked once per publication
        for _key, sub in matches:
            if type(sub) is not QueueSubscription:
                continue
            if sub.expiry_at is not None and sub.expired(now):  # most never expire: no call for them
                expired.append(sub)
                continue
            if "PubOnReqOnly" in sub.flags or sub.subscriber in seen:
                continue
            if pub.other_subs_only and pub.publisher is not None and same_subscriber(pub.publisher, sub.subscriber):
                continue
            if not self.selected(sub, pub, readers):
                continue
            seen.add(sub.subscriber)
            copies.append(self.copy(sub, pub, expiry, retained_inform=False, shared=shared))
        return copies, expired

    def retained(self, sub: QueueSubscription, pubs: Iterable[Publication], now: float) -> list[Put]:
        """Retained publications sent because of a RegSub or a ReqUpdate: IsRetainedPub when
        the subscriber asked with InformIfRet (item 23)."""
        inform = "InformIfRet" in sub.flags
        return [self.copy(sub, pub, pub.expiry_tenths(now), retained_inform=inform)
                for pub in pubs if self.selected(sub, pub)]

    def selected(self, sub: QueueSubscription, pub: Publication, readers: dict[str, bool] | None = None) -> bool:
        """Topic already matched; then the filter (item 17) and the subscriber's right to see
        this topic (a ``#`` subscription sees only permitted topics, item 38). ``readers``: the
        rights found for ``pub`` so far, by owner (the same for each of a user's subscriptions),
        for a caller that asks for many subscriptions of one publication."""
        if sub.selector is not None and not filter_selects(pub, sub.selector):
            return False
        if readers is None:
            return self.may_read(sub.user_id or None, pub.topic)
        may = readers.get(sub.user_id)
        if may is None:
            may = readers[sub.user_id] = self.may_read(sub.user_id or None, pub.topic)
        return may

    def may_read(self, user: str | None, topic: str) -> bool:
        """May ``user`` (a subscription's owner) see ``topic`` (item 38)?"""
        if self.acl is not None and not self.acl.allowed(user, topic, SUBSCRIBE):
            return False
        # the owner's ACL at delivery too, as for MQTT: a subscription registered before a
        # rule changed (or before issue 15) must not go on leaking what its owner may not read
        return self.sender is None or self.sender.topic(user, topic, RECEIVE)

    def copy(self, sub: QueueSubscription, pub: Publication, expiry: int, *, retained_inform: bool,
             shared: _Copies | None = None) -> Put:
        """One subscriber's copy, its MQMD Expiry ``expiry`` (``pub.expiry_tenths``). ``shared`` (a
        live publication's copies: empty at first) holds what every MQRFH2 copy of it has in
        common, made and encoded once: the MQRFH2 and body, and the whole message per MQMD
        Persistence; a copy is those bytes with its own MsgId and CorrelId (issue 14)."""
        persistent = _PERSISTENCE.get(sub.persistence, MQPER_PERSISTENT if pub.persistent else 0)
        if persistent == MQPER_PERSISTENT and self.acl is not None and not self.acl.allowed(
                sub.user_id or None, pub.topic, PERSISTENT):
            persistent = 0  # no Persistent authority: delivered non-persistent (item 38)
        msg_id = self.new_id()
        correl_id = sub.subscriber.correl_id.ljust(24, b"\0") if sub.subscriber.correl_id else sub.broker_correl_id
        if shared is not None and not sub.rfh1 and not retained_inform and len(msg_id) <= 24 >= len(correl_id):
            made = shared.templates.get(persistent)
            if made is None:
                if shared.parts is None:
                    shared.parts = SharedParts([MQRFH2(Format=pub.body_format, folders=publication_folders(pub))],
                                               pub.body)
                md = self._mqmd(pub, persistent, expiry, msg_id, correl_id)
                template = encode_message(SharedMQMessage(md, shared.parts))
                head, tail = around_ids(template)
                made = shared.templates[persistent] = (head, tail, put_fields(template))
            head, tail, fields = made
            msg_id, correl_id = msg_id.ljust(24, b"\0"), correl_id.ljust(24, b"\0")
            if fields is not None:  # the put reads these, as put_fields would of the copy's bytes
                fields = tuple.__new__(PutFields, (fields.Expiry, fields.Priority, msg_id, correl_id))
            # the template with this copy's ids (mqmd.with_ids), its parts cut once per publication
            return Put(sub.subscriber.qmgr, sub.subscriber.queue,
                       StoredMessage(b"".join((head, msg_id, correl_id, tail)), fields), "publication", sub)
        md = self._mqmd(pub, persistent, expiry, msg_id, correl_id)
        folders = publication_folders(pub, retained_inform=retained_inform)
        header: MQRFH | MQRFH2
        if sub.rfh1:
            md.Format = "MQHRF"
            header = MQRFH(Format=pub.body_format, name_values=wire.rfh1_publication(folders[0], pub.usr))
        else:
            header = MQRFH2(Format=pub.body_format, folders=folders)
        message = Message(MQMessage(md=md, headers=[header], body=pub.body))
        return Put(sub.subscriber.qmgr, sub.subscriber.queue, message, "publication", sub)

    def _mqmd(self, pub: Publication, persistent: int, expiry: int, msg_id: bytes, correl_id: bytes) -> MQMD:
        """A copy's MQMD (item 35)."""
        return MQMD(Report=0, MsgType=MQMT_DATAGRAM, Format="MQHRF2", MsgId=msg_id, CorrelId=correl_id,
                    ReplyToQ="", ReplyToQMgr=self.qmgr_name, PutApplType=MQAT_BROKER,
                    PutApplName=self.qmgr_name[:28], Priority=pub.priority, Persistence=persistent, Expiry=expiry)


class _Copies:
    """What the MQRFH2 copies of one live publication have in common: their MQRFH2 and body
    (``parts``) and, per MQMD Persistence, a whole copy's bytes (``templates``), which the
    others differ from in their MsgId and CorrelId only: kept as the bytes before and after
    those ids (``mqmd.around_ids``), with the MQMD fields a put reads of them (``put_fields``:
    each copy's are these with its own ids, handed to the put with it)."""

    __slots__ = ("parts", "templates")

    def __init__(self) -> None:
        self.parts: SharedParts | None = None
        self.templates: dict[int, tuple[bytes, bytes, PutFields | None]] = {}


def same_subscriber(publisher: SubscriberId, subscriber: SubscriberId) -> bool:
    """OtherSubsOnly (item 28): QMgrName+QName, plus CorrelId when the publisher gave one."""
    if (publisher.qmgr, publisher.queue) != (subscriber.qmgr, subscriber.queue):
        return False
    return not publisher.correl_id or publisher.correl_id.ljust(24, b"\0") == subscriber.correl_id.ljust(24, b"\0")
