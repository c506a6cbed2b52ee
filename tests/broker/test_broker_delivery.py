"""Delivery, flow control, limits and routing options in the sans-I/O broker core."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker, sqlite_broker


def test_delivered_qos_is_min_of_published_and_granted():
    """mqtt.md item 12 (seed 000 l.1767-1769): delivered QoS = min(published, granted)."""
    broker = make_broker()
    s = TestClient(broker)
    s.connect("s")
    s.subscribe("a", qos=1)
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("a", b"x", qos=2, packet_id=5)
    pub.send(p.Pubrel(5))
    pub.publish("a", b"y", qos=0)
    assert [m.qos for m in s.publishes()] == [1, 0]


def test_qos2_inbound_is_delivered_once_on_pubrel_even_if_published_twice():
    """mqtt.md item 9 (seed 000 l.736-741): store on PUBLISH, deliver on PUBREL, exactly once;
    a duplicate PUBLISH with the same id before PUBREL is acknowledged again, not delivered."""
    broker = make_broker()
    s = TestClient(broker)
    s.connect("s")
    s.subscribe("a", qos=2)
    pub = TestClient(broker)
    pub.connect("p")
    assert isinstance(pub.publish("a", b"x", qos=2, packet_id=9)[0], p.Pubrec)
    assert s.publishes() == []  # held until PUBREL
    pub.send(p.Publish("a", b"x", 2, False, True, 9))  # DUP resend
    assert isinstance(pub.received()[0], p.Pubrec)
    pub.send(p.Pubrel(9))
    assert isinstance(pub.received()[0], p.Pubcomp)
    assert [m.payload for m in s.publishes()] == [b"x"]


def test_receive_maximum_limits_the_inflight_window():
    """MQTT 5 3.3.4 / 4.9: no more unacknowledged QoS 1/2 PUBLISH than the client's Receive
    Maximum; the next one follows a PUBACK."""
    broker = make_broker()
    s = TestClient(broker, 5)
    s.connect("s", properties={"receive_maximum": 2})
    s.subscribe("a", qos=1)
    pub = TestClient(broker)
    pub.connect("p")
    for i in range(5):
        pub.publish("a", str(i).encode(), qos=1, packet_id=i + 1)
    first = s.publishes()
    assert [m.payload for m in first] == [b"0", b"1"]
    s.send(p.Puback(first[0].packet_id))
    assert [m.payload for m in s.publishes()] == [b"2"]


def test_inflight_is_resent_with_dup_on_reconnect():
    """mqtt.md item 8 and decision (3.1.1 rule): unacknowledged QoS 1 messages are resent with
    DUP=1 on reconnect; a QoS 2 past PUBREC resumes with PUBREL."""
    broker = make_broker()
    s = TestClient(broker)
    s.connect("s", clean=False)
    s.subscribe("a", qos=2)
    s.subscribe("b", qos=1, packet_id=2)
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("b", b"one", qos=1, packet_id=1)
    pub.publish("a", b"two", qos=2, packet_id=2)
    pub.send(p.Pubrel(2))
    got = s.publishes()
    assert [m.dup for m in got] == [False, False]
    q2 = [m for m in got if m.qos == 2][0]
    s.send(p.Pubrec(q2.packet_id))
    assert isinstance(s.received()[0], p.Pubrel)
    s.drop()
    back = TestClient(broker)
    back.connect("s", clean=False)
    again = back.received()
    assert [(type(x).__name__, getattr(x, "dup", None)) for x in again] == [
        ("Publish", True), ("Pubrel", None)]


def test_v3_retransmits_on_a_timer():
    """mqtt.md decision: unacknowledged messages are retransmitted to MQIsdp v3 clients on the
    configured retry interval (seed 000 l.709, 720: resend with DUP on time-out)."""
    broker = make_broker(retry_interval=20)
    s = TestClient(broker, 3)
    s.connect("v3sub", keep_alive=0)
    s.subscribe("a", qos=1)
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("a", b"x", qos=1, packet_id=1)
    [first] = s.publishes()
    broker.clock.advance(19)
    broker.tick()
    assert s.publishes() == []
    broker.clock.advance(2)
    broker.tick()
    [again] = s.publishes()
    assert again.dup and again.packet_id == first.packet_id


def test_qos0_dropped_when_the_link_is_congested():
    """Issue 2 limits / design guide "Bounded everything": QoS 0 is dropped and counted while
    the subscriber's socket buffer is over max_outbound_buffer."""
    broker = make_broker(max_outbound_buffer=1024)
    s = TestClient(broker)
    s.connect("s")
    s.subscribe("a")
    s.link.buffered = 5000
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("a", b"x")
    assert s.publishes() == [] and broker.stats.publish_dropped == 1


def test_overlapping_subscriptions_deliver_once_with_all_identifiers():
    """MQTT 5 3.3.4: overlapping subscriptions of one client get one copy at the highest QoS,
    carrying every matching subscription identifier (seed 003 l.2738-2740: one copy)."""
    broker = make_broker()
    s = TestClient(broker, 5)
    s.connect("s")
    s.subscribe("a/+", qos=0, subscription_identifier=1)
    s.subscribe("a/#", qos=1, packet_id=2, subscription_identifier=2)
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("a/b", b"x", qos=1, packet_id=1)
    [m] = s.publishes()
    assert m.qos == 1 and sorted(m.properties["subscription_identifier"]) == [1, 2]


def test_no_local_and_retain_as_published():
    """MQTT 5 3.8.3.1: no-local suppresses the client's own publications; retain-as-published
    keeps RETAIN on live messages, which 3.1.1 clears (MQTT-3.3.1-9)."""
    broker = make_broker()
    c = TestClient(broker, 5)
    c.connect("c")
    c.subscribe("mine", no_local=True)
    c.subscribe("rap", packet_id=2, retain_as_published=True)
    c.publish("mine", b"self")
    assert c.publishes() == []
    other = TestClient(broker)
    other.connect("o")
    other.publish("rap", b"r", retain=True)
    [m] = c.publishes()
    assert m.retain


def test_retained_sent_after_suback_at_min_qos_and_cleared_by_empty_payload():
    """mqtt.md item 31 and decision: after SUBACK, one retained message per matching topic with
    RETAIN=1 at min(original, granted) QoS; an empty retained payload clears it."""
    broker = make_broker()
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("r/1", b"one", qos=1, retain=True, packet_id=1)
    pub.publish("r/2", b"two", qos=0, retain=True)
    s = TestClient(broker)
    s.connect("s")
    s.send(p.Subscribe(1, [p.Subscription("r/+", 2)]))
    got = s.received()
    assert isinstance(got[0], p.Suback)
    assert sorted((m.topic, m.qos, m.retain) for m in got[1:]) == [("r/1", 1, True), ("r/2", 0, True)]
    pub.publish("r/1", b"", retain=True)
    s2 = TestClient(broker)
    s2.connect("s2")
    s2.send(p.Subscribe(1, [p.Subscription("r/+", 2)]))
    assert [m.topic for m in s2.received()[1:]] == ["r/2"]


def test_retain_handling_options():
    """MQTT 5 3.8.3.1: retain handling 1 sends retained messages only for a new subscription,
    2 never."""
    broker = make_broker()
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("r", b"x", retain=True)
    c = TestClient(broker, 5)
    c.connect("c")
    c.send(p.Subscribe(1, [p.Subscription("r", 0, retain_handling=1)]))
    assert len(c.received()) == 2
    c.send(p.Subscribe(2, [p.Subscription("r", 0, retain_handling=1)]))
    assert len(c.received()) == 1
    c.send(p.Subscribe(3, [p.Subscription("r", 0, retain_handling=2)]))
    assert len(c.received()) == 1


def test_shared_subscription_gives_each_message_to_one_member():
    """Issue 2: shared subscriptions $share/<group>/<filter> (MQTT 5 4.8.2): each message goes
    to one member of the group, in turn."""
    broker = make_broker()
    a, b = TestClient(broker, 5), TestClient(broker, 5)
    a.connect("a")
    b.connect("b")
    a.subscribe("$share/g/jobs/#")
    b.subscribe("$share/g/jobs/#")
    pub = TestClient(broker)
    pub.connect("p")
    for i in range(4):
        pub.publish("jobs/x", str(i).encode())
    got_a = [m.payload for m in a.publishes()]
    got_b = [m.payload for m in b.publishes()]
    assert len(got_a) == 2 and len(got_b) == 2
    assert sorted(got_a + got_b) == [b"0", b"1", b"2", b"3"]


def test_topic_alias_from_the_client():
    """MQTT 5 3.3.2.3.4: a topic alias set with a topic is used by later PUBLISH with an empty
    topic; an alias above Topic Alias Maximum is a protocol error (0x94)."""
    broker = make_broker(topic_alias_maximum=5)
    s = TestClient(broker)
    s.connect("s")
    s.subscribe("long/topic/name")
    c = TestClient(broker, 5)
    c.connect("c")
    c.publish("long/topic/name", b"1", properties={"topic_alias": 3})
    c.publish("", b"2", properties={"topic_alias": 3})
    assert [m.payload for m in s.publishes()] == [b"1", b"2"]
    [d] = c.publish("x", b"3", properties={"topic_alias": 6})
    assert isinstance(d, p.Disconnect) and d.reason_code == 0x94


def test_message_expiry_drops_a_queued_message_and_counts_down():
    """MQTT 5 3.3.2.3.3: a message whose expiry interval passed is not delivered; one delivered
    late carries the remaining interval."""
    broker = make_broker()
    s = TestClient(broker, 5)
    s.connect("s", clean=False, properties={"session_expiry_interval": 3600})
    s.subscribe("a", qos=1)
    s.send(p.Disconnect())
    pub = TestClient(broker, 5)
    pub.connect("p")
    pub.publish("a", b"short", qos=1, packet_id=1, properties={"message_expiry_interval": 5})
    pub.publish("a", b"long", qos=1, packet_id=2, properties={"message_expiry_interval": 50})
    broker.clock.advance(10)
    back = TestClient(broker, 5)
    back.connect("s", clean=False, properties={"session_expiry_interval": 3600})
    [m] = back.publishes()
    assert m.payload == b"long" and m.properties["message_expiry_interval"] == 40


def test_user_properties_and_request_response_pass_through():
    """Issue 2: response topic, correlation data, content type and user properties pass
    through unchanged (MQTT 5 3.3.2.3)."""
    broker = make_broker()
    s = TestClient(broker, 5)
    s.connect("s")
    s.subscribe("req")
    c = TestClient(broker, 5)
    c.connect("c")
    props = {"response_topic": "resp/c", "correlation_data": b"\x01\x02",
             "content_type": "text/plain", "user_property": [("k", "v"), ("k", "w")]}
    c.publish("req", b"q", properties=dict(props))
    [m] = s.publishes()
    for key, value in props.items():
        assert m.properties[key] == value


def test_restart_from_sqlite_restores_sessions_queues_and_retained(tmp_path):
    """Issue 2 durable store: persistent sessions, subscriptions, queued QoS 1/2 and retained
    messages survive a restart (spec README decision 4)."""
    path = str(tmp_path / "r.db")
    broker, store = sqlite_broker(path)
    s = TestClient(broker)
    s.connect("s", clean=False)
    s.subscribe("q/#", qos=2)
    s.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("q/1", b"one", qos=1, packet_id=1)
    pub.publish("keep", b"retained", qos=1, retain=True, packet_id=2)
    store.close()

    broker2, store2 = sqlite_broker(path)
    back = TestClient(broker2)
    assert back.connect("s", clean=False).session_present
    [m] = back.publishes()
    assert (m.topic, m.payload, m.qos) == ("q/1", b"one", 1)
    back.send(p.Puback(m.packet_id))
    assert broker2.retained.get("keep").payload == b"retained"
    store2.close()
    store3 = SQLiteStore(path, notify=Callbacks())
    snap = store3.load()
    assert snap.deliveries == [] and list(snap.retained) == ["keep"]
    assert len(snap.messages) == 1  # the acknowledged message is gone, the retained one stays
    store3.close()


def test_clean_sessions_write_nothing_to_the_store():
    """docs/architecture.md Durability: clean sessions do not outlive the process, so their
    deliveries are never written."""
    store = MemoryStore()
    broker = make_broker(store=store)
    s = TestClient(broker)
    s.connect("s", clean=True)
    s.subscribe("a", qos=1)
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("a", b"x", qos=1, packet_id=1)
    snap = store.load()
    assert snap.sessions == {} and snap.deliveries == [] and snap.messages == {}


def test_puback_waits_only_for_what_it_promises_and_keeps_the_order(tmp_path):
    """Spec README decision 4 (storage an acknowledgement promises is durable before it
    leaves) with 3.1.1 4.6 (PUBACKs in the order of the PUBLISH packets): a QoS 1 message that
    only clean sessions receive stores nothing, so its PUBACK leaves at once; one stored for a
    persistent session (or retained) waits for the commit, and a PUBACK after it waits
    behind it even when its own message stored nothing."""
    store = SQLiteStore(str(tmp_path / "ack.db"), notify=Callbacks())
    broker = make_broker(store=store)
    durable = TestClient(broker)
    durable.connect("d", clean=False)
    durable.subscribe("stored", qos=1)
    live = TestClient(broker)
    live.connect("c")
    live.subscribe("live", qos=1)
    pub = TestClient(broker)
    pub.connect("p")

    def unsettled() -> bytes:  # what the broker wrote to the publisher, no commit allowed
        data = bytes(pub.link.data[pub._read:])
        pub._read = len(pub.link.data)
        return data

    pub.send(p.Publish("live", b"1", 1, False, False, 1))
    assert unsettled() == encode(p.Puback(1), 4)  # nothing stored: no wait for the store
    pub.send(p.Publish("stored", b"2", 1, False, False, 2))
    pub.send(p.Publish("live", b"3", 1, False, False, 3))
    pub.send(p.Publish("nobody", b"4", 1, True, False, 4))  # retained: stored
    assert unsettled() == b"" and pub.conn.acks_waiting == 3
    assert [a.packet_id for a in pub.received()] == [2, 3, 4]
    assert pub.conn.acks_waiting == 0 and pub.conn.inbound_unacked == 0
    pub.send(p.Publish("live", b"5", 1, False, False, 5))
    assert unsettled() == encode(p.Puback(5), 4)
    assert [m.payload for m in live.publishes()] == [b"1", b"3", b"5"]
    assert [m.payload for m in durable.publishes()] == [b"2"]
    store.close()


def test_duplicate_qos2_publish_is_acknowledged_only_once_durable(tmp_path):
    """Spec README decision 4 (PUBREC only after the message is durable) with mqtt.md item 9:
    a DUP resend of a QoS 2 PUBLISH that arrives before the first PUBREC gets its PUBREC after
    the commit too, never ahead of it."""
    store = SQLiteStore(str(tmp_path / "dup.db"), notify=Callbacks())
    broker = make_broker(store=store)
    pub = TestClient(broker)
    pub.connect("p", clean=False)
    pub.received()
    pub.send(p.Publish("a", b"x", 2, False, False, 7))
    pub.send(p.Publish("a", b"x", 2, False, True, 7))  # DUP, before anything was committed
    assert bytes(pub.link.data[pub._read:]) == b""  # nothing leaves before the commit
    assert [type(x) for x in pub.received()] == [p.Pubrec, p.Pubrec]
    store.close()


def test_pubrel_for_a_message_received_before_a_reconnect_keeps_the_count_right():
    """MQTT 5 4.9 (receive maximum: QoS 2 counts from PUBLISH to PUBCOMP, per connection):
    a PUBREL on a new connection for a message received on the old one completes it without
    taking the new connection's count below zero (audit: inbound_unacked went negative,
    letting the client exceed the receive maximum later)."""
    broker = make_broker(max_inflight=2)
    sub = TestClient(broker, 5)
    sub.connect("s")
    sub.subscribe("a", qos=2)
    first = TestClient(broker, 5)
    first.connect("p", clean=False, properties={"session_expiry_interval": 60})
    first.publish("a", b"held", qos=2, packet_id=1)
    first.drop()
    second = TestClient(broker, 5)
    assert second.connect("p", clean=False, properties={"session_expiry_interval": 60}).session_present
    second.send(p.Pubrel(1))
    assert isinstance(second.received()[0], p.Pubcomp)
    assert second.conn.inbound_unacked == 0
    assert [m.payload for m in sub.publishes()] == [b"held"]
    for pid in (2, 3):
        second.publish("a", b"x", qos=1, packet_id=pid)
    assert second.conn.inbound_unacked == 0 and not second.link.closed


def test_topic_aliases_towards_the_client():
    """MQTT 5 3.3.2.3.4 (issue 2: topic aliases both ways): up to the client's Topic Alias
    Maximum, the broker gives a topic an alias; the first PUBLISH carries the name and the
    alias, later ones the alias with an empty name; past the maximum, names in full. A client
    that announced no maximum gets no alias."""
    broker = make_broker()
    c = TestClient(broker, 5)
    c.connect("aliased", properties={"topic_alias_maximum": 2})
    c.subscribe("t/#")
    plain = TestClient(broker, 5)
    plain.connect("plain")
    plain.subscribe("t/#")
    pub = TestClient(broker, 5)
    pub.connect("p")
    for topic in ("t/a", "t/a", "t/b", "t/c", "t/a", "t/b"):
        pub.publish(topic, topic.encode())
    got = [(m.topic, m.properties.get("topic_alias"), m.payload) for m in c.publishes()]
    assert got == [("t/a", 1, b"t/a"), ("", 1, b"t/a"), ("t/b", 2, b"t/b"), ("t/c", None, b"t/c"),
                   ("", 1, b"t/a"), ("", 2, b"t/b")]
    assert [(m.topic, m.properties.get("topic_alias")) for m in plain.publishes()] == [
        (t, None) for t in ("t/a", "t/a", "t/b", "t/c", "t/a", "t/b")]


def test_topic_alias_is_not_taken_by_a_publish_too_large_for_the_client():
    """MQTT 5 3.1.2.25 with 3.3.2.3.4: a PUBLISH the client's Maximum Packet Size refuses is not
    sent, so the alias it would have set up is not taken either; the next one sets it up."""
    broker = make_broker()
    c = TestClient(broker, 5)
    c.connect("small", properties={"topic_alias_maximum": 5, "maximum_packet_size": 64})
    c.subscribe("t")
    pub = TestClient(broker, 5)
    pub.connect("p")
    pub.publish("t", b"x" * 100)  # too large: dropped
    pub.publish("t", b"fits")
    pub.publish("t", b"again")
    assert [(m.topic, m.properties.get("topic_alias"), m.payload) for m in c.publishes()] == [
        ("t", 1, b"fits"), ("", 1, b"again")]


def test_topic_aliases_start_afresh_on_a_new_connection():
    """MQTT 5 3.3.2.3.4: "Topic Alias mappings exist only within a Network Connection": a
    message resent after a reconnect carries its topic name again."""
    broker = make_broker()
    c = TestClient(broker, 5)
    props = {"topic_alias_maximum": 5, "session_expiry_interval": 60}
    c.connect("resume", clean=False, properties=props)
    c.subscribe("t", qos=1)
    pub = TestClient(broker, 5)
    pub.connect("p")
    pub.publish("t", b"1", qos=1, packet_id=1)
    [first] = c.publishes()
    c.drop()
    again = TestClient(broker, 5)
    again.connect("resume", clean=False, properties=props)
    [resent] = again.publishes()
    assert (first.topic, first.properties["topic_alias"]) == ("t", 1)
    assert (resent.topic, resent.properties["topic_alias"], resent.dup) == ("t", 1, True)


def test_qos1_puback_goes_when_the_stored_copy_is_acknowledged_before_the_commit(tmp_path):
    """Spec README decision 4 as kept by relaymq/broker/ack_watch.py: the PUBACK of a QoS 1
    message stored only for a persistent session leaves at the first of the commit and that
    subscriber's PUBACK. A copy queued for an offline session is not watched (its backlog must
    not hold the publisher's connection): that PUBACK waits for the commit."""
    store = SQLiteStore(str(tmp_path / "w.db"), notify=Callbacks())  # commits wait for settle()
    broker = make_broker(store=store)
    online, offline = TestClient(broker), TestClient(broker)
    online.connect("online", clean=False)
    online.subscribe("t/on", qos=1)
    offline.connect("offline", clean=False)
    offline.subscribe("t/off", qos=1)
    offline.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("pub")
    pub.received()
    before = len(pub.link.data)
    pub.send(p.Publish("t/on", b"x", 1, False, False, 1))
    assert bytes(pub.link.data[before:]) == b""  # stored for "online": waits
    online.send(p.Puback(1))  # its copy went out as packet 1; acknowledged before any commit
    assert bytes(pub.link.data[before:]) == b"\x40\x02\x00\x01"
    before = len(pub.link.data)
    pub.send(p.Publish("t/off", b"y", 1, False, False, 2))
    assert broker.sessions["offline"].queue[0].watch is None
    assert bytes(pub.link.data[before:]) == b""
    # received() settles (the commit): the second PUBACK follows the first, already written
    assert [(type(x), x.packet_id) for x in pub.received()] == [(p.Puback, 1), (p.Puback, 2)]
    store.close()


def test_qos0_fan_out_gives_each_client_the_publish_of_its_level_and_options():
    """A QoS 0 publication's PUBLISH is encoded once per level and RETAIN and the bytes shared
    (connection.LastQoS0, issue 16): each client must still get what its own level and
    subscription ask for - no properties below MQTT 5 (seed 000's v3), the publisher's
    properties at 5, its subscription identifier (MQTT 5 3.3.4), RETAIN as published only when
    asked (3.3.1.3) - and the next publication its own payload."""
    broker = make_broker()
    v3 = TestClient(broker, level=3)
    v3.connect("v3")
    v4 = TestClient(broker)
    v4.connect("v4")
    v5 = TestClient(broker, level=5)
    v5.connect("v5")
    rap = TestClient(broker, level=5)
    rap.connect("rap")
    ident = TestClient(broker, level=5)
    ident.connect("ident")
    for client in (v3, v4, v5):
        client.subscribe("f/#")
    rap.subscribe("f/#", retain_as_published=True)
    ident.subscribe("f/#", subscription_identifier=7)
    pub = TestClient(broker, level=5)
    pub.connect("pub")
    user = {"user_property": [("k", "v")]}
    for payload in (b"one", b"two"):
        pub.publish("f/x", payload, retain=True, properties=user)
        got = {name: client.publishes() for name, client in
               (("v3", v3), ("v4", v4), ("v5", v5), ("rap", rap), ("ident", ident))}
        assert {name: [(m.topic, m.payload, m.qos) for m in ms] for name, ms in got.items()} == {
            name: [("f/x", payload, 0)] for name in got}
        assert [m.retain for name in ("v3", "v4", "v5", "rap", "ident") for m in got[name]] == [
            False, False, False, True, False]
        assert got["v5"][0].properties == user and got["rap"][0].properties == user
        assert got["ident"][0].properties == {**user, "subscription_identifier": [7]}


def test_a_reads_qos2_releases_and_acknowledgements_are_stored_at_its_end(tmp_path):
    """Issue 16 row 3: the inbound QoS 2 records a read's PUBRELs release, the RELEASED states
    its PUBRECs make and the deliveries its PUBCOMPs finish go to the store in one call each,
    at the read's end, inside its unit: what a restart finds is what was acknowledged."""
    path = str(tmp_path / "q2.db")
    broker, store = sqlite_broker(path)
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    sub.subscribe("a", qos=2)
    pub = TestClient(broker)
    pub.connect("pub", clean=False)
    pub.send_bytes(b"".join(encode(p.Publish("a", bytes([i]), 2, False, False, i), 4) for i in (1, 2, 3)))
    assert [type(x) for x in pub.received()] == [p.Pubrec] * 3
    pub.send_bytes(b"".join(encode(p.Pubrel(i), 4) for i in (1, 2, 3)))  # one read
    assert [(type(x), x.packet_id) for x in pub.received()] == [(p.Pubcomp, i) for i in (1, 2, 3)]
    store.flush()
    assert store.load().inbound == []
    sent = sub.publishes()
    assert [m.payload for m in sent] == [b"\x01", b"\x02", b"\x03"]
    sub.send_bytes(b"".join(encode(p.Pubrec(m.packet_id), 4) for m in sent))  # one read
    assert [type(x) for x in sub.received()] == [p.Pubrel] * 3
    sub.send_bytes(encode(p.Pubcomp(sent[0].packet_id), 4))  # the first exchange completes
    sub.received()
    store.close()

    broker2, store2 = sqlite_broker(path)
    try:
        again = TestClient(broker2)
        again.connect("sub", clean=False)
        # the two left are RELEASED in the store: PUBREL again, never the PUBLISH (4.3.3)
        assert [(type(x), x.packet_id) for x in again.received()] == [(p.Pubrel, m.packet_id) for m in sent[1:]]
    finally:
        store2.close()


def test_a_qos2_packet_id_reused_in_the_read_that_released_it_keeps_its_new_record(tmp_path):
    """A PUBREL's inbound record is deleted at the end of its read; a client that sends a new
    QoS 2 PUBLISH with the same packet id in that read (before its PUBCOMP) must still find the
    new record after a restart: the pending delete goes to the store before the new put."""
    path = str(tmp_path / "reuse.db")
    broker, store = sqlite_broker(path)
    pub = TestClient(broker)
    pub.connect("pub", clean=False)
    assert isinstance(pub.publish("a", b"first", qos=2, packet_id=7)[0], p.Pubrec)
    pub.send_bytes(encode(p.Pubrel(7), 4) + encode(p.Publish("a", b"second", 2, False, False, 7), 4))
    assert [type(x) for x in pub.received()] == [p.Pubcomp, p.Pubrec]
    store.close()

    broker2, store2 = sqlite_broker(path)
    try:
        sub = TestClient(broker2)
        sub.connect("sub")
        sub.subscribe("a", qos=1)
        again = TestClient(broker2)
        again.connect("pub", clean=False)
        again.send(p.Pubrel(7))
        assert [m.payload for m in sub.publishes()] == [b"second"]
    finally:
        store2.close()


def test_queued_qos2_deliveries_go_out_once_their_packet_ids_are_durable(tmp_path):
    """A persistent session's QoS 2 deliveries put in flight from its queue (``pump``: their
    SENT states in one store call, one callback for all) reach the client only after that
    commit, and a restart resends each under the packet id it was sent with."""
    path = str(tmp_path / "pump.db")
    broker, store = sqlite_broker(path, max_inflight=1)
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    sub.subscribe("a", qos=2)
    pub = TestClient(broker)
    pub.connect("pub")
    for i in (1, 2):
        pub.publish("a", bytes([i]), qos=2, packet_id=i)
        pub.send(p.Pubrel(i))
    first = sub.publishes()
    assert [m.payload for m in first] == [b"\x01"]
    sub.send(p.Pubrec(first[0].packet_id))
    sub.received()
    before = len(sub.link.data)
    sub.send(p.Pubcomp(first[0].packet_id))  # room in the window: the queued one starts
    assert len(sub.link.data) == before  # not before its packet id is committed
    second = sub.publishes()
    assert [m.payload for m in second] == [b"\x02"]
    store.close()

    broker2, store2 = sqlite_broker(path, max_inflight=1)
    try:
        again = TestClient(broker2)
        again.connect("sub", clean=False)
        resent = again.publishes()
        assert [(m.payload, m.packet_id, m.dup) for m in resent] == [(b"\x02", second[0].packet_id, True)]
    finally:
        store2.close()
