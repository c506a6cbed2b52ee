"""Queue definitions: the queue types and their properties (everyplace.md items 7-9;
seed 004 l.531-650).

One frozen dataclass for every type, because the seed's property table is one table; what a
property means for each type, and which types accept it, is checked in :func:`make_definition`
so an impossible definition (a max depth on a remote synchronous queue, a store-and-forward
queue with no targets) is refused when it is defined, not when a message arrives.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from collections.abc import Callable
from functools import cached_property
from typing import Any

from relaymq.qmgr.errors import BadProperty
from relaymq.qmgr.names import check_name
from relaymq.qmgr.security_properties import PROPERTIES as SECURITY_PROPERTIES
from relaymq.qmgr.security_properties import security_values

LOCAL = "local"
REMOTE = "remote"
STORE_AND_FORWARD = "store_and_forward"
HOME_SERVER = "home_server"
DEAD_LETTER = "dead_letter"
ADMIN = "admin"

KINDS = (LOCAL, REMOTE, STORE_AND_FORWARD, HOME_SERVER, DEAD_LETTER, ADMIN)
#: Types whose messages applications get, browse, delete, wait for (item 10); remote sync
#: queues are reached through the channel, not held here.
HOLDING_KINDS = (LOCAL, DEAD_LETTER, ADMIN)
#: Of those, the ones applications get from: the admin queue's messages are processed by the
#: queue manager itself (item 8; relaymq.qmgr.admin).
APPLICATION_KINDS = (LOCAL, DEAD_LETTER)
SYNC, ASYNC = "sync", "async"
UNLIMITED = -1
DEFAULT_PRIORITY = 4  # seed 004 l.204, 245

SYSTEM_DEFAULT_LOCAL_QUEUE = "SYSTEM.DEFAULT.LOCAL.QUEUE"
SYSTEM_DEAD_LETTER_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"
SYSTEM_ADMIN_QUEUE = "SYSTEM.ADMIN.QUEUE"
SYSTEM_BROKER_CONTROL_QUEUE = "SYSTEM.BROKER.CONTROL.QUEUE"
#: The system queues every queue manager has, and their types.
SYSTEM_QUEUES = {
    SYSTEM_DEFAULT_LOCAL_QUEUE: LOCAL,
    SYSTEM_DEAD_LETTER_QUEUE: DEAD_LETTER,
    SYSTEM_ADMIN_QUEUE: ADMIN,
    SYSTEM_BROKER_CONTROL_QUEUE: LOCAL,
}

#: Properties each type accepts beyond the common ones (description, active, aliases, rule).
_TYPE_PROPERTIES: dict[str, frozenset[str]] = {
    LOCAL: frozenset({"max_depth", "max_message_size", "expiry", "default_priority"}),
    DEAD_LETTER: frozenset({"max_depth", "max_message_size", "expiry", "default_priority"}),
    ADMIN: frozenset({"max_depth", "max_message_size", "expiry", "default_priority"}),
    REMOTE: frozenset({"queue_manager", "mode", "max_depth", "max_message_size", "expiry", "default_priority"}),
    STORE_AND_FORWARD: frozenset({"target_queue_managers", "push", "max_depth", "max_message_size", "expiry",
                                  "default_priority"}),
    HOME_SERVER: frozenset({"queue_manager", "poll_interval"}),
}
#: The security properties (relaymq.qmgr.security_properties: authenticator, cryptor, compressor)
#: apply to every type.
_COMMON = frozenset({"description", "active", "aliases", "rule", *SECURITY_PROPERTIES})
PROPERTY_NAMES = frozenset().union(_COMMON, *_TYPE_PROPERTIES.values())


@dataclass(frozen=True)
class QueueDefinition:
    """A queue as defined on one queue manager.

    ``owner`` is the queue manager the real queue lives on: this one for local, dead-letter
    and admin queues; the remote one for a remote queue; for a home-server queue the server
    whose store queue (named ``name``) it pulls from. Store-and-forward queues are owned here
    and hold messages for ``target_queue_managers``.
    """

    name: str
    kind: str = LOCAL
    owner: str = ""
    description: str = ""
    active: bool = True
    max_depth: int = UNLIMITED
    max_message_size: int = UNLIMITED
    expiry: int = 0  # ms a message may stay; 0 = never expires (item 5)
    default_priority: int = DEFAULT_PRIORITY
    aliases: tuple[str, ...] = ()
    mode: str = SYNC
    target_queue_managers: tuple[str, ...] = ()
    push: bool = True
    poll_interval: int = 0  # ms between home-server pulls; 0 = only on trigger
    rule: str = ""  # "module:Class" of a QueueRule
    authenticator: str = ""  # item 7 and relaymq.qmgr.queue_security: "" or "channel"
    cryptor: str = ""  # the name of a key of [qmgr] key_file (AES-GCM), or ""
    compressor: str = ""  # "" or "zlib"
    creation_date: int = field(default=0)  # epoch ms

    @property
    def holds_messages(self) -> bool:
        """Does this queue keep messages on this queue manager (everything but sync remote
        and home-server queues)?"""
        if self.kind == REMOTE:
            return self.mode == ASYNC
        return self.kind != HOME_SERVER

    @cached_property
    def transmits(self) -> bool:
        """Are its messages waiting to go to another queue manager (async remote, S&F)? (Asked
        of every put's queue: found once.)"""
        return (self.kind == REMOTE and self.mode == ASYNC) or self.kind == STORE_AND_FORWARD

    @cached_property
    def sealed_at_rest(self) -> bool:
        """Are its messages kept sealed (encrypted or compressed, relaymq.qmgr.queue_security)?
        (Asked of every put's queue: found once.)"""
        return bool(self.cryptor or self.compressor)

    @cached_property
    def key(self) -> tuple[str, str]:
        """(owner, name): where the queue manager holds it; made once (every put looks it up)."""
        return (self.owner, self.name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["aliases"] = list(self.aliases)
        data["target_queue_managers"] = list(self.target_queue_managers)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueueDefinition:
        values = dict(data)
        values["aliases"] = tuple(values.get("aliases", ()))
        values["target_queue_managers"] = tuple(values.get("target_queue_managers", ()))
        return cls(**values)

    def properties(self) -> dict[str, Any]:
        """The keyword arguments of ``define_queue`` that recreate this definition."""
        allowed = _COMMON | _TYPE_PROPERTIES[self.kind]
        props = {k: v for k, v in self.to_dict().items() if k in allowed}
        if self.kind in (REMOTE, HOME_SERVER):
            props["queue_manager"] = self.owner
        if self.kind == REMOTE and self.mode == SYNC:
            for key in _HOLDING_PROPERTIES:
                props.pop(key, None)
        return props

    def altered(self, **changes: Any) -> QueueDefinition:
        """A copy with ``changes`` applied, checked by the same rules as a new definition."""
        props = self.properties()
        props.update(changes)
        if self.kind == REMOTE and props.get("mode") == SYNC:
            for key in _HOLDING_PROPERTIES:
                if key not in changes:
                    props.pop(key, None)
        local = self.owner if self.kind not in (REMOTE, HOME_SERVER) else ""
        return replace(make_definition(self.name, self.kind, local, **props), creation_date=self.creation_date)


def _int(name: str, value: Any, low: int, high: int | None = None, allow_unlimited: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadProperty(f"{name} must be an integer, got {value!r}")
    if allow_unlimited and value == UNLIMITED:
        return value
    if value < low or (high is not None and value > high):
        span = f"{low}..{high}" if high is not None else f">= {low}"
        raise BadProperty(f"{name} must be {'-1 (unlimited) or ' if allow_unlimited else ''}{span}, got {value}")
    return value


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise BadProperty(f"{name} must be a string")
    return value


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadProperty(f"{name} must be true or false")
    return value


def _aliases(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise BadProperty("aliases must be a list of names")
    return tuple(check_name(a, "alias") for a in value)


def _rule(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise BadProperty("rule must be 'module:Class'")
    return value


#: How each property is checked, in the order they are checked (the type-specific
#: queue_manager, mode, target_queue_managers and push follow, in :func:`_type_values`).
_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "description": _text,
    "active": _flag,
    "max_depth": lambda name, value: _int(name, value, 0, None, True),
    "max_message_size": lambda name, value: _int(name, value, 0, None, True),
    "expiry": lambda name, value: _int(name, value, 0),
    "default_priority": lambda name, value: _int(name, value, 0, 9),
    "poll_interval": lambda name, value: _int(name, value, 0),
    "aliases": _aliases,
    "rule": _rule,
}
#: Properties a synchronous remote queue cannot have: it holds no messages.
_HOLDING_PROPERTIES = ("max_depth", "max_message_size", "expiry")


def make_definition(name: str, kind: str, local_qmgr: str, **props: Any) -> QueueDefinition:
    """Check ``props`` against the type and build the definition (raises BadName/BadProperty)."""
    check_name(name)
    if kind not in KINDS:
        raise BadProperty(f"queue type must be one of {', '.join(KINDS)}, got {kind!r}")
    allowed = _COMMON | _TYPE_PROPERTIES[kind]
    for key in props:
        if key not in allowed:
            raise BadProperty(f"property {key!r} does not apply to a {kind} queue")
    values: dict[str, Any] = {"name": name, "kind": kind, "owner": local_qmgr,
                              "creation_date": int(time.time() * 1000)}
    values.update((key, check(key, props[key])) for key, check in _CHECKS.items() if key in props)
    values.update(security_values(props))
    values.update(_type_values(kind, local_qmgr, props))
    return QueueDefinition(**values)


def _type_values(kind: str, local_qmgr: str, props: dict[str, Any]) -> dict[str, Any]:
    """The values only some types have: the owner of a remote or home-server queue, a remote
    queue's mode, a store-and-forward queue's targets and push."""
    values: dict[str, Any] = {}
    if kind in (REMOTE, HOME_SERVER):
        owner = props.get("queue_manager")
        if owner is None:
            raise BadProperty(f"a {kind} queue needs queue_manager (the queue manager that owns the real queue)")
        values["owner"] = check_name(owner, "queue manager")
        if kind == REMOTE and owner == local_qmgr:
            raise BadProperty("a remote queue's queue_manager must not be this queue manager")
    if kind == REMOTE:
        mode = props.get("mode", SYNC)
        if mode not in (SYNC, ASYNC):
            raise BadProperty(f"mode must be 'sync' or 'async', got {mode!r}")
        values["mode"] = mode
        if mode == SYNC and any(k in props for k in _HOLDING_PROPERTIES):
            raise BadProperty("a synchronous remote queue holds no messages: max_depth, max_message_size"
                              " and expiry do not apply")
    if kind == STORE_AND_FORWARD:
        targets = props.get("target_queue_managers")
        if isinstance(targets, str) or not isinstance(targets, (list, tuple)) or not targets:
            raise BadProperty("a store_and_forward queue needs target_queue_managers (a non-empty list)")
        values["target_queue_managers"] = tuple(check_name(t, "queue manager") for t in targets)
        if "push" in props:
            values["push"] = _flag("push", props["push"])
    return values
