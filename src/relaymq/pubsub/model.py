"""The pub/sub engine's records: who subscribes, what is published, and what the engine asks
its host to do (pubsub.md items 13-25).

Why a module of plain records: the engine (``engine``) is sans-I/O; it returns *actions* that
the service (``service``) performs against the queue manager and the MQTT broker, and the
tests inspect. Keeping the records apart lets both import them without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from relaymq.message.message import Message

if TYPE_CHECKING:
    from relaymq.selector.compiled import Selector

#: The default (unnamed) subscription point: what MQTT clients publish and subscribe at
#: (item 16, seed 1907-1962).
DEFAULT_SUBPOINT = ""
#: First element of the key under which a queue subscriber sits in a subscription tree, so
#: that it never collides with an MQTT client id (a str) or a shared group ("$share", name).
PSC_KEY = "$psc"

# Persistence options of a subscription (item 20, seed 6302-6332).
NON_PERS, PERS, PERS_AS_PUB, PERS_AS_QUEUE = "NonPers", "Pers", "PersAsPub", "PersAsQueue"
PERSISTENCE_OPTIONS = (NON_PERS, PERS, PERS_AS_PUB, PERS_AS_QUEUE)

# Why a subscription went away (item 19, seed 1840-1854, 2789-2843, 6294-6296).
REMOVED_DEREGISTERED = "deregistered"
REMOVED_EXPIRED = "expired"
REMOVED_QUEUE_DELETED = "queue_deleted"
REMOVED_ADMIN = "administrator"
# ... and why an MQTT subscription went away (item 45), as the broker says when it removes
# it (``Broker.removal_cause``); expiry (the session's) and administrator are the above.
REMOVED_UNSUBSCRIBED = "unsubscribed"
REMOVED_SESSION_ENDED = "session_ended"  # a clean session's client disconnected
REMOVED_CLEAN_START = "clean_start"  # a reconnect with clean start discarded the session
REMOVED_REPLACED = "replaced"  # a SUBSCRIBE to the same filter with other options
REMOVED_LAST_MEMBER = "last_member_left"  # a shared subscription's group


class SubscriberId(NamedTuple):
    """The traditional identity of a queue subscriber: queue manager, queue and, with
    CorrelAsId, the CorrelId (item 13, seed 1812-1820). A named tuple: a live publication's
    copies are one per subscriber, found by hashing each matched subscription's identity
    (``Delivery.live``), which a tuple does without a Python call (issue 14)."""

    qmgr: str
    queue: str
    correl_id: bytes = b""

    def label(self) -> str:
        suffix = f" correl={self.correl_id.hex()}" if self.correl_id else ""
        return f"{self.qmgr}/{self.queue}{suffix}"


@dataclass(eq=False)
class QueueSubscription:
    """One registration (items 13-20, 29): topic + subscription point + filter + subscriber,
    with its options, expiry, name, identity set and the user that owns it."""

    topic: str
    sub_point: str
    filter_text: str
    subscriber: SubscriberId
    user_id: str
    selector: Selector | None = None
    flags: set[str] = field(default_factory=set)  # Local, NewPubsOnly, PubOnReqOnly, ...
    persistence: str = PERS_AS_PUB
    expiry_at: float | None = None  # wall clock; None = unlimited
    sub_name: str | None = None
    sub_user_data: str | None = None
    identities: dict[str, str] = field(default_factory=dict)  # SubIdentity -> "shared"|"exclusive"
    broker_correl_id: bytes = b""  # the non-zero CorrelId used without CorrelAsId (item 15)
    rfh1: bool = False  # registered with MQRFH v1: publications go out in MQRFH v1 (item 37)
    no_local = False  # what routing asks of every tree value (a queue subscriber has no MQTT no-local)

    @property
    def key(self) -> tuple[str, str, str, SubscriberId]:
        return (self.topic, self.sub_point, self.filter_text, self.subscriber)

    @property
    def tree_key(self) -> tuple[str, SubscriberId, str]:
        return (PSC_KEY, self.subscriber, self.filter_text)

    def expired(self, now: float) -> bool:
        return self.expiry_at is not None and self.expiry_at <= now

    def describe(self) -> dict[str, Any]:
        """What an administrator sees of it (``relaymq psc list``, the admin route)."""
        return {
            "topic": self.topic, "subPoint": self.sub_point, "filter": self.filter_text,
            "qmgr": self.subscriber.qmgr, "queue": self.subscriber.queue,
            "correlId": self.subscriber.correl_id.hex(), "user": self.user_id,
            "options": sorted(self.flags) + [self.persistence], "expiry": self.expiry_at,
            "subName": self.sub_name, "subUserData": self.sub_user_data,
            "identities": dict(sorted(self.identities.items())), "mqrfh1": self.rfh1,
        }

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready record (the service persists subscriptions with it)."""
        return {
            "topic": self.topic, "sub_point": self.sub_point, "filter": self.filter_text,
            "qmgr": self.subscriber.qmgr, "queue": self.subscriber.queue,
            "correl_id": self.subscriber.correl_id.hex(), "user_id": self.user_id,
            "flags": sorted(self.flags), "persistence": self.persistence, "expiry_at": self.expiry_at,
            "sub_name": self.sub_name, "sub_user_data": self.sub_user_data,
            "identities": self.identities, "broker_correl_id": self.broker_correl_id.hex(),
            "rfh1": self.rfh1,
        }


@dataclass(eq=False)
class Publication:
    """A publication inside the engine, whichever front end made it (psc Publish, MQTT)."""

    topic: str
    body: bytes = b""
    sub_point: str = DEFAULT_SUBPOINT
    usr: list[tuple[str, str]] = field(default_factory=list)
    domain: str | None = None  # mcd.Msd, when the publisher said
    body_format: str = ""  # MQMD/RFH2 Format of the body (MQSTR for text)
    persistent: bool = False
    priority: int = 0
    expiry_at: float | None = None  # wall clock
    pub_time: str | None = None
    seq_num: str | None = None
    retain: bool = False
    local: bool = False
    publisher: SubscriberId | None = None  # for OtherSubsOnly (item 28)
    other_subs_only: bool = False
    user_id: str | None = None
    from_mqtt: bool = False
    #: usr values are text of no declared type (MQTT user properties, MQRFH v1 name/values):
    #: a content filter compares them as numbers with numbers (docs/pubsub.md "Content filters").
    untyped_usr: bool = False
    _view: Message | None = field(default=None, repr=False)
    #: What its content filters read (``conversions.FilterSource``), made on the first filter.
    _source: Any = field(default=None, repr=False)
    #: Content filter text -> whether it selects this publication (``conversions.filter_selects``).
    _selected: dict[str, bool] | None = field(default=None, repr=False)

    def expired(self, now: float) -> bool:
        return self.expiry_at is not None and self.expiry_at <= now

    def expiry_tenths(self, now: float) -> int:
        """MQMD Expiry still left, in tenths of a second (-1 unlimited): expiry counts down
        while a retained publication is stored (item 22, seed 7462-7467)."""
        if self.expiry_at is None:
            return -1
        return max(1, math.ceil((self.expiry_at - now) * 10))

    def to_record(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "body": self.body.hex(), "sub_point": self.sub_point,
            "usr": self.usr, "domain": self.domain, "body_format": self.body_format,
            "persistent": self.persistent, "priority": self.priority, "expiry_at": self.expiry_at,
            "pub_time": self.pub_time, "seq_num": self.seq_num, "untyped_usr": self.untyped_usr,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Publication:
        return cls(data["topic"], bytes.fromhex(data["body"]), data["sub_point"],
                   [tuple(x) for x in data["usr"]], data["domain"], data["body_format"],
                   data["persistent"], data["priority"], data["expiry_at"], data["pub_time"],
                   data["seq_num"], retain=True, untyped_usr=data.get("untyped_usr", False))


# -- actions: what the engine asks its host to do -------------------------------------------

@dataclass(slots=True)
class Put:
    """Put ``message`` on ``queue`` at ``qmgr`` (a response or a publication; one per copy)."""

    qmgr: str
    queue: str
    message: Message
    purpose: str  # "response" | "publication"
    subscription: QueueSubscription | None = None


@dataclass
class MqttPublish:
    """Publish through the MQTT broker (default subscription point, events, statistics)."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    expiry_interval: int | None = None
    #: The psc publication this stands for, so that queue subscribers reached through the
    #: broker's tap get its psc details (PubTime, SeqNum, OtherSubsOnly...); None for events.
    publication: Publication | None = None


@dataclass
class ClearRetained:
    """Delete the broker's retained publication on ``topic`` (DeletePub at the default point)."""

    topic: str


@dataclass
class DeadLetter:
    """Put ``message``, which the broker could not process, on the queue manager's dead-letter
    queue (when it has one) with ``reason`` in its MQDLH; ``queue`` is where it came from."""

    message: Message
    reason: int
    queue: str


Action = Put | MqttPublish | ClearRetained | DeadLetter
