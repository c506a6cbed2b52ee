"""Which partitions a message goes to: every rule whose topic filters or queues match it, and
within a rule the partition chosen by a stable hash of the topic (or queue).

Why hash the topic: ordering matters per source (a unit's events must stay in order for a
state-change count), not across sources; a stable hash (CRC-32, not Python's salted ``hash``)
keeps a topic in the same partition across broker restarts, so the log stays ordered per topic.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from relaymq.pipeline.settings import ArchiveRule
from relaymq.pubsub.topics import topic_matches


#: How many topics' partitions a Router keeps (Router.for_topic).
TOPICS_KEPT = 100_000


def partition_index(source: str, partitions: int) -> int:
    """The partition index (0..partitions-1) for a topic or queue name."""
    return zlib.crc32(source.encode("utf-8")) % partitions


class Router:
    """Maps a topic or a queue to the partitions that archive it (rule order)."""

    def __init__(self, rules: Iterable[ArchiveRule]) -> None:
        self.rules = tuple(rules)
        self._queue_rules: dict[str, list[ArchiveRule]] = {}
        #: topic -> its partitions, as :meth:`for_topic` keeps them: a caller on the hot path (the
        #: archive tap) looks a topic up here first, with no call of a method.
        self.by_topic: dict[str, list[str]] = {}
        for rule in self.rules:
            for queue in rule.queues:
                self._queue_rules.setdefault(queue, []).append(rule)

    @property
    def queues(self) -> list[str]:
        """Every queue some rule archives."""
        return list(self._queue_rules)

    def for_topic(self, topic: str) -> list[str]:
        """Partitions archiving a publication on ``topic`` (none: not archived); the list is
        shared by every call for the topic: read it, do not change it. Kept per topic (the
        rules do not change): matching every rule's filters and hashing the topic cost more
        than the rest of archiving a publication. At most ``TOPICS_KEPT`` topics are kept;
        then the cache starts again empty."""
        found = self.by_topic.get(topic)
        if found is None:
            if len(self.by_topic) >= TOPICS_KEPT:
                self.by_topic.clear()
            found = self.by_topic[topic] = [f"{rule.name}-{partition_index(topic, rule.partitions)}"
                                             for rule in self.rules if any(topic_matches(f, topic) for f in rule.topics)]
        return found

    def for_queue(self, queue: str) -> list[str]:
        """Partitions archiving a message put to ``queue``."""
        return [f"{rule.name}-{partition_index(queue, rule.partitions)}" for rule in self._queue_rules.get(queue, ())]

    def rule_of(self, partition: str) -> ArchiveRule | None:
        """The rule a partition belongs to (for its retention)."""
        name, _, index = partition.rpartition("-")
        for rule in self.rules:
            if rule.name == name and index.isdigit() and int(index) < rule.partitions:
                return rule
        return None
