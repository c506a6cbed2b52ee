"""Which topics are multicast, on which group, and what a multicast subscription gets.

Seed 003 l.1040-1084: the topic root is Enabled or Disabled (default Disabled), every other
topic Inherit (the default), Enabled or Disabled, with a group address ("auto": one from the
broker's address range) and a quality of service (Reliable, the default, or Unreliable).

A *region* is the topics one configured node decides for: the node's subtree less the subtrees
of configured nodes below it that decide for themselves (Enabled or Disabled; an Inherit node
decides nothing). Each enabled region is one multicast *stream*: its own sequence numbers, on
its group. Overlapping-topic behaviour (l.673-721) for a subscription whose filter reaches both
enabled and disabled regions: Accept multicasts the enabled ones, Reject refuses, Revert serves
the whole subscription unicast. A filter that reaches only disabled topics has nothing to
multicast: Revert serves it unicast, Accept and Reject refuse it (docs/pubsub.md, decisions).
No I/O.
"""

from __future__ import annotations

import ipaddress
import zlib
from dataclasses import dataclass

from relaymq.multicast.settings import AUTO, MulticastSettings

MULTICAST = "multicast"
UNICAST = "unicast"
REJECTED = "rejected"


@dataclass(frozen=True)
class Region:
    """A configured node that decides for its topics (the root's name is "")."""

    topic: str
    enabled: bool
    group: str
    reliable: bool
    stream: int


@dataclass(frozen=True)
class Decision:
    """The answer to a multicast subscription: ``mode`` MULTICAST (``regions``: the enabled
    streams to receive), UNICAST (Revert) or REJECTED (``reason``)."""

    mode: str
    regions: tuple[Region, ...] = ()
    reason: str = ""


def _levels(topic: str) -> list[str]:
    return topic.split("/") if topic else []


def _under(topic: str, node: str) -> bool:
    """``topic`` is ``node`` or below it ("" is the root, above everything)."""
    return node in ("", topic) or topic.startswith(node + "/")


def _filter_reaches(topic_filter: str, node: str) -> bool:
    """Some topic matching ``topic_filter`` is ``node`` or below it."""
    fl = topic_filter.split("/")
    for index, level in enumerate(_levels(node)):
        if index >= len(fl):
            return False
        if fl[index] == "#":
            return True
        if fl[index] not in ("+", level):
            return False
    return True


def _filter_within(topic_filter: str, node: str) -> bool:
    """Every topic matching ``topic_filter`` is ``node`` or below it."""
    fl = topic_filter.split("/")
    nodes = _levels(node)
    return len(fl) >= len(nodes) and all(fl[i] == level for i, level in enumerate(nodes))


class TopicPlan:
    """The per-topic multicast configuration, resolved once at start-up."""

    def __init__(self, settings: MulticastSettings) -> None:
        self.behavior = settings.overlapping_topic_behavior
        low = int(ipaddress.IPv4Address(settings.address_range_min))
        high = int(ipaddress.IPv4Address(settings.address_range_max))
        explicit = [(t.topic, t.enabled, t.group, t.quality) for t in settings.topics if t.enabled != "Inherit"]
        nodes = [("", settings.root, settings.root_group, settings.root_quality), *explicit]
        taken = {group for _, _, group, _ in nodes if group != AUTO}
        regions: list[Region] = []
        for stream, (topic, enabled, group, quality) in enumerate(nodes, start=1):
            if group == AUTO:
                group = _allocate(topic, low, high, taken)
                taken.add(group)
            regions.append(Region(topic, enabled == "Enabled", group, quality == "Reliable", stream))
        # deepest first: the first region a topic is under is the one deciding for it
        self.regions = sorted(regions, key=lambda r: -len(_levels(r.topic)) if r.topic else 1)

    def region_of(self, topic: str) -> Region:
        """The region deciding for ``topic``."""
        return next(region for region in self.regions if _under(topic, region.topic))

    def stream_for(self, topic: str) -> Region | None:
        """The enabled region a publication on ``topic`` is multicast in, or None."""
        if topic.startswith("$"):
            return None
        region = self.region_of(topic)
        return region if region.enabled else None

    def enabled_regions(self) -> list[Region]:
        return [region for region in self.regions if region.enabled]

    def decide(self, topic_filter: str) -> Decision:
        """What a multicast subscription to ``topic_filter`` gets (l.673-721)."""
        reached = [region for region in self.regions if self._reaches(topic_filter, region)]
        enabled = tuple(sorted((r for r in reached if r.enabled), key=lambda r: r.stream))
        disabled = [r for r in reached if not r.enabled]
        if not disabled:
            return Decision(MULTICAST, enabled)
        if self.behavior == "Revert":
            return Decision(UNICAST, reason=f"{topic_filter!r} reaches topics disabled for multicast"
                                            f" ({disabled[0].topic or 'the root'}): served unicast")
        if enabled and self.behavior == "Accept":
            return Decision(MULTICAST, enabled)
        why = "reaches topics disabled for multicast" if enabled else "is not enabled for multicast"
        return Decision(REJECTED, reason=f"{topic_filter!r} {why} ({disabled[0].topic or 'the root'})")

    def _reaches(self, topic_filter: str, region: Region) -> bool:
        """Some topic matching the filter is decided by ``region``: it reaches the region's
        node, and not only topics that deeper regions decide for."""
        if not _filter_reaches(topic_filter, region.topic):
            return False
        deeper = [r for r in self.regions if r is not region and r.topic != region.topic
                  and _under(r.topic, region.topic)]
        return not any(_filter_within(topic_filter, r.topic) for r in deeper)


def _allocate(topic: str, low: int, high: int, taken: set[str]) -> str:
    """A group address for ``topic`` from low..high: the same one at every start (a hash of
    the name), the next free one on a collision; shared when the range is used up."""
    size = high - low + 1
    start = zlib.crc32(topic.encode()) % size
    for step in range(min(size, 65536)):
        candidate = str(ipaddress.IPv4Address(low + (start + step) % size))
        if candidate not in taken:
            return candidate
    return str(ipaddress.IPv4Address(low + start))
