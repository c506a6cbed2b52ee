"""The checks every psc command shares (pubsub.md items 17, 27-32, 36).

Why a part of its own: Publish, DeletePub, RegSub, DeregSub and ReqUpdate validate their
options, topics, filter and subscriber queue the same way and apply the same partial-authority
rule; each check raises the seed's reason code (``PscError``) for the command's response.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from relaymq.pubsub import psc as wire
from relaymq.pubsub import reasons as r
from relaymq.pubsub.authority import SenderAuthority
from relaymq.pubsub.model import NON_PERS, PERSISTENCE_OPTIONS, QueueSubscription, SubscriberId
from relaymq.pubsub.topicacl import SUBSCRIBE, TopicAcl
from relaymq.pubsub.topics import (
    MULTI_LEVEL_WILDCARD,
    SINGLE_LEVEL_WILDCARD,
    TopicError,
    validate_topic_filter,
    validate_topic_name,
)

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
ZERO_ID = bytes(24)


class CommandChecks:
    """The shared checks, with what they need of the broker: its queue manager's name, how
    to tell whether a subscriber queue can be reached, and the ACLs."""

    def __init__(self, qmgr_name: str, *, queue_check: Callable[[str, str], int | None] | None,
                 known_qmgrs: Iterable[str], acl: TopicAcl | None, sender: SenderAuthority | None,
                 temporary_queue: Callable[[str], bool] | None = None) -> None:
        self.qmgr_name = qmgr_name
        self.queue_check = queue_check
        #: Whether a queue of this queue manager is a temporary dynamic queue (item 20).
        self.temporary_queue = temporary_queue
        self.known_qmgrs = {qmgr_name, *known_qmgrs}
        self.acl = acl
        self.sender = sender

    @staticmethod
    def options(command: wire.Command, name: str, allowed: frozenset[str], reason: int) -> list[str]:
        options = command.options(name)
        for option in options:
            if option not in allowed:
                raise r.PscError(reason, f"unknown {name} {option!r}", **{name: option})
        return options

    @staticmethod
    def topics(command: wire.Command, *, publish: bool) -> list[str]:
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

    def subscriber(self, command: wire.Command, correl_as_id: bool) -> SubscriberId:
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
            if correl == ZERO_ID or not correl.strip(b"\0"):
                raise r.PscError(r.CORREL_ID_ERROR, "CorrelAsId with a zero CorrelId")
        return SubscriberId(qmgr, queue, correl)

    def filter(self, command: wire.Command) -> str:
        return self.filter_text(command.one("Filter") or "")

    @staticmethod
    def filter_text(text: str) -> str:
        """A Filter value, checked: an invalid expression is 3150 (item 17)."""
        if text:
            from relaymq.selector import SelectorError, compile_selector

            try:
                compile_selector(text)
            except SelectorError as err:
                raise r.PscError(r.FILTER_ERROR, str(err), Filter=text) from None
        return text

    def authorised(self, command: wire.Command, topics: list[str], permission: str,
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

    def may_put(self, command: wire.Command, subscriber: SubscriberId) -> None:
        """RegSub into a queue needs the sender's put authority there: the broker puts there
        on the subscriber's behalf (issue 15), 3081 naming the queue."""
        if self.sender is not None and not self.sender.queue(command.user_id or None, subscriber.qmgr,
                                                             subscriber.queue, "put"):
            raise r.PscError(r.NOT_AUTHORIZED, f"no put authority on the subscriber queue {subscriber.queue!r}",
                             QMgrName=subscriber.qmgr, QName=subscriber.queue)

    def temporary_needs_nonpers(self, subscriber: SubscriberId, persistence: str) -> None:
        """A temporary dynamic subscriber queue of this queue manager needs NonPers (item 20,
        seed 6428-6430). The seed names no reason code for it; 3083 REG_OPTIONS_ERROR is the
        RegOpt error of its table (docs/pubsub.md "Reason codes")."""
        if (persistence != NON_PERS and self.temporary_queue is not None and subscriber.qmgr == self.qmgr_name
                and self.temporary_queue(subscriber.queue)):
            raise r.PscError(r.REG_OPTIONS_ERROR, f"{subscriber.queue!r} is a temporary dynamic queue: "
                             f"RegOpt NonPers is required, not {persistence}", RegOpt=persistence)

    @staticmethod
    def identity(command: wire.Command) -> str | None:
        """SubIdentity, at most 64 characters (3154, item 29)."""
        identity = command.one("SubIdentity")
        if identity is not None and len(identity) > wire.SUB_IDENTITY_MAX:
            raise r.PscError(r.SUB_IDENTITY_ERROR, "SubIdentity longer than 64 characters")
        return identity


def identified(sub: QueueSubscription, user: str, variable: bool) -> bool:
    """Whether a command that gives no SubName refers to ``sub``: a subscription registered
    with VariableUserId is referred to only by a command that gives VariableUserId too;
    otherwise the command's userid identifies it (seed 5758-5766, 6672-6682)."""
    return variable or sub.user_id == user or "VariableUserId" not in sub.flags


def check_owner(sub: QueueSubscription, user: str) -> None:
    """Only the registering user changes a subscription, unless it has VariableUserId
    (seed 5483-5485, 6341-6363): 3151 (pubsub.md decision: a userid mismatch is 3151)."""
    if sub.user_id != user and "VariableUserId" not in sub.flags:
        raise r.PscError(r.WRONG_USER, f"registered by {sub.user_id!r}", Topic=sub.topic)
