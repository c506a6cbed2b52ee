"""Shared subscriptions ``$share/<group>/<filter>`` (MQTT 5 4.8.2): one member of the group
receives each message, in turn, preferring connected members."""

from __future__ import annotations

from relaymq.store.base import SubscriptionRecord


class SharedGroup:
    __slots__ = ("name", "topic_filter", "members", "_turn")

    def __init__(self, name: str, topic_filter: str) -> None:
        self.name = name
        self.topic_filter = topic_filter
        self.members: dict[str, SubscriptionRecord] = {}  # client id -> subscription
        self._turn = 0

    def choose(self, sessions: dict) -> tuple[str, SubscriptionRecord] | None:
        """The next member in turn, a connected one if any is connected; one whose queue is
        full (blocking, backpressure.py) only when every connected member's is."""
        ids = list(self.members)
        if not ids:
            return None
        n = len(ids)
        for i in range(n):
            cid = ids[(self._turn + i) % n]
            s = sessions.get(cid)
            if s is not None and s.connection is not None and s.blocking is None:
                self._turn = (self._turn + i + 1) % n
                return cid, self.members[cid]
        for i in range(n):
            cid = ids[(self._turn + i) % n]
            s = sessions.get(cid)
            if s is not None and s.connection is not None:
                self._turn = (self._turn + i + 1) % n
                return cid, self.members[cid]
        cid = ids[self._turn % n]
        self._turn = (self._turn + 1) % n
        return cid, self.members[cid]
