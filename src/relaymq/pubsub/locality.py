"""``Local`` publications and subscriptions across a broker network (pubsub.md item 18; seed
003 l.1709-1725, 2749-2761), pure.

A publication carries, as MQTT 5 user properties, what the network needs to know of it:
``relaymq-local`` when it was published with the ``Local`` option (it is never forwarded to a
neighbour: relaymq.network drops it), ``relaymq-path`` once it came from a neighbour (the
brokers it went through). A ``Local`` subscription takes only publications made at this
broker: none with a path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PATH_PROPERTY = "relaymq-path"
LOCAL_PROPERTY = "relaymq-local"


def user_properties(properties: dict[str, Any] | None) -> list[tuple[str, str]]:
    return list(properties.get("user_property", ())) if properties else []


def mark_local(properties: dict[str, Any] | None) -> dict[str, Any]:
    """The MQTT properties of a ``Local`` publication: marked, so no neighbour takes it."""
    marked = dict(properties or {})
    marked["user_property"] = [*user_properties(properties), (LOCAL_PROPERTY, "1")]
    return marked


def from_neighbour(properties: dict[str, Any] | None) -> bool:
    """Did this publication come from another broker?"""
    return any(key == PATH_PROPERTY for key, _ in user_properties(properties))


def not_for_local_subscriptions(actions: Iterable[Any]) -> list[Any]:
    """The deliveries of a publication from another broker, less those to Local subscriptions."""
    return [a for a in actions if "Local" not in getattr(getattr(a, "subscription", None), "flags", ())]
