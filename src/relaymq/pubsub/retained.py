"""Retained publications by topic: one value per topic, found by a topic filter.

Why a tree: a new subscription must receive every matching retained publication at once
(seed 003 l.2505-2517; MQTT: one retained message per matching topic after SUBACK). Walking
the stored topics along the filter's levels touches only the branches the filter can match:
a literal filter is a chain of dictionary look-ups, ``+`` fans out one level, and only ``#``
visits a whole subtree.

One value per topic; a new one replaces it (2519-2527). The seed keeps retained publications
per (topic, subscription point) (1747-1749): the caller keeps one ``RetainedTree`` per
subscription point. Storage, expiry and persistence (2618-2622, 7462-7467) belong to the
caller too; this is the in-memory index.

Matching follows the same rules as the subscription tree (README decision 2, seed 003
l.3031-3100): wildcards only as whole levels, ``#`` for zero or more levels at any level,
no ``$`` topic for a filter starting with a wildcard, empty levels are real levels.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSet
from typing import Generic, TypeVar

from .topics import LEVEL_SEPARATOR, MULTI_LEVEL_WILDCARD, SINGLE_LEVEL_WILDCARD, is_dollar_topic

V = TypeVar("V")

_ABSENT = object()  # "no retained value here", distinct from a stored None


class _Node:
    """One topic level. ``topic`` is kept with the value so a match need not rebuild it."""

    __slots__ = ("children", "value", "topic")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.value: object = _ABSENT
        self.topic: str = ""


class RetainedTree(Generic[V]):
    """Topic -> retained value, with lookup by topic filter.

    ``match`` is a lazy iterator; it takes a snapshot of each node's children as it goes, so
    the caller may ``set``/``delete`` while iterating (e.g. to drop an expired publication it
    has just been given). A topic set during the iteration may or may not be yielded; a topic
    deleted before the iteration reaches it is not.
    """

    def __init__(self) -> None:
        self._root = _Node()
        self._count = 0

    def set(self, topic: str, value: V) -> bool:
        """Retain ``value`` on ``topic``, replacing any earlier one. True if the topic had none."""
        node = self._root
        for level in topic.split(LEVEL_SEPARATOR):
            child = node.children.get(level)
            if child is None:
                child = node.children[level] = _Node()
            node = child
        is_new = node.value is _ABSENT
        if is_new:
            self._count += 1
        node.value = value
        node.topic = topic
        return is_new

    def get(self, topic: str) -> V | None:
        """The value retained on exactly ``topic`` (no wildcards), or None."""
        node = self._find(topic)
        if node is None or node.value is _ABSENT:
            return None
        return node.value  # type: ignore[return-value]

    def delete(self, topic: str) -> bool:
        """Forget the value retained on ``topic``; True if there was one. Nodes left with no
        value and no children are pruned, so churn does not grow memory."""
        path: list[tuple[_Node, str]] = []
        node = self._root
        for level in topic.split(LEVEL_SEPARATOR):
            child = node.children.get(level)
            if child is None:
                return False
            path.append((node, level))
            node = child
        if node.value is _ABSENT:
            return False
        node.value = _ABSENT
        node.topic = ""
        self._count -= 1
        while path and node.value is _ABSENT and not node.children:
            parent, level = path.pop()
            del parent.children[level]
            node = parent
        return True

    def match(self, topic_filter: str) -> Iterator[tuple[str, V]]:
        """Yield (topic, value) for every retained topic that ``topic_filter`` matches, each
        once, in no particular order.

        Iterative (explicit stacks) because topics may be very deep. A state (node, i) means:
        the topic levels down to ``node`` match the filter's levels ``[:i]``. ``#`` as the last
        level yields ``node``'s whole subtree, ``node`` included (zero levels). A ``#`` in the
        middle may hand over to the next filter level at ``node`` or any descendant; ``resumed``
        keeps that to one visit per (node, level) and ``yielded`` to one yield per topic.
        """
        levels = topic_filter.split(LEVEL_SEPARATOR)
        end = len(levels)
        # README decision 2: a first-level wildcard does not match '$' topics.
        skip_dollar = levels[0] in (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD)
        # Only a '#' before the last level can reach one node along two paths.
        middle_hash = MULTI_LEVEL_WILDCARD in levels[:-1]
        resumed: set[tuple[int, int]] | None = set() if middle_hash else None
        yielded: set[int] | None = set() if middle_hash else None
        stack: list[tuple[_Node, int]] = [(self._root, 0)]
        while stack:
            node, i = stack.pop()
            if i == end:
                spanned: Iterable[_Node] = (node,)
            elif levels[i] == MULTI_LEVEL_WILDCARD and i == end - 1:
                spanned = self._subtree(node, skip_dollar)
            else:
                stack.extend(self._next_states(node, i, levels[i], skip_dollar, resumed))
                continue
            for found in spanned:
                if found.value is not _ABSENT and (yielded is None or id(found) not in yielded):
                    if yielded is not None:
                        yielded.add(id(found))
                    yield found.topic, found.value  # type: ignore[misc]

    def _next_states(self, node: _Node, i: int, level: str, skip_dollar: bool,
                     resumed: MutableSet[tuple[int, int]] | None) -> list[tuple[_Node, int]]:
        """The states after matching filter level ``i`` (``level``) at ``node``."""
        root = self._root
        if level == MULTI_LEVEL_WILDCARD:  # a '#' in the middle: resume at any node it spans
            assert resumed is not None
            states = []
            for found in self._subtree(node, skip_dollar):
                state = (id(found), i + 1)
                if state not in resumed:
                    resumed.add(state)
                    states.append((found, i + 1))
            return states
        if level == SINGLE_LEVEL_WILDCARD:
            return [(child, i + 1) for name, child in tuple(node.children.items())
                    if not (skip_dollar and node is root and is_dollar_topic(name))]
        child = node.children.get(level)
        if child is not None and not (skip_dollar and node is root and is_dollar_topic(level)):
            return [(child, i + 1)]
        return []

    def _subtree(self, top: _Node, skip_dollar: bool) -> Iterator[_Node]:
        """``top`` and all its descendants (what ``#`` at ``top`` spans), leaving out the
        ``$`` first levels when ``top`` is the root and ``skip_dollar`` is set."""
        root = self._root
        stack = [top]
        while stack:
            node = stack.pop()
            yield node
            for name, child in tuple(node.children.items()):
                if not (skip_dollar and node is root and is_dollar_topic(name)):
                    stack.append(child)

    def _find(self, topic: str) -> _Node | None:
        node = self._root
        for level in topic.split(LEVEL_SEPARATOR):
            child = node.children.get(level)
            if child is None:
                return None
            node = child
        return node

    def __len__(self) -> int:
        """Number of retained topics."""
        return self._count

    def __contains__(self, topic: object) -> bool:
        """True if a value is retained on exactly ``topic``."""
        if not isinstance(topic, str):
            return False
        node = self._find(topic)
        return node is not None and node.value is not _ABSENT
