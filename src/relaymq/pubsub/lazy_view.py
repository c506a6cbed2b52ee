"""One publication as content filters see it, its view built on first use only
(:mod:`relaymq.pubsub.content_filter`, pubsub.md item 17).

Its own module, compiled with the broker's per-message path (``relaymq.native_build``): routing
makes one for every publication, which the publication taps share (issue 16).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relaymq.pubsub.model import Publication
    from relaymq.selector.compiled import Selector

#: What a filter may read of a publication without its message view: the view's MQMD says
#: persistent for QoS > 0 (engine.filter_view). The broker network's assured links filter every
#: publication on it (relaymq.network.assured), and the view costs hundreds of microseconds.
_PERSISTENCE = "Root.MQMD.Persistence"
_WITHOUT_VIEW = frozenset({_PERSISTENCE})


class LazyView:
    """One publication for filters: its ``Publication`` (the engine's form, which keeps each
    filter text's verdict: ``conversions.filter_selects``) built on first use only. The broker's
    routing and the pub/sub engine's tap share it (``Broker.tapped_view``), so a filter text
    that MQTT sessions and queue subscribers both use is evaluated once per publication."""

    __slots__ = ("message", "_publication")

    def __init__(self, message: Any) -> None:
        self.message = message  # a broker StoredMessage
        self._publication: Publication | None = None

    def publication(self) -> Publication:
        """The publication as the engine sees it (``conversions.publication_from_mqtt``), made once."""
        if self._publication is None:
            from relaymq.pubsub.conversions import publication_from_mqtt

            m = self.message
            self._publication = publication_from_mqtt(m.topic, m.payload, m.qos, m.properties, m.expiry_at)
        return self._publication

    def selects(self, selector: Selector) -> bool:
        pub = self._publication
        if pub is not None and pub._selected is not None:  # a verdict found for an earlier match
            known = pub._selected.get(selector.text)
            if known is not None:
                return known
        if selector.identifiers <= _WITHOUT_VIEW:
            persistence = 1 if self.message.qos > 0 else 0
            return selector.matches(lambda name: persistence if name == _PERSISTENCE else None)
        from relaymq.pubsub.conversions import filter_selects

        return filter_selects(self.publication(), selector)
