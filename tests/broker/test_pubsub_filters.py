"""Content filters and topic ACLs for MQTT clients in the broker core (pubsub.md items 17 and
38; issue 4: the ``relaymq-filter`` SUBSCRIBE user property, the same ACLs for every client)."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.pubsub.topicacl import AclEntry, CombinedAcl, TopicAcl

from .driver import TestClient, make_broker


def subscribe_with_filter(client: TestClient, topic_filter: str, text: str, qos: int = 0) -> p.Suback:
    client.send(p.Subscribe(1, [p.Subscription(topic_filter, qos)], {"user_property": [("relaymq-filter", text)]}))
    ack = client.take_first()
    assert isinstance(ack, p.Suback)
    return ack


def test_item_17_mqtt_filter_on_user_property():
    """pubsub.md item 17 (issue 4): an MQTT 5 publication's user properties are its usr
    folder; ``usr.colour = 'blue'`` selects on one."""
    broker = make_broker()
    sub = TestClient(broker, level=5)
    sub.connect("sub")
    assert subscribe_with_filter(sub, "paint/#", "usr.colour = 'blue'").reason_codes == [0]
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    pub.publish("paint/a", b"1", properties={"user_property": [("colour", "red")]})
    pub.publish("paint/b", b"2", properties={"user_property": [("colour", "blue")]})
    pub.publish("paint/c", b"3")
    assert [m.payload for m in sub.publishes()] == [b"2"]


def test_item_17_filter_on_persistence_with_and_without_the_message_view():
    """pubsub.md item 17: an MQTT publication is persistent when its QoS is above 0 (what the
    broker network's assured links filter on: relaymq.network.assured). The filter that reads
    only Root.MQMD.Persistence is answered without building the message view, and says what
    the view says; one that reads more still gets the view."""
    from relaymq.pubsub.lazy_view import LazyView
    from relaymq.pubsub.conversions import publication_from_mqtt, view_resolver
    from relaymq.selector import compile_selector
    from relaymq.store.base import StoredMessage

    for text in ("Root.MQMD.Persistence = 0", "Root.MQMD.Persistence > 0", "NOT Root.MQMD.Persistence = 1",
                 "Root.MQMD.Persistence = 0 AND usr.a = 'x'"):
        selector = compile_selector(text)
        for qos in (0, 1, 2):
            stored = StoredMessage(1, "t/a", b'{"n": 1}', qos, properties={"user_property": [("a", "x")]})
            full = view_resolver(publication_from_mqtt(stored.topic, stored.payload, qos, stored.properties, None))
            assert LazyView(stored).selects(selector) == selector.matches(full), (text, qos)
    broker = make_broker()
    sub = TestClient(broker, level=5)
    sub.connect("sub")
    subscribe_with_filter(sub, "p/#", "Root.MQMD.Persistence = 0", qos=2)
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    pub.publish("p/0", b"0")
    pub.publish("p/1", b"1", qos=1)
    assert [m.payload for m in sub.publishes()] == [b"0"]


def test_item_17_numeric_filter_on_untyped_mqtt_user_property():
    """pubsub.md item 17, README decision 3 (docs/pubsub.md "Content filters"): MQTT user
    properties are text with no type; compared with a number, one that reads as a number is
    compared as that number (``usr.level > 5`` selects "7" and "10", not "3" or "high");
    compared with a string, it is a string (``usr.level = '7'``)."""
    broker = make_broker()
    numeric = TestClient(broker, level=5)
    numeric.connect("numeric")
    assert subscribe_with_filter(numeric, "line/#", "usr.level > 5").reason_codes == [0]
    text = TestClient(broker, level=5)
    text.connect("text")
    assert subscribe_with_filter(text, "line/#", "usr.level = '7'").reason_codes == [0]
    arithmetic = TestClient(broker, level=5)
    arithmetic.connect("arithmetic")
    assert subscribe_with_filter(arithmetic, "line/#", "usr.level * 2 BETWEEN 13 AND 15").reason_codes == [0]
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    for n, level in enumerate(("3", "7", "10", "high", " 7.0")):
        pub.publish(f"line/{n}", level.encode(), properties={"user_property": [("level", level)]})
    assert [m.payload for m in numeric.publishes()] == [b"7", b"10", b" 7.0"]
    assert [m.payload for m in text.publishes()] == [b"7"]
    assert [m.payload for m in arithmetic.publishes()] == [b"7", b" 7.0"]


def test_item_17_mqtt_filter_on_json_body_and_retained():
    """pubsub.md item 17; seed 003 l.1856-1905: ``Body.x`` on a JSON payload, for live and
    retained publications alike."""
    broker = make_broker()
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    pub.publish("price/IBM", b'{"price": 120}', retain=True)
    pub.publish("price/HAL", b'{"price": 80}', retain=True)
    sub = TestClient(broker, level=5)
    sub.connect("sub")
    subscribe_with_filter(sub, "price/+", "Body.price > 100")
    assert [m.topic for m in sub.publishes()] == ["price/IBM"]
    pub.publish("price/HAL", b'{"price": 101}')
    pub.publish("price/IBM", b'{"price": 99}')
    assert [(m.topic, m.payload) for m in sub.publishes()] == [("price/HAL", b'{"price": 101}')]


def test_item_17_unfiltered_subscriber_unaffected_and_one_copy():
    """pubsub.md items 14 and 17: a filter is per subscription; a client whose unfiltered
    subscription matches still gets one copy."""
    broker = make_broker()
    sub = TestClient(broker, level=5)
    sub.connect("sub")
    subscribe_with_filter(sub, "a/#", "usr.k = 'v'")
    sub.subscribe("a/b", packet_id=2)
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    pub.publish("a/b", b"x")
    assert len(sub.publishes()) == 1


def test_item_17_invalid_mqtt_filter_refused():
    """pubsub.md item 17 / README decision 3: an invalid filter is refused where it is given
    (SUBACK 0x83 for that topic filter) and nothing is subscribed."""
    broker = make_broker()
    sub = TestClient(broker, level=5)
    sub.connect("sub")
    assert subscribe_with_filter(sub, "a", "usr.k = = 'v'").reason_codes == [rc.IMPLEMENTATION_SPECIFIC_ERROR]
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    pub.publish("a", b"x")
    assert sub.publishes() == []


def test_item_38_topic_acl_applies_to_mqtt_clients():
    """pubsub.md item 38; seed 003 l.1893-1899, 2411-2486: the topic ACLs hold for MQTT
    clients: a refused publish is dropped (0x87 in MQTT 5), a '#' subscriber sees only the
    topics it may subscribe to."""
    acl = TopicAcl.default()
    acl.groups["Writers"] = {"writer"}
    acl.set(AclEntry("", "PublicGroup", "deny", "allow", "allow"))  # a row replaces the default one
    acl.set(AclEntry("", "Writers", publish="allow"))
    acl.set(AclEntry("Secret", "PublicGroup", subscribe="deny"))
    broker = make_broker(acl=CombinedAcl(None, acl))
    reader = TestClient(broker, level=5)
    reader.connect("reader", username="reader")
    assert reader.subscribe("#").reason_codes == [0]
    writer = TestClient(broker, level=5)
    writer.connect("writer", username="writer")
    writer.publish("Open/x", b"1")
    writer.publish("Secret/x", b"2")
    received = reader.publishes()
    acks = reader.publish("Open/y", b"3", qos=1)
    assert [a.reason_code for a in acks if isinstance(a, p.Puback)] == [rc.NOT_AUTHORIZED]
    assert [m.topic for m in received + [a for a in acks if isinstance(a, p.Publish)]] == ["Open/x"]
