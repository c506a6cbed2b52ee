"""RegSub, DeregSub and ReqUpdate (pubsub.md items 15-24, 29-30; seed 003 l.5443-6745).

Why a part of its own: these three commands are the rules of subscription identity (the
traditional identity QMgrName+QName[+CorrelId], SubName, SubIdentity sets, VariableUserId)
and of the retained copies a registration sends. Each checks everything before it changes
anything, so that an error leaves nothing half done (item 33). The subscriptions themselves
are the registry's; retained publications the retained store's; the copies the delivery's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaymq.pubsub import psc as wire
from relaymq.pubsub import reasons as r
from relaymq.pubsub.checks import DEREG_OPTIONS, REG_OPTIONS, REQ_OPTIONS, CommandChecks, check_owner, identified
from relaymq.pubsub.delivery import Delivery
from relaymq.pubsub.model import (
    DEFAULT_SUBPOINT,
    PERS_AS_PUB,
    PERSISTENCE_OPTIONS,
    REMOVED_DEREGISTERED,
    Action,
    QueueSubscription,
    SubscriberId,
)
from relaymq.pubsub.registry import SubKey, SubscriptionRegistry
from relaymq.pubsub.retained_store import RetainedPublications
from relaymq.pubsub.topicacl import SUBSCRIBE

#: RegOpt flags that a subscription keeps (the persistence option is kept apart).
_KEPT_FLAGS = frozenset({"CorrelAsId", "InformIfRet", "Local", "NewPubsOnly", "PubOnReqOnly", "VariableUserId"})


@dataclass
class _RegSub:
    """What one RegSub asks for, checked (the same for each of its topics)."""

    command: wire.Command
    options: list[str]
    sub_name: str | None
    identity: str | None
    filter_text: str
    subscriber: SubscriberId
    sub_point: str
    expiry_at: float | None

    @property
    def user(self) -> str:
        return self.command.user_id


class Registration:
    """The subscription commands of one broker."""

    def __init__(self, registry: SubscriptionRegistry, retained: RetainedPublications, delivery: Delivery,
                 checks: CommandChecks, new_id: Callable[[], bytes]) -> None:
        self.registry = registry
        self.retained = retained
        self.delivery = delivery
        self.checks = checks
        self.new_id = new_id

    def retained_copies(self, sub: QueueSubscription, topic_filter: str, now: float) -> list[Action]:
        """The retained publications a RegSub or ReqUpdate sends to ``sub`` (item 23)."""
        return list(self.delivery.retained(sub, self.retained.live(sub.sub_point, topic_filter, now), now))

    # ---------------------------------------------------------------- RegSub (items 15-23, 29)
    def reg_sub(self, command: wire.Command, response: wire.Response, now: float) -> list[Action]:
        checks = self.checks
        options = checks.options(command, "RegOpt", REG_OPTIONS, r.REG_OPTIONS_ERROR)
        topics = checks.topics(command, publish=False)
        sub_name = _reg_sub_name(command, options, topics)
        identity = checks.identity(command)
        filter_text = checks.filter(command)
        subscriber = checks.subscriber(command, "CorrelAsId" in options)
        checks.may_put(command, subscriber)
        request = _RegSub(command, options, sub_name, identity, filter_text, subscriber,
                          command.one("SubPoint", DEFAULT_SUBPOINT) or DEFAULT_SUBPOINT,
                          now + command.md.Expiry / 10 if command.md.Expiry > 0 else None)
        topics = checks.authorised(command, topics, SUBSCRIBE, response)
        # Pass 1: every check, so that an error leaves nothing half done (item 33).
        plans = []
        for topic in topics:
            key = (topic, request.sub_point, filter_text, subscriber)
            existing = self._existing(request, topic, key)
            self._check_user(request, topic, existing)
            checks.temporary_needs_nonpers(subscriber, _persistence_after(command, options, existing))
            plans.append((topic, key, existing, _check_join(existing, identity, options)))
        # Pass 2: apply.
        actions: list[Action] = []
        for topic, key, existing, join in plans:
            sub = self._register(request, topic, key, existing, join)
            if existing is None:
                actions.extend(self.registry.added(sub))
            if "NewPubsOnly" not in sub.flags and "PubOnReqOnly" not in sub.flags:
                actions.extend(self.retained_copies(sub, topic, now))
            if "FullResp" in options:
                response.extra.extend(_full_response(sub))
        return actions

    def _existing(self, request: _RegSub, topic: str, key: SubKey) -> QueueSubscription | None:
        """The subscription a RegSub changes: by its SubName, else by its key (3152 when the
        two disagree or the name cannot be given to it)."""
        sub_name = request.sub_name
        existing = self.registry.get(key)
        named = self.registry.named(sub_name) if sub_name else None
        if named is not None and existing is not None and named is not existing:
            raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "the name refers to another subscription", Topic=topic)
        if named is not None:
            return named
        if existing is not None and sub_name and existing.sub_name != sub_name:
            if existing.sub_name:
                raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "subscribed under another name", Topic=topic)
            if "AddName" not in request.options:
                # The SubName section (seed 6454-6460) says 3152 for this case; the reason
                # table's 3153 text (7303-7309) also covers it. The command's own section
                # is followed (docs/pubsub.md "Reason codes").
                raise r.PscError(r.DUPLICATE_SUBSCRIPTION, "the subscription has no name (AddName adds one)",
                                 Topic=topic)
        return existing

    def _check_user(self, request: _RegSub, topic: str, existing: QueueSubscription | None) -> None:
        """3151 for another user's subscription, 3078 for another user's subscriber identity
        (both unless VariableUserId lets them, seed 6341-6363)."""
        user, options = request.user, request.options
        if existing is not None and existing.user_id != user and "VariableUserId" not in existing.flags:
            raise r.PscError(r.WRONG_USER, f"registered by {existing.user_id!r}", Topic=topic)
        if "VariableUserId" not in options and any(
                other.user_id != user and "VariableUserId" not in other.flags
                for other in self.registry.of_subscriber(request.subscriber) if other is not existing):
            raise r.PscError(r.DUPLICATE_IDENTITY, "the subscriber identity belongs to another user", Topic=topic)
        if existing is not None and "VariableUserId" in options and "VariableUserId" not in existing.flags \
                and existing.user_id != user:
            raise r.PscError(r.WRONG_USER, "only the owner may add VariableUserId", Topic=topic)

    def _register(self, request: _RegSub, topic: str, key: SubKey, existing: QueueSubscription | None,
                  join: str | None) -> QueueSubscription:
        """Make or change the subscription (all checks passed) and index it."""
        command, options = request.command, request.options
        altering = "NoAlter" not in options
        if existing is None:
            sub = QueueSubscription(topic, request.sub_point, request.filter_text, request.subscriber, request.user,
                                    broker_correl_id=b"RMQ" + self.new_id()[:21], rfh1=command.rfh1)
            _apply_options(sub, options)
        else:
            sub = existing
            self.registry.unindex(sub)
            sub.topic, sub.sub_point, sub.filter_text, sub.subscriber = key
            if altering:
                if command.options("RegOpt"):
                    _apply_options(sub, options)
                sub.user_id = request.user
        sub.selector = None
        if request.filter_text:
            from relaymq.selector.compiled import compile_selector

            sub.selector = compile_selector(request.filter_text)
        if altering or existing is None:
            sub.expiry_at = request.expiry_at
            if command.one("SubUserData") is not None:
                sub.sub_user_data = command.one("SubUserData")
        if request.sub_name:
            sub.sub_name = request.sub_name
        if request.identity is not None and join is not None:
            sub.identities[request.identity] = join
        self.registry.index(sub)
        self.registry.changed = True
        return sub

    # ---------------------------------------------------------------- DeregSub (item 30)
    def dereg_sub(self, command: wire.Command, response: wire.Response, now: float) -> list[Action]:
        checks = self.checks
        options = checks.options(command, "RegOpt", DEREG_OPTIONS, r.REG_OPTIONS_ERROR)
        if "LeaveOnly" in options and command.one("SubIdentity") is None:
            raise r.PscError(r.REG_OPTIONS_ERROR, "LeaveOnly needs SubIdentity", RegOpt="LeaveOnly")
        identity = checks.identity(command)
        sub_name = command.one("SubName")
        topics = checks.topics(command, publish=False)
        filters = [checks.filter_text(f) for f in command.options("Filter")]
        sub_point = command.one("SubPoint")
        # DeregAll with Topic, SubPoint and Filter all given names one subscription: ignored
        # (seed 5479-5481).
        deregister_all = "DeregAll" in options and not (topics and filters and sub_point is not None)
        if not deregister_all and not topics and not sub_name:
            raise r.PscError(r.RFH_PARM_MISSING, "DeregSub needs Topic")
        if "FullResp" in options and ("DeregAll" in options or len(topics) != 1):
            # seed 5679-5693: FullResp refers to one subscription
            raise r.PscError(r.REG_OPTIONS_ERROR, "FullResp needs exactly one Topic and no DeregAll", RegOpt="FullResp")
        if sub_name and not deregister_all:
            targets = [self.named(command, sub_name, topics[:1], filters[:1], sub_point)]
        elif deregister_all:
            targets = self._all_targets(command, options, topics, filters, sub_point, now)
        else:
            targets = self._exact_targets(command, options, topics, filters, sub_point, now)
        for sub in targets:
            check_owner(sub, command.user_id)
            if identity is not None and identity not in sub.identities:
                raise r.PscError(r.SUB_IDENTITY_ERROR, "not a member of the identity set", Topic=sub.topic)
        if "FullResp" in options:
            response.extra.extend(_full_response(targets[0]))
        return self._deregister(targets, identity, "LeaveOnly" in options)

    def _all_targets(self, command: wire.Command, options: list[str], topics: list[str], filters: list[str],
                     sub_point: str | None, now: float) -> list[QueueSubscription]:
        """DeregAll: the subscriber's subscriptions that the given values select; 3073 when
        one of the given Topic, Filter or SubPoint values deregisters nothing (seed 7056-7070)."""
        subscriber = self.checks.subscriber(command, "CorrelAsId" in options)
        variable = "VariableUserId" in options
        targets = [s for s in self.registry.of_subscriber(subscriber)
                   if not s.expired(now)
                   and (sub_point is None or s.sub_point == sub_point)
                   and (not topics or s.topic in topics)
                   and (not filters or s.filter_text in filters)
                   and identified(s, command.user_id, variable)]
        for name, values, attr in (("Topic", topics, "topic"), ("Filter", filters, "filter_text")):
            for value in values:
                if not any(getattr(s, attr) == value for s in targets):
                    raise r.PscError(r.NOT_REGISTERED, f"no subscription with {name} {value!r}", **{name: value})
        if sub_point is not None and not targets:
            raise r.PscError(r.NOT_REGISTERED, f"no subscription at SubPoint {sub_point!r}", SubPoint=sub_point)
        if not targets:
            raise r.PscError(r.NOT_REGISTERED, "nothing to deregister")
        return targets

    def _exact_targets(self, command: wire.Command, options: list[str], topics: list[str], filters: list[str],
                       sub_point: str | None, now: float) -> list[QueueSubscription]:
        """Wildcard topics and filters must match the registered strings exactly (item 30);
        with several Topics and Filters each value must deregister something."""
        subscriber = self.checks.subscriber(command, "CorrelAsId" in options)
        variable = "VariableUserId" in options
        point = sub_point or DEFAULT_SUBPOINT
        targets: list[QueueSubscription] = []
        for topic in topics:
            found = [self.registry.get((topic, point, f, subscriber)) for f in (filters or [""])]
            live = [s for s in found if s is not None and not s.expired(now)]
            if not live:
                raise r.PscError(r.NOT_REGISTERED, "not registered", Topic=topic)
            if not all(identified(s, command.user_id, variable) for s in live):
                raise r.PscError(r.NOT_REGISTERED, "registered with VariableUserId: give it to refer to it",
                                 Topic=topic)
            targets.extend(live)
        for value in filters:
            if not any(s.filter_text == value for s in targets):
                raise r.PscError(r.NOT_REGISTERED, "not registered", Filter=value)
        return targets

    def _deregister(self, targets: list[QueueSubscription], identity: str | None, leave_only: bool) -> list[Action]:
        """Without a SubIdentity the subscriptions go; with one, that identity leaves and the
        subscription goes when no identity is left, unless LeaveOnly (seed 5604-5613, 5695-5712)."""
        actions: list[Action] = []
        for sub in targets:
            if identity is not None:
                sub.identities.pop(identity, None)
                self.registry.mark(sub)
                if sub.identities or leave_only:
                    continue
            actions.extend(self.registry.remove(sub, REMOVED_DEREGISTERED))
        return actions

    def named(self, command: wire.Command, sub_name: str, topics: list[str], filters: list[str],
              sub_point: str | None) -> QueueSubscription:
        """The subscription a SubName refers to (DeregSub, ReqUpdate). Not found: 3153 when a
        subscription with the command's traditional identity exists without a name (seed
        5805-5809, 6735-6739), else 3073."""
        named = self.registry.named(sub_name)
        if named is not None:
            return named
        if topics:
            try:
                subscriber: SubscriberId | None = self.checks.subscriber(command, "CorrelAsId" in command.options("RegOpt"))
            except r.PscError:
                subscriber = None
            if subscriber is not None:
                unnamed = self.registry.get((topics[0], sub_point or DEFAULT_SUBPOINT, (filters or [""])[0], subscriber))
                if unnamed is not None and not unnamed.sub_name:
                    raise r.PscError(r.SUB_NAME_ERROR, "the subscription has no name", SubName=sub_name)
        raise r.PscError(r.NOT_REGISTERED, f"no subscription named {sub_name!r}", SubName=sub_name)

    # ---------------------------------------------------------------- ReqUpdate (item 24)
    def req_update(self, command: wire.Command, response: wire.Response, now: float) -> list[Action]:
        checks = self.checks
        options = checks.options(command, "RegOpt", REQ_OPTIONS, r.REG_OPTIONS_ERROR)
        topics = checks.topics(command, publish=False)
        filter_text = checks.filter(command)
        topics = checks.authorised(command, topics, SUBSCRIBE, response)
        topic = topics[0]
        sub_name = command.one("SubName")
        sub_point = command.one("SubPoint", DEFAULT_SUBPOINT) or DEFAULT_SUBPOINT
        sub: QueueSubscription | None
        if sub_name:
            sub = self.named(command, sub_name, [topic], [filter_text], sub_point)
        else:
            subscriber = checks.subscriber(command, "CorrelAsId" in options)
            sub = self.registry.get((topic, sub_point, filter_text, subscriber))
            if sub is not None and not identified(sub, command.user_id, "VariableUserId" in options):
                raise r.PscError(r.NOT_REGISTERED, "registered with VariableUserId: give it to refer to it", Topic=topic)
        if sub is None or sub.expired(now):
            raise r.PscError(r.NOT_REGISTERED, "no matching subscription", Topic=topic)
        check_owner(sub, command.user_id)
        actions = self.retained_copies(sub, topic, now)
        if not actions:
            raise r.PscError(r.NO_RETAINED_MSG, "no retained publication", Topic=topic)
        return actions


def _reg_sub_name(command: wire.Command, options: list[str], topics: list[str]) -> str | None:
    """FullResp with one topic only (3083), AddName with a SubName (3083), a SubName not
    blank (3153): seed 6146-6200, 6436-6460."""
    if "FullResp" in options and len(topics) != 1:
        raise r.PscError(r.REG_OPTIONS_ERROR, "FullResp needs exactly one Topic", RegOpt="FullResp")
    sub_name = command.one("SubName")
    if "AddName" in options and not sub_name:
        raise r.PscError(r.REG_OPTIONS_ERROR, "AddName needs SubName", RegOpt="AddName")
    if sub_name is not None and not sub_name.strip():
        raise r.PscError(r.SUB_NAME_ERROR, "blank SubName", SubName=sub_name)
    return sub_name


def _persistence_after(command: wire.Command, options: list[str], existing: QueueSubscription | None) -> str:
    """The persistence option a subscription will have after this RegSub (``_register``):
    the last one given (item 20), PersAsPub when options without one are given to it or it is
    new, its own when it keeps its options (no RegOpt, or NoAlter)."""
    if existing is None or ("NoAlter" not in options and command.options("RegOpt")):
        given = [o for o in options if o in PERSISTENCE_OPTIONS]
        return given[-1] if given else PERS_AS_PUB
    return existing.persistence


def _apply_options(sub: QueueSubscription, options: list[str]) -> None:
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
        _check_join_exclusive(existing, identity)
        return "exclusive"
    if "JoinShared" in options:
        _check_join_shared(existing, identity)
        return "shared"
    if existing is None:
        return "shared"
    if identity not in existing.identities:
        raise r.PscError(r.SUB_IDENTITY_ERROR, "not a member of the identity set and no Join option")
    if len(existing.identities) > 1 and "NoAlter" not in options:
        raise r.PscError(r.SUBSCRIPTION_IN_USE, "other identities share the subscription")
    return existing.identities[identity]


def _check_join_exclusive(existing: QueueSubscription | None, identity: str) -> None:
    if existing is None:
        return
    if any(i != identity for i in existing.identities):
        raise r.PscError(r.SUBSCRIPTION_IN_USE, "other identities share the subscription")
    if existing.identities.get(identity) == "exclusive":
        raise r.PscError(r.ALREADY_JOINED, "already joined exclusively")


def _check_join_shared(existing: QueueSubscription | None, identity: str) -> None:
    if existing is None:
        return
    holder = [i for i, a in existing.identities.items() if a == "exclusive"]
    if holder and holder[0] != identity:
        raise r.PscError(r.SUBSCRIPTION_LOCKED, f"locked by {holder[0]!r}")
    if existing.identities.get(identity) == "shared":
        raise r.PscError(r.ALREADY_JOINED, "already joined")


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
