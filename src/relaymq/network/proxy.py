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
    the subscriptions (tree keys) behind each. Neighbours may come and go at run time."""

    neighbors: tuple[NeighborSettings, ...]
    wanted: dict[str, dict[str, set[Hashable]]] = field(default_factory=dict)
    #: Every subscription that counts, (filter, key): what a neighbour added later starts from.
    interests: set[tuple[str, Hashable]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.wanted = {n.name: {} for n in self.neighbors}
        self._by_client = {proxy_client_id(n.name): n for n in self.neighbors}
        #: Neighbours removed at run time: their proxy sessions here (until they expire) are
        #: nobody's interest any more.
        self.departed: set[str] = set()

    def neighbor_of(self, key: Hashable) -> NeighborSettings | None:
        """The neighbour whose proxy session holds the subscription ``key``, if any."""
        return self._by_client.get(key) if isinstance(key, str) else None

    def targets(self, key: Hashable) -> Iterable[NeighborSettings]:
        """The neighbours a subscription with tree key ``key`` is passed on to."""
        if isinstance(key, str) and key in self.departed:
            return
        source = self.neighbor_of(key)
        for neighbor in self.neighbors:
            if source is None or neighbor.name != source.name and not (source.in_collective and neighbor.in_collective):
                yield neighbor

    def change(self, added: bool, topic_filter: str, key: Hashable, local_only: bool) -> list[tuple[str, str, bool]]:
        """A subscription came (``added``) or went: the (neighbour, filter, subscribe?) changes
        of proxy subscriptions it makes."""
        if topic_filter.startswith("$") or local_only:
            return []
        if added:
            self.interests.add((topic_filter, key))
        else:
            self.interests.discard((topic_filter, key))
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

    def add(self, neighbor: NeighborSettings) -> list[str]:
        """A neighbour added at run time: the filters to subscribe to there."""
        self.neighbors = (*self.neighbors, neighbor)
        self._by_client[proxy_client_id(neighbor.name)] = neighbor
        self.departed.discard(proxy_client_id(neighbor.name))
        self.wanted[neighbor.name] = {}
        for topic_filter, key in self.interests:
            if any(n.name == neighbor.name for n in self.targets(key)):
                self.wanted[neighbor.name].setdefault(topic_filter, set()).add(key)
        return self.filters(neighbor.name)

    def remove(self, name: str) -> list[tuple[str, str, bool]]:
        """A neighbour removed at run time: its proxy subscriptions here, passed on to the
        others, are withdrawn there (the changes returned)."""
        client = proxy_client_id(name)
        changes = [change for topic_filter, key in sorted(self.interests, key=repr) if key == client
                   for change in self.change(False, topic_filter, key, False)]
        self.neighbors = tuple(n for n in self.neighbors if n.name != name)
        self.wanted.pop(name, None)
        self._by_client.pop(client, None)
        self.departed.add(client)
        return [c for c in changes if c[0] != name]

    def filters(self, neighbor: str) -> list[str]:
        return sorted(self.wanted[neighbor])
