"""Topic access control lists (pubsub.md items 6 and 38; seed 003 l.1288-1332, 2411-2486,
3147-3157, 7184-7200).

Why its own model rather than ``relaymq.auth.acl``: the seed's ACLs are per topic *node* and
inherited down the topic tree, with an explicit entry overriding its parents, for principals
that are users or groups, and with three separate permissions (Publish, Subscribe,
Persistent). The simple ACL file is a list of allow rules per filter; both apply, neither
replaces the other (``CombinedAcl``).

Resolution of permission P for user u on topic T: walk from T's node up to the root (``""``).
At the first node with an entry for P that concerns u, that node decides: u's own entry wins
over its groups' entries; among groups, one ``allow`` is enough. Every user belongs to
``PublicGroup``, which by default is allowed everything at the root (1288-1332) unless the
configuration says otherwise (the stream scenario of 2422-2486 denies it).

``$SYS`` and ``$ISYS`` (3147-3157): with topic security on, only the broker publishes there
and only the broker subscribes to ``$ISYS``; ``$SYS/STREAM/...`` is the exception because
streams are modelled as topics under it (2411-2421) and are governed by the ACLs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relaymq.pubsub.topics import (
    LEVEL_SEPARATOR,
    MULTI_LEVEL_WILDCARD,
    SINGLE_LEVEL_WILDCARD,
    reserved_for_broker,
)

PUBLISH = "publish"
SUBSCRIBE = "subscribe"
PERSISTENT = "persistent"
PERMISSIONS = (PUBLISH, SUBSCRIBE, PERSISTENT)
ALLOW, DENY, INHERIT = "allow", "deny", "inherit"
PUBLIC_GROUP = "PublicGroup"
ROOT = ""


def normalise_topic(topic: str) -> str:
    """The node an ACL is set on: the seed writes ``$SYS/STREAM/StreamX/`` and ``" "`` for
    the root (2480-2486); both mean the node without the trailing separator."""
    topic = topic.strip() if topic.strip() == "" else topic
    return topic[:-1] if topic.endswith(LEVEL_SEPARATOR) else topic


@dataclass
class AclEntry:
    """One row of a topic's ACL table: principal and its three settings."""

    topic: str
    principal: str
    publish: str = INHERIT
    subscribe: str = INHERIT
    persistent: str = INHERIT

    def to_dict(self) -> dict[str, str]:
        return {"topic": self.topic, "principal": self.principal, "publish": self.publish,
                "subscribe": self.subscribe, "persistent": self.persistent}


@dataclass
class TopicAcl:
    """The ACL tables of a topic tree plus the group memberships that give them meaning."""

    enabled: bool = True
    groups: dict[str, set[str]] = field(default_factory=dict)
    entries: dict[str, dict[str, AclEntry]] = field(default_factory=dict)  # topic -> principal -> entry

    @classmethod
    def default(cls, enabled: bool = True) -> TopicAcl:
        """PublicGroup allowed everything at the root: the seed's initial topic tree."""
        acl = cls(enabled)
        acl.set(AclEntry(ROOT, PUBLIC_GROUP, ALLOW, ALLOW, ALLOW))
        return acl

    @classmethod
    def from_data(cls, data: dict[str, Any], enabled: bool = True) -> TopicAcl:
        """From ``{"groups": {g: [users]}, "acl": [entry dicts]}`` (configuration, ACL file)."""
        acl = cls.default(enabled)
        acl.merge(data)
        return acl

    def merge(self, data: dict[str, Any]) -> None:
        for group, users in (data.get("groups") or {}).items():
            self.groups.setdefault(group, set()).update(users)
        for item in data.get("acl") or ():
            self.set(AclEntry(normalise_topic(item.get("topic", "")), item["principal"],
                              item.get("publish", INHERIT), item.get("subscribe", INHERIT),
                              item.get("persistent", INHERIT)))

    def to_data(self) -> dict[str, Any]:
        return {"groups": {g: sorted(u) for g, u in sorted(self.groups.items())},
                "acl": [e.to_dict() for t in sorted(self.entries) for e in self.entries[t].values()]}

    # -- changes -----------------------------------------------------------------------------
    def set(self, entry: AclEntry) -> None:
        for perm in PERMISSIONS:
            if getattr(entry, perm) not in (ALLOW, DENY, INHERIT):
                raise ValueError(f"{perm} must be allow, deny or inherit, not {getattr(entry, perm)!r}")
        entry.topic = normalise_topic(entry.topic)
        self.entries.setdefault(entry.topic, {})[entry.principal] = entry

    def remove(self, topic: str, principal: str) -> bool:
        table = self.entries.get(normalise_topic(topic))
        if table is None or principal not in table:
            return False
        del table[principal]
        if not table:
            del self.entries[normalise_topic(topic)]
        return True

    # -- decisions ---------------------------------------------------------------------------
    def groups_of(self, user: str | None) -> list[str]:
        found = [g for g, members in self.groups.items() if user is not None and user in members]
        return found + [PUBLIC_GROUP]

    def allowed(self, user: str | None, topic: str, permission: str) -> bool:
        """Does ``user`` (None = anonymous) hold ``permission`` on ``topic``? ``user`` equal to
        the broker itself is decided by the caller (the broker is never checked)."""
        if not self.enabled:
            return True
        if permission in (PUBLISH, SUBSCRIBE) and _broker_only(topic, permission):
            return False
        groups = self.groups_of(user)
        for node in _ancestors(topic):
            table = self.entries.get(node)
            if not table:
                continue
            own = table.get(user) if user is not None else None
            if own is not None and getattr(own, permission) != INHERIT:
                return getattr(own, permission) == ALLOW
            settings = [getattr(table[g], permission) for g in groups if g in table]
            settings = [s for s in settings if s != INHERIT]
            if settings:
                return ALLOW in settings
        return False

    def may_subscribe(self, user: str | None, topic_filter: str) -> bool:
        """Registration check. A filter with wildcards is accepted when it could deliver
        something: each delivery is then checked against the publication's topic (seed
        1893-1899: a ``#`` subscription receives only the topics the subscriber may see). It
        is refused when it cannot: ``$ISYS``, or the literal levels before its first wildcard
        name a topic the user may not subscribe to and no ACL row below that topic allows the
        user or one of its groups (``$SYS/STREAM/StreamX/#`` for a default-stream subscriber
        in the stream scenario, 2405-2486)."""
        if not self.enabled:
            return True
        levels = topic_filter.split(LEVEL_SEPARATOR)
        wild = [i for i, level in enumerate(levels) if level in (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD)]
        if not wild:
            return self.allowed(user, topic_filter, SUBSCRIBE)
        if topic_filter.startswith("$ISYS"):
            return False
        prefix = LEVEL_SEPARATOR.join(levels[:wild[0]])
        if not wild[0] or self.allowed(user, prefix, SUBSCRIBE):
            return True
        principals = {*self.groups_of(user), *([user] if user is not None else [])}
        below = prefix + LEVEL_SEPARATOR
        return any(topic.startswith(below) and any(
                       p in principals and entry.subscribe == ALLOW for p, entry in table.items())
                   for topic, table in self.entries.items())

    def explain(self, user: str | None, topic: str) -> dict[str, bool]:
        """The three effective permissions (for ``relaymq acl show --user``)."""
        return {perm: self.allowed(user, topic, perm) for perm in PERMISSIONS}


def _broker_only(topic: str, permission: str) -> bool:
    """Reserved topics (3147-3157): ``$SYS`` publish and ``$ISYS`` publish/subscribe belong
    to the broker, except the stream topics under ``$SYS/STREAM/``."""
    if topic.startswith("$ISYS"):
        return True
    return permission == PUBLISH and reserved_for_broker(topic)


def _ancestors(topic: str) -> list[str]:
    """``a/b/c`` -> ``a/b/c``, ``a/b``, ``a``, root."""
    out = []
    while topic:
        out.append(topic)
        cut = topic.rfind(LEVEL_SEPARATOR)
        topic = topic[:cut] if cut > 0 else ""
    out.append(ROOT)
    return out


class CombinedAcl:
    """The broker's ACL seen by MQTT clients: the simple ACL file (``relaymq.auth.acl``) AND
    the topic ACLs, so one set of topic permissions holds for every kind of client (item 38).
    Same three methods as ``relaymq.auth.acl.Acl``."""

    def __init__(self, simple: Any, topics: TopicAcl) -> None:
        self.simple = simple
        self.topics = topics

    def can_publish(self, username: str | None, client_id: str, topic: str) -> bool:
        if self.simple is not None and not self.simple.can_publish(username, client_id, topic):
            return False
        return self.topics.allowed(username, topic, PUBLISH)

    def can_receive(self, username: str | None, client_id: str, topic: str) -> bool:
        if self.simple is not None and not self.simple.can_receive(username, client_id, topic):
            return False
        return self.topics.allowed(username, topic, SUBSCRIBE)

    def can_subscribe(self, username: str | None, client_id: str, topic_filter: str) -> bool:
        if self.simple is not None and not self.simple.can_subscribe(username, client_id, topic_filter):
            return False
        return self.topics.may_subscribe(username, topic_filter)
