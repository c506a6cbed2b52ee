"""Proxy subscriptions (seed 003 l.1409-1449; pubsub.md item 41), pure.

A broker subscribes at each neighbour to what its own subscribers want: one proxy subscription
per distinct topic filter, whatever the number of subscribers behind it, withdrawn when the
last of them leaves. Content filters are not part of the tree's key, so they are stripped.
Local subscriptions (item 18) and ``$`` topics are not proxied.

A neighbour's proxy subscriptions here are interests too, passed on to the other neighbours
(that is how a publication finds its way across joined collectives and hierarchies), except
within a collective: a member subscribes at every other member itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from relaymq.network.settings import NeighborSettings

#: The client id prefix of a neighbour's proxy session here: relaymq-neighbour-<its name>.
PROXY_CLIENT_PREFIX = "relaymq-neighbour-"


def proxy_client_id(broker: str) -> str:
    return PROXY_CLIENT_PREFIX + broker


@dataclass
class ProxyTable:
    """Per neighbour, the topic filters this broker must hold a subscription to there, with
    the subscriptions (tree keys) behind each."""

    neighbors: tuple[NeighborSettings, ...]
    wanted: dict[str, dict[str, set[Hashable]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.wanted = {n.name: {} for n in self.neighbors}
        self._by_client = {proxy_client_id(n.name): n for n in self.neighbors}

    def neighbor_of(self, key: Hashable) -> NeighborSettings | None:
        """The neighbour whose proxy session holds the subscription ``key``, if any."""
        return self._by_client.get(key) if isinstance(key, str) else None

    def targets(self, key: Hashable) -> Iterable[NeighborSettings]:
        """The neighbours a subscription with tree key ``key`` is passed on to."""
        source = self.neighbor_of(key)
        for neighbor in self.neighbors:
            if source is None or neighbor.name != source.name and not (source.in_collective and neighbor.in_collective):
                yield neighbor

    def change(self, added: bool, topic_filter: str, key: Hashable, local_only: bool) -> list[tuple[str, str, bool]]:
        """A subscription came (``added``) or went: the (neighbour, filter, subscribe?) changes
        of proxy subscriptions it makes."""
        if topic_filter.startswith("$") or local_only:
            return []
        changes = []
        for neighbor in self.targets(key):
            keys = self.wanted[neighbor.name].setdefault(topic_filter, set())
            before = bool(keys)
            if added:
                keys.add(key)
            else:
                keys.discard(key)
            if not keys:
                del self.wanted[neighbor.name][topic_filter]
            if before != bool(keys):
                changes.append((neighbor.name, topic_filter, bool(keys)))
        return changes

    def filters(self, neighbor: str) -> list[str]:
        return sorted(self.wanted[neighbor])
