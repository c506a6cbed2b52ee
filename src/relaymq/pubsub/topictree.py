"""The subscription tree: topic filter -> subscribers, matched against a published topic.

Why a tree: a publication must find every matching subscription without testing each filter
(10,000 subscriptions, thousands of publications a second). Filters are stored level by level;
matching walks the topic's levels once, following the literal child, the ``+`` child and the
``#`` child at each node, so the cost depends on the topic's depth and the wildcards present,
not on the number of subscriptions.

Why a cache: most traffic repeats a small set of topics. As in the NATS server's sublist
(design guide), results are cached per topic in a bounded map (``cache_size`` entries, swept
down to a quarter when full) and the whole cache is invalidated by a generation counter that
every insert/remove bumps, so a match never returns a result older than the last change.

Matching rules (README decision 2; seed 003 l.3031-3100, 3116-3120; ``topics.topic_matches`` is
the reference these must agree with):

- a filter level is a wildcard only when it is exactly ``+`` or exactly ``#``;
- ``#`` matches zero or more levels, so ``a/#`` matches ``a``; it may stand at any level (the
  psc rule); MQTT front ends only ever insert it last;
- a topic whose first level starts with ``$`` is not matched by a filter whose first level is
  ``+`` or ``#``;
- empty levels are real levels (``a//b``, ``/a``).

The tree does not validate: front ends call ``topics.validate_topic_filter`` first (decision 2).
It holds no I/O and no locks: one event loop owns it.

Observers: every change can be reported to ``observers`` (``fn(added, topic_filter, key,
value)``, after the change): the one place every kind of subscription passes, which the pub/sub
service uses for the subscription events of pubsub.md item 45. An observer must not change the
tree; with none, a change costs one truth test more.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import chain, islice
from typing import Generic, TypeVar

from .topics import LEVEL_SEPARATOR, MULTI_LEVEL_WILDCARD, SINGLE_LEVEL_WILDCARD, is_dollar_topic

V = TypeVar("V")

#: One match result: (subscriber key, value stored with that key for one filter).
Match = tuple[Hashable, V]


class _Node(Generic[V]):
    """One level of some filters. Wildcard children live in their own slots so that a topic
    level that happens to be the text ``+`` or ``#`` never reaches them by literal lookup."""

    __slots__ = ("literal", "plus", "hash", "entries", "_snapshot")

    def __init__(self) -> None:
        self.literal: dict[str, _Node[V]] = {}
        self.plus: _Node[V] | None = None
        self.hash: _Node[V] | None = None
        #: Subscriptions whose filter ends at this node: key -> value. Changed only through
        #: set_entry/pop_entry, which drop the snapshot.
        self.entries: dict[Hashable, V] = {}
        self._snapshot: tuple[Match[V], ...] | None = None

    def snapshot(self) -> tuple[Match[V], ...]:
        """``entries`` as a tuple, built once per change: matches share these (key, value)
        pairs instead of allocating new ones, so cached results cost little memory and GC."""
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = tuple(self.entries.items())
        return snapshot

    def set_entry(self, key: Hashable, value: V) -> bool:
        is_new = key not in self.entries
        self.entries[key] = value
        self._snapshot = None
        return is_new

    def pop_entry(self, key: Hashable) -> V:
        self._snapshot = None
        return self.entries.pop(key)

    def has_children(self) -> bool:
        return bool(self.literal) or self.plus is not None or self.hash is not None

    def is_empty(self) -> bool:
        return not self.entries and not self.has_children()


def _child(node: _Node[V], level: str) -> _Node[V] | None:
    if level == SINGLE_LEVEL_WILDCARD:
        return node.plus
    if level == MULTI_LEVEL_WILDCARD:
        return node.hash
    return node.literal.get(level)


def _add_child(node: _Node[V], level: str) -> _Node[V]:
    child: _Node[V] = _Node()
    if level == SINGLE_LEVEL_WILDCARD:
        node.plus = child
    elif level == MULTI_LEVEL_WILDCARD:
        node.hash = child
    else:
        node.literal[level] = child
    return child


def _drop_child(node: _Node[V], level: str) -> None:
    if level == SINGLE_LEVEL_WILDCARD:
        node.plus = None
    elif level == MULTI_LEVEL_WILDCARD:
        node.hash = None
    else:
        del node.literal[level]


class SubscriptionTree(Generic[V]):
    """Topic filters with (key, value) entries; ``match(topic)`` finds every entry whose filter
    matches.

    One entry per (filter, key): a subscriber (key) with two matching filters appears twice in
    a match, each with its own value (options, subscription identifier); collapsing them into
    one delivery (seed 003 l.2738-2740) is the caller's job because only it knows how.
    """

    def __init__(self, cache_size: int = 1024) -> None:
        """``cache_size`` bounds the match cache (0 disables it). When full, it is swept down
        to a quarter of that, keeping the most recently added results."""
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        self._root: _Node[V] = _Node()
        self._count = 0
        self._cache_size = cache_size
        self._cache_keep = cache_size // 4
        self._cache: dict[str, tuple[Match[V], ...]] = {}
        self._cache_generation = 0
        self._generation = 0
        self._hits = 0
        self._misses = 0
        #: Called after each insert (added=True) and successful remove (added=False).
        self.observers: list[Callable[[bool, str, Hashable, V], None]] = []

    # -- changes -----------------------------------------------------------------------------

    def insert(self, topic_filter: str, key: Hashable, value: V) -> bool:
        """Store ``value`` for (``topic_filter``, ``key``). True if the pair is new, False if it
        replaced the value already stored for it (a re-subscription with new options)."""
        node = self._root
        for level in topic_filter.split(LEVEL_SEPARATOR):
            child = _child(node, level)
            node = child if child is not None else _add_child(node, level)
        is_new = node.set_entry(key, value)
        if is_new:
            self._count += 1
        self._generation += 1
        if self.observers:
            for observer in self.observers:
                observer(True, topic_filter, key, value)
        return is_new

    def remove(self, topic_filter: str, key: Hashable) -> V | None:
        """Remove (``topic_filter``, ``key``); return its value, or None if it was not there.
        Nodes left with no entries and no children are pruned, so churn does not grow memory."""
        path: list[tuple[_Node[V], str]] = []
        node = self._root
        for level in topic_filter.split(LEVEL_SEPARATOR):
            child = _child(node, level)
            if child is None:
                return None
            path.append((node, level))
            node = child
        if key not in node.entries:
            return None
        value = node.pop_entry(key)
        self._count -= 1
        self._generation += 1
        while path and node.is_empty():
            parent, level = path.pop()
            _drop_child(parent, level)
            node = parent
        if self.observers:
            for observer in self.observers:
                observer(False, topic_filter, key, value)
        return value

    # -- matching ----------------------------------------------------------------------------

    def match(self, topic: str) -> tuple[Match[V], ...]:
        """Every (key, value) whose filter matches ``topic``. The result is a tuple (it may be
        the cached object itself, so it must be immutable); its order is not significant."""
        if self._cache_generation != self._generation:
            self._cache.clear()
            self._cache_generation = self._generation
        cached = self._cache.get(topic)
        if cached is not None:
            self._hits += 1
            return cached
        self._misses += 1
        nodes = self._matching_nodes(topic)
        if len(nodes) == 1:
            result = nodes[0].snapshot()
        else:
            result = tuple(chain.from_iterable(node.snapshot() for node in nodes))
        if self._cache_size:
            if len(self._cache) >= self._cache_size:
                self._sweep()
            self._cache[topic] = result
        return result

    def _sweep(self) -> None:
        """Drop the oldest results, keeping the newest quarter (NATS sweeps 1,024 to 256)."""
        drop = len(self._cache) - self._cache_keep
        for topic in list(islice(self._cache, drop)):
            del self._cache[topic]

    def _matching_nodes(self, topic: str) -> list[_Node[V]]:
        """The nodes, each once, where a filter matching ``topic`` ends.

        Iterative (an explicit stack), because a topic may have tens of thousands of levels.
        A state (node, i) means: some filter prefix ending at ``node`` matches topic levels
        ``[:i]``. Without a ``#`` in the middle of a filter, every node is reached at most once;
        a middle ``#`` may resume after any number of levels, which the ``resumed`` set keeps
        to one visit per (node, i) and which then requires de-duplicating the result.
        """
        levels = topic.split(LEVEL_SEPARATOR)
        end = len(levels)
        root = self._root
        # README decision 2: '$' topics are not matched by a first-level wildcard.
        skip_root_wildcards = is_dollar_topic(topic)
        found: list[_Node[V]] = []
        resumed: set[tuple[int, int]] | None = None
        stack: list[tuple[_Node[V], int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            while True:
                if not (skip_root_wildcards and node is root):
                    after_hash = node.hash
                    if after_hash is not None:
                        if after_hash.entries:
                            found.append(after_hash)  # '#' last: matches levels[i:], even none
                        if after_hash.has_children():
                            # '#' in the middle: the rest of the filter may start at any j >= i.
                            if resumed is None:
                                resumed = set()
                            for j in range(i, end + 1):
                                state = (id(after_hash), j)
                                if state not in resumed:
                                    resumed.add(state)
                                    stack.append((after_hash, j))
                    if node.plus is not None and i < end:
                        stack.append((node.plus, i + 1))
                if i == end:
                    if node.entries:
                        found.append(node)
                    break
                child = node.literal.get(levels[i])
                if child is None:
                    break
                node = child
                i += 1
        if resumed is not None:
            # A '#' node resumed at the topic's end is also found as a '#'-last match.
            found = list({id(node): node for node in found}.values())
        return found

    # -- introspection -----------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of (filter, key) entries."""
        return self._count

    def stats(self) -> dict[str, int]:
        """Counters for the broker's statistics: cache hits and misses since creation, the
        current generation (bumped by every change) and the number of cached topics."""
        return {
            "hits": self._hits,
            "misses": self._misses,
            "generation": self._generation,
            # Entries of an older generation are dropped lazily by the next match; they are
            # not results any more, so they are not counted.
            "cache_entries": len(self._cache) if self._cache_generation == self._generation else 0,
        }
