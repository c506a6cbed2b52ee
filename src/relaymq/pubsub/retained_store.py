"""Retained publications of every subscription point (pubsub.md items 21-25).

Why a part of its own: Publish (RetainPub), DeletePub, RegSub and ReqUpdate (the copies sent
to a new subscription), expiry and persistence all read or change the retained publications.
The default point's are the MQTT broker's own (``RetainedTree`` of its ``StoredMessage``s)
when the engine runs in the broker (``mqtt_bridge``): there they are changed by handing the
broker actions (``ClearRetained``), and what its store cannot keep of a psc publication is
kept here (``retained_psc``). Named points' are ``Publication``s kept here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from relaymq.pubsub.conversions import publication_from_stored
from relaymq.pubsub.model import DEFAULT_SUBPOINT, Action, ClearRetained, Publication
from relaymq.pubsub.retained import RetainedTree

#: What a first-level '#' leaves out (README decision 2): the '$' topics, walked apart.
_EVERY_TOPIC = ("#", "$SYS/#", "$ISYS/#")


class RetainedPublications:
    """One retained tree per subscription point, plus the psc details of the default point's."""

    def __init__(self, default_retained: RetainedTree[Any] | None, mqtt_bridge: bool) -> None:
        self.mqtt_bridge = mqtt_bridge
        self.trees: dict[str, RetainedTree[Any]] = {
            DEFAULT_SUBPOINT: default_retained if default_retained is not None else RetainedTree()}
        #: What the broker's store cannot keep of a psc publication retained at the default
        #: point (kept there as an MQTT message): topic -> its msg_id and psc attributes
        #: (PubTime, SeqNum, Priority, domain, Format, typed usr), so that a RegSub/ReqUpdate
        #: copy carries them (item 23). Stale once the topic's retained message changes.
        self.retained_psc: dict[str, dict[str, Any]] = {}
        self.changed = False

    def _brokers(self, sub_point: str) -> bool:
        """Whether the point's retained publications are the MQTT broker's."""
        return self.mqtt_bridge and sub_point == DEFAULT_SUBPOINT

    def retain(self, pub: Publication) -> None:
        """RetainPub at a point of this engine's own (item 21): replaces the topic's."""
        self.trees.setdefault(pub.sub_point, RetainedTree()).set(pub.topic, pub)
        self.changed = True

    def live(self, sub_point: str, topic_filter: str, now: float) -> list[Publication]:
        """The unexpired retained publications matching ``topic_filter`` at ``sub_point``;
        those past their expiry are dropped (it counts down while stored, item 22)."""
        tree = self.trees.get(sub_point)
        if tree is None:
            return []
        found: list[Publication] = []
        stale: list[str] = []
        for topic, value in list(tree.match(topic_filter)):
            pub = value if isinstance(value, Publication) else self.stored_publication(value, sub_point)
            if pub.expired(now):
                stale.append(topic)
            else:
                found.append(pub)
        if not self._brokers(sub_point):
            for topic in stale:
                tree.delete(topic)
                self.changed = True
        return found

    def note(self, topic: str, msg_id: int, pub: Publication) -> None:
        """The broker retained ``pub`` (a psc publication at the default point) as message
        ``msg_id``: keep what its store cannot (see ``retained_psc``)."""
        self.retained_psc[topic] = {
            "msg_id": msg_id, "pub_time": pub.pub_time, "seq_num": pub.seq_num, "priority": pub.priority,
            "domain": pub.domain, "body_format": pub.body_format, "untyped_usr": pub.untyped_usr,
        }
        self.changed = True

    def stored_publication(self, message: Any, sub_point: str) -> Publication:
        """A retained message of the broker as a Publication, with the psc attributes it was
        published with when it came from a psc Publish (and has not been replaced since)."""
        pub = publication_from_stored(message, sub_point)
        details = self.retained_psc.get(message.topic)
        if details is not None:
            if details["msg_id"] == message.msg_id:
                pub.pub_time, pub.seq_num, pub.priority = details["pub_time"], details["seq_num"], details["priority"]
                pub.domain, pub.body_format = details["domain"], details["body_format"]
                pub.untyped_usr, pub.from_mqtt = details["untyped_usr"], False
            else:
                del self.retained_psc[message.topic]  # an MQTT publication replaced it
                self.changed = True
        return pub

    def forget(self, current: Callable[[str], Any]) -> None:
        """Drop ``retained_psc`` entries whose topic no longer holds that message
        (``current(topic)`` is the broker's retained message there, or None)."""
        for topic, details in list(self.retained_psc.items()):
            message = current(topic)
            if message is None or message.msg_id != details["msg_id"]:
                del self.retained_psc[topic]
                self.changed = True

    def delete(self, topic_filters: Iterable[str], sub_point: str = DEFAULT_SUBPOINT) -> list[Action]:
        """Delete the retained publications matching each filter at one subscription point
        (DeletePub, item 25): the broker's through ``ClearRetained`` actions."""
        tree = self.trees.get(sub_point)
        if tree is None:
            return []
        actions: list[Action] = []
        for topic_filter in topic_filters:
            for topic, _value in list(tree.match(topic_filter)):
                if self._brokers(sub_point):
                    actions.append(ClearRetained(topic))
                    if self.retained_psc.pop(topic, None) is not None:
                        self.changed = True
                else:
                    tree.delete(topic)
                    self.changed = True
        return actions

    def _own(self) -> Iterable[tuple[str, RetainedTree[Any]]]:
        return [(point, tree) for point, tree in self.trees.items() if not self._brokers(point)]

    def expire(self, now: float) -> None:
        """Named-point retained publications past their expiry (item 22)."""
        for _point, tree in self._own():
            for topic, value in [found for f in _EVERY_TOPIC for found in tree.match(f)]:
                if isinstance(value, Publication) and value.expired(now):
                    tree.delete(topic)
                    self.changed = True

    def snapshot(self) -> dict[str, Any]:
        """Named points' publications and ``retained_psc``, to keep across a restart."""
        retained = {}
        for point, tree in self._own():
            found = [v for f in _EVERY_TOPIC for _t, v in tree.match(f)]
            retained[point] = [v.to_record() for v in found if isinstance(v, Publication)]
        return {"retained": retained, "retained_psc": self.retained_psc}

    def reset(self) -> None:
        for point, _tree in self._own():
            self.trees[point] = RetainedTree()
        self.retained_psc = {}

    def restore(self, data: dict[str, Any]) -> None:
        for point, records in data.get("retained", {}).items():
            tree = self.trees.setdefault(point, RetainedTree())
            for rec in records:
                tree.set(rec["topic"], Publication.from_record(rec))
        self.retained_psc.update(data.get("retained_psc", {}))
