"""Rules: Python plugins the queue manager calls at the seed's points (everyplace.md item 32;
seed 004 l.4980-6225).

A rule vetoes by raising: the operation is refused with :class:`RuleVeto` (or the rule's own
QueueError) and nothing changes. Return values matter only where the seed gives them meaning:
``trigger_transmission`` and ``transmit`` say yes or no, ``activate_queues`` too; the return of
``message_expired`` is ignored (expiry cannot be prevented, l.306).

Rules are named ``"module:Class"`` in the configuration and built with no arguments; the
class's methods get the queue manager (or the queue definition) as their first argument.
Subclass :class:`QueueManagerRule` / :class:`QueueRule` and override only what you need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from relaymq.qmgr.errors import BadProperty, QueueError, RuleVeto

if TYPE_CHECKING:
    from relaymq.message.message import Message
    from relaymq.qmgr.definitions import QueueDefinition
    from relaymq.qmgr.states import Envelope


class QueueManagerRule:
    """Queue manager rules (seed l.5000-5500); the transmission rules are ``trigger_transmission``
    and ``transmit``."""

    def activate(self, qm: Any) -> None: ...
    def close(self, qm: Any) -> None: ...
    def queue_added(self, qm: Any, definition: QueueDefinition) -> None: ...
    def queue_removed(self, qm: Any, definition: QueueDefinition) -> None: ...
    def put(self, qm: Any, definition: QueueDefinition, message: Message, target_qmgr: str) -> None: ...
    def get(self, qm: Any, definition: QueueDefinition, envelope: Envelope) -> None: ...
    def delete(self, qm: Any, definition: QueueDefinition, uid: str) -> None: ...
    def undo(self, qm: Any, definition: QueueDefinition, confirm_id: int) -> None: ...

    def trigger_transmission(self, qm: Any, count: int, fields: dict[str, Any]) -> bool:
        """May pending messages (``count`` of them) be transmitted now?"""
        return True

    def transmit(self, qm: Any, definition: QueueDefinition) -> bool:
        """May this queue's messages be transmitted now? (Called per queue.)"""
        return True

    def activate_queues(self, qm: Any) -> bool:
        """Activate (and purge expired messages of) every queue at start?"""
        return True


class QueueRule:
    """Queue rules (seed l.5500-6225): called with the queue's definition."""

    def activate(self, definition: QueueDefinition) -> None: ...
    def close(self, definition: QueueDefinition) -> None: ...
    def put(self, definition: QueueDefinition, message: Message) -> None: ...
    def get(self, definition: QueueDefinition, envelope: Envelope) -> None: ...
    def delete(self, definition: QueueDefinition, uid: str) -> None: ...
    def browse(self, definition: QueueDefinition, envelopes: list[Envelope]) -> None: ...
    def undo(self, definition: QueueDefinition, confirm_id: int) -> None: ...
    def listener_added(self, definition: QueueDefinition) -> None: ...
    def listener_removed(self, definition: QueueDefinition) -> None: ...
    def message_expired(self, definition: QueueDefinition, envelope: Envelope) -> None: ...
    def attribute_changed(self, old: QueueDefinition, new: QueueDefinition) -> None: ...
    def duplicate_put(self, definition: QueueDefinition, uid: str) -> None: ...
    def message_transmitted(self, definition: QueueDefinition, uid: str) -> None: ...


def rule_class(spec: str, base: type) -> type:
    """The class ``"module:Class"`` names, imported; it must subclass ``base``. Raises
    BadProperty. ``serve --check`` asks this of every configured rule (issue 18)."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise BadProperty(f"rule must be 'module:Class', got {spec!r}")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise BadProperty(f"cannot load rule {spec!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise BadProperty(f"rule {spec!r} is not a {base.__name__}")
    return cls


def load_rule(spec: str, base: type) -> Any:
    """Instantiate ``"module:Class"``; it must subclass ``base``. Raises BadProperty."""
    return rule_class(spec, base)()


def call_veto(what: str, fn: Any, *args: Any) -> Any:
    """Call a rule hook; an exception from it becomes RuleVeto (a QueueError passes as is)."""
    try:
        return fn(*args)
    except QueueError:
        raise
    except Exception as exc:  # a rule vetoes by raising anything
        raise RuleVeto(f"{what} refused by rule: {exc}") from exc
