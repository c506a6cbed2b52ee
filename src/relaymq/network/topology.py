"""The network's shape as the brokers announce it, and the cycles in it (item 40; seed 003
l.196-204: connections that would make messages cycle are refused), pure.

Each broker publishes its own neighbour list, retained, on ``relaymq/network/topology/<name>``
(JSON ``{"broker": name, "neighbors": {"B": "collective", ...}}``); every link subscribes to
that topic tree at its neighbour, so the announcements travel the network like any
publication and every broker learns every edge. Collectives are contracted to one node each;
what joins them (gateway, parent/child links) must then form a tree. A broker refuses its own
links that lie on a cycle: both ends of such a link see the same cycle and stop it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

TOPOLOGY_PREFIX = "relaymq/network/topology/"
TOPOLOGY_FILTER = TOPOLOGY_PREFIX + "#"


def announcement(broker: str, neighbors: dict[str, str]) -> tuple[str, bytes]:
    """The topic and payload of ``broker``'s neighbour list."""
    return TOPOLOGY_PREFIX + broker, json.dumps({"broker": broker, "neighbors": neighbors}, sort_keys=True).encode()


def parse_announcement(topic: str, payload: bytes) -> tuple[str, dict[str, str]] | None:
    """(broker, its neighbour list) from an announcement, None if it is not a valid one."""
    if not topic.startswith(TOPOLOGY_PREFIX):
        return None
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("broker") != topic[len(TOPOLOGY_PREFIX):]:
        return None
    neighbors = body.get("neighbors")
    if not isinstance(neighbors, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in neighbors.items()):
        return None
    return body["broker"], neighbors


@dataclass
class Topology:
    """Every broker's announced neighbour list."""

    lists: dict[str, dict[str, str]] = field(default_factory=dict)

    def learn(self, broker: str, neighbors: dict[str, str]) -> bool:
        """Record an announcement; True when it changed what is known."""
        if self.lists.get(broker) == neighbors:
            return False
        self.lists[broker] = dict(neighbors)
        return True

    def _collectives(self) -> dict[str, str]:
        """Broker -> a representative of its collective (itself when it is in none)."""
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for broker, neighbors in self.lists.items():
            find(broker)
            for other, relation in neighbors.items():
                find(other)
                if relation == "collective":
                    parent[find(broker)] = find(other)
        return {broker: find(broker) for broker in parent}

    def joins(self) -> set[frozenset[str]]:
        """The links between collectives (gateway, parent/child), each once, by broker pair."""
        return {frozenset((broker, other)) for broker, neighbors in self.lists.items()
                for other, relation in neighbors.items() if relation != "collective" and other != broker}

    def on_cycle(self, a: str, b: str) -> bool:
        """Is the link between brokers ``a`` and ``b`` (not within a collective) on a cycle: are
        their collectives joined another way too?"""
        group = self._collectives()
        start, goal = group.get(a, a), group.get(b, b)
        if start == goal:
            return True  # a second way between members of one collective
        edges: dict[str, set[str]] = {}
        for pair in self.joins():
            x, y = sorted(pair)
            gx, gy = group.get(x, x), group.get(y, y)
            if {x, y} == {a, b}:
                continue  # the link itself
            edges.setdefault(gx, set()).add(gy)
            edges.setdefault(gy, set()).add(gx)
        seen, todo = {start}, [start]
        while todo:
            node = todo.pop()
            for nxt in edges.get(node, ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False
