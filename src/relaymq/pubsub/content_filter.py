"""Content filters on MQTT subscriptions (pubsub.md item 17; issue 4 "Content filters").

Why: the seed's subscriptions select on content (``Body.Name LIKE 'Smit%'``, 1856-1905) as well
as topic. An MQTT 5 client attaches a filter to a subscription with the SUBSCRIBE user property
``relaymq-filter`` (a relaymq extension, docs/pubsub.md); the publication's user properties are
its ``usr`` folder and its payload its body (JSON or XML), the same view a ``psc`` subscriber's
filter gets (``engine.filter_view``).

Speed: a subscription without a filter stays a plain ``SubscriptionRecord`` in the tree; only a
``FilteredSubscription`` costs anything, and the message view is built once per publication,
lazily, the first time a matching subscription has a filter (``LazyView``, in
:mod:`relaymq.pubsub.lazy_view`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from relaymq.store.base import SubscriptionRecord

if TYPE_CHECKING:
    from relaymq.selector.compiled import Selector

#: The SUBSCRIBE user property that carries a content filter.
FILTER_PROPERTY = "relaymq-filter"


@dataclass(slots=True)
class FilteredSubscription(SubscriptionRecord):
    """An MQTT subscription with a compiled content filter (compiled once, README decision 3)."""

    filter_text: str = ""
    selector: Selector | None = None


def filter_from_properties(properties: dict[str, Any]) -> str | None:
    """The ``relaymq-filter`` user property of a SUBSCRIBE, if any (the last one wins)."""
    found = None
    for name, value in properties.get("user_property", ()):
        if name == FILTER_PROPERTY:
            found = value
    return found.strip() if found and found.strip() else None


def with_filter(record: SubscriptionRecord, filter_text: str | None) -> SubscriptionRecord:
    """``record`` as it goes into the tree: itself, or a FilteredSubscription. Raises
    ``relaymq.selector.SelectorError`` for an invalid filter."""
    if not filter_text:
        return record
    from relaymq.selector.compiled import compile_selector

    selector = compile_selector(filter_text)
    base = {f.name: getattr(record, f.name) for f in fields(SubscriptionRecord)}
    if "content_filter" in base:  # a store that persists the filter keeps its text in the record
        base["content_filter"] = filter_text
    return FilteredSubscription(**base, filter_text=filter_text, selector=selector)
