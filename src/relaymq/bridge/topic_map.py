"""Which bridge rule a topic falls under, and its name on the other side (Mosquitto's
``topic <pattern> <direction> <qos> <local prefix> <remote prefix>``): pure."""

from __future__ import annotations

from relaymq.bridge.settings import TopicRule
from relaymq.pubsub.topics import topic_matches

#: Topics whose mapping is remembered per direction (a bridge sees few distinct topics again and again).
CACHE_SIZE = 4096


class TopicMap:
    """The outbound (local -> remote) and inbound (remote -> local) halves of a bridge's rules."""

    __slots__ = ("_in_cache", "_out_cache", "inbound", "inbound_as_is", "outbound")

    def __init__(self, rules: tuple[TopicRule, ...], *, inbound_as_is: bool = False) -> None:
        #: Remote publications no rule covers keep their topic (the subscriptions were made at
        #: run time: a broker network's proxy subscriptions) instead of being dropped.
        self.inbound_as_is = inbound_as_is
        self.outbound = tuple(rule for rule in rules if rule.outbound)
        self.inbound = tuple(rule for rule in rules if rule.inbound)
        self._out_cache: dict[str, str | None] = {}
        self._in_cache: dict[str, str | None] = {}

    def to_remote(self, local_topic: str) -> str | None:
        """The remote topic for a local publication, None when no outbound rule covers it."""
        return _mapped(local_topic, self.outbound, self._out_cache, inbound=False)

    def to_local(self, remote_topic: str) -> str | None:
        """The local topic for a remote publication, None when no inbound rule covers it."""
        mapped = _mapped(remote_topic, self.inbound, self._in_cache, inbound=True)
        return remote_topic if mapped is None and self.inbound_as_is else mapped


def _mapped(topic: str, rules: tuple[TopicRule, ...], cache: dict[str, str | None], *, inbound: bool) -> str | None:
    if topic in cache:
        return cache[topic]
    result = None
    for rule in rules:
        here, there = (rule.remote_prefix, rule.local_prefix) if inbound else (rule.local_prefix, rule.remote_prefix)
        if topic.startswith(here) and topic_matches(rule.pattern, topic[len(here):]):
            result = there + topic[len(here):] or None  # never an empty topic name
            break
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    cache[topic] = result
    return result
