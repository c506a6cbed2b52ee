"""Topic aliases from the broker to MQTT 5 clients, through a real client (issue 2: "topic
aliases both ways"; MQTT 5 3.3.2.3.4 and 3.1.2.11.8 Topic Alias Maximum).

Only paho here: libmosquitto 2.0 (mosquitto_sub 2.0.11) refuses a PUBLISH with an empty topic
name even when told to announce a Topic Alias Maximum (``-D connect topic-alias-maximum``),
so it cannot receive aliases; without ``-D`` it announces none and gets none.
"""

from __future__ import annotations

import pytest

from harness import BrokerProcess

from .clients import PahoClient, paho_client, unique

pytestmark = pytest.mark.interop


def test_paho_receives_aliases_up_to_its_maximum(shared_broker: BrokerProcess) -> None:
    """paho (MQTT 5, Topic Alias Maximum 2) gets the topic name and an alias first, then the
    alias alone with an empty topic name; a third topic comes in full. (paho hands aliases to
    the application unresolved, so the test keeps the map, as an application would.)"""
    base = unique("alias")
    topics = [f"{base}/a", f"{base}/a", f"{base}/b", f"{base}/c", f"{base}/a", f"{base}/b"]
    sub = PahoClient(shared_broker, "v5", properties={"TopicAliasMaximum": 2}).connect()
    pub = paho_client(shared_broker, "v5")
    try:
        assert sub.subscribe(f"{base}/#", 1) == [1]
        for topic in topics:
            pub.publish(topic, topic.encode(), 1)
        received = sub.inbox.wait_for(len(topics))
        assert [(m.topic != "", m.alias) for m in received] == [
            (True, 1), (False, 1), (True, 2), (True, None), (False, 1), (False, 2)]
        names: dict[int, str] = {}
        resolved = []
        for m in received:
            if m.topic and m.alias:
                names[m.alias] = m.topic
            resolved.append(m.topic or names[m.alias])
        assert resolved == topics == [m.payload.decode() for m in received]
    finally:
        pub.disconnect()
        sub.disconnect()
