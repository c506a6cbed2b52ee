"""Authentication, ACLs and listener control in the broker core (issue 2 "Listeners and
access"; mqtt.md item 5 and the ACL decision)."""

from __future__ import annotations

from relaymq.auth.acl import Acl
from relaymq.auth.passwords import PasswordFile
from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode

from relaymq.broker.sys_tree import stats_values
from relaymq.store.sqlite import SQLiteStore

from .driver import Callbacks, TestClient, make_broker


def acl_file(tmp_path, text: str) -> Acl:
    path = tmp_path / "acl"
    path.write_text(text)
    return Acl.load(str(path))


def test_password_file_and_anonymous_access(tmp_path):
    """Issue 2: a password file with salted hashes; anonymous access can be turned off.
    Bad credentials: 3.1.1 return code 4, MQTT 5 0x86; anonymous refused: 5 / 0x87."""
    pw = PasswordFile()
    pw.set("alice", "secret")
    broker = make_broker(passwords=pw, allow_anonymous=False)
    assert TestClient(broker).connect("a", username="alice", password=b"secret").reason_code == 0
    assert TestClient(broker).connect("b", username="alice", password=b"wrong").reason_code == 4
    assert TestClient(broker, 5).connect("c", username="alice", password=b"x").reason_code == 0x86
    assert TestClient(broker).connect("d").reason_code == 5
    assert TestClient(broker, 5).connect("e").reason_code == 0x87


def test_acl_refuses_subscription_per_level(tmp_path):
    """mqtt.md decision: a subscription the ACL refuses gets 0x80 in 3.1.1, 0x87 in 5.0, and in
    MQIsdp v3 (no failure code) the requested QoS, with nothing delivered."""
    acl = acl_file(tmp_path, "topic readwrite public/#\n")
    broker = make_broker(acl=acl)
    assert TestClient(broker, 4).connect("c4").reason_code == 0
    c4 = TestClient(broker, 4)
    c4.connect("c4b")
    assert c4.subscribe("secret/x", qos=1).reason_codes == [0x80]
    c5 = TestClient(broker, 5)
    c5.connect("c5")
    assert c5.subscribe("secret/x", qos=1).reason_codes == [0x87]
    c3 = TestClient(broker, 3)
    c3.connect("c3")
    assert c3.subscribe("secret/x", qos=1).reason_codes == [1]
    pub = TestClient(broker)
    pub.connect("p")
    pub.publish("secret/x", b"no")  # not allowed to write either: dropped
    assert c3.publishes() == []
    c3.subscribe("public/x", qos=0, packet_id=2)
    pub.publish("public/x", b"yes")
    assert [m.payload for m in c3.publishes()] == [b"yes"]


def test_acl_refused_publish_gets_not_authorized_in_mqtt5(tmp_path):
    """MQTT 5 3.4.2.1: a refused QoS 1 publication is acknowledged with 0x87."""
    broker = make_broker(acl=acl_file(tmp_path, "topic read public/#\n"))
    c = TestClient(broker, 5)
    c.connect("c")
    [ack] = c.publish("public/x", b"x", qos=1, packet_id=3)
    assert isinstance(ack, p.Puback) and ack.reason_code == 0x87


def test_listener_control_is_for_administrators_only():
    """mqtt.md item 5 (seed 000 l.415): ON/OFF on $SYS/SCADA/MQIsdpListener/<port> or /all
    starts or stops a listener; only an administrator may."""
    calls = []
    broker = make_broker(administrators=("admin",))
    broker.listener_control = lambda target, on: calls.append((target, on)) or True
    user = TestClient(broker)
    user.connect("u", username="bob")
    user.publish("$SYS/SCADA/MQIsdpListener/1883", b"OFF")
    assert calls == []
    admin = TestClient(broker)
    admin.connect("a", username="admin")
    admin.publish("$SYS/SCADA/MQIsdpListener/1883", b"OFF")
    admin.publish("$SYS/SCADA/MQIsdpListener/all", b"ON")
    assert calls == [("1883", False), ("all", True)]


def test_sys_statistics_are_published():
    """Issue 2: $SYS/broker/... statistics at the configured interval; '$' topics are not
    matched by a leading wildcard (spec decision 2)."""
    broker = make_broker(sys_interval=10)
    plain = TestClient(broker)
    plain.connect("plain")
    plain.subscribe("#")
    sys_sub = TestClient(broker)
    sys_sub.connect("sys")
    sys_sub.subscribe("$SYS/broker/#")
    broker.tick()
    got = {m.topic: m.payload for m in sys_sub.publishes()}
    assert got["$SYS/broker/clients/connected"] == b"2"
    assert got["$SYS/broker/version"].startswith(b"relaymq")
    assert "$SYS/broker/messages/received" in got and "$SYS/broker/uptime" in got
    assert plain.publishes() == []


def test_sys_statistics_show_the_store_group_commit(tmp_path):
    """Issue 2 ($SYS statistics) and issue 8 (the durable path measured): with the SQLite store,
    $SYS/broker/store/commits, .../statements/written and .../statements/coalesced count its
    commits and statements; a statement undone before its batch was taken (a message its
    subscriber acknowledged before the commit) counts as coalesced instead of written."""
    store = SQLiteStore(str(tmp_path / "s.db"), notify=Callbacks())
    broker = make_broker(store=store, sys_interval=10)
    sub = TestClient(broker)
    sub.connect("s", clean=False)
    sub.subscribe("t", qos=1)
    store.flush()
    pub = TestClient(broker)
    pub.connect("p")
    pub.send(p.Publish("t", b"kept", qos=1, packet_id=1))
    [m] = sub.publishes()
    store.flush()                                  # committed before the subscriber's PUBACK
    sub.send(p.Puback(m.packet_id))
    store.flush()
    before = store.written_count
    pub.send(p.Publish("t", b"acked at once", qos=1, packet_id=2))
    [m] = sub.publishes()
    sub.send(p.Puback(m.packet_id))                # maybe before the writer took the puts
    store.flush()
    watcher = TestClient(broker)
    watcher.connect("w")
    watcher.subscribe("$SYS/broker/store/#")
    broker.tick()
    got = {m.topic: m.payload.decode() for m in watcher.publishes()}
    assert got.pop("$SYS/broker/store/state") == "ok"  # issue 15 finding 9: "cannot write: ..." when it fails
    assert got["$SYS/broker/store/write/retries"] == got["$SYS/broker/store/write/outages"] == "0"
    got = {topic: int(value) for topic, value in got.items()}
    # the first message: a message row and a delivery row put, then deleted (4 written); the
    # second: its 2 puts and 2 deletes written, or cancelled out in the batch (coalesced),
    # depending on whether the writer took the puts before the PUBACK came
    assert got["$SYS/broker/store/commits"] == store.commit_count >= 3
    assert got["$SYS/broker/store/statements/written"] == store.written_count >= before >= 4
    second = store.written_count - before + store.coalesced_count
    assert got["$SYS/broker/store/statements/coalesced"] == store.coalesced_count
    assert second >= 4
    store.close()
    # a store that keeps no such figures publishes none
    assert "store/commits" not in stats_values(make_broker())


def test_refused_qos2_publish_does_not_keep_its_packet_id(tmp_path):
    """MQTT 5 4.3.3 / 3.5.2.1: a PUBREC with a reason code >= 0x80 ends the QoS 2 exchange, so
    the broker forgets the packet id; the client's next PUBLISH with that id is a new message
    and is delivered (audit: it was taken as a duplicate and never delivered)."""
    broker = make_broker(acl=acl_file(tmp_path, "topic readwrite public/#\n"))
    sub = TestClient(broker, 5)
    sub.connect("s")
    sub.subscribe("public/#", qos=2)
    c = TestClient(broker, 5)
    c.connect("c")
    [rec] = c.publish("secret/x", b"refused", qos=2, packet_id=7)
    assert isinstance(rec, p.Pubrec) and rec.reason_code == 0x87
    assert 7 not in broker.sessions["c"].inbound
    [rec] = c.publish("public/x", b"allowed", qos=2, packet_id=7)
    assert isinstance(rec, p.Pubrec) and rec.reason_code == 0
    c.send(p.Pubrel(7))
    assert isinstance(c.received()[0], p.Pubcomp)
    assert [m.payload for m in sub.publishes()] == [b"allowed"]
    assert c.conn.inbound_unacked == 0


def test_clients_may_not_publish_to_sys_topics():
    """Issue 2 ($SYS/broker/... statistics are the broker's) with mqtt.md item 5 (only the
    listener control topics, and only for administrators): a client publication to $SYS/ is
    refused, MQTT 5 with PUBACK 0x87, 3.1.1 dropped silently; nothing reaches a subscriber and
    no retained statistic is overwritten."""
    broker = make_broker(sys_interval=10, administrators=("admin",))
    broker.tick()  # the broker's own retained statistics
    version = broker.retained.get("$SYS/broker/version").payload
    watcher = TestClient(broker)
    watcher.connect("w")
    watcher.subscribe("$SYS/broker/uptime")
    watcher.received()
    v5 = TestClient(broker, 5)
    v5.connect("v5")
    [ack] = v5.publish("$SYS/broker/version", b"fake", qos=1, retain=True, packet_id=2)
    assert isinstance(ack, p.Puback) and ack.reason_code == 0x87
    v4 = TestClient(broker, 4)
    v4.connect("v4")
    [ack] = v4.publish("$SYS/broker/version", b"fake", qos=1, retain=True, packet_id=3)
    assert isinstance(ack, p.Puback)  # 3.1.1 has no failure code: acknowledged, dropped
    v4.publish("$SYS/broker/uptime", b"0 seconds")
    admin = TestClient(broker, 5)
    admin.connect("a", username="admin")
    [ack] = admin.publish("$SYS/broker/uptime", b"0 seconds", qos=1, packet_id=4)
    assert ack.reason_code == 0x87  # administrators control listeners, nothing else in $SYS
    assert broker.retained.get("$SYS/broker/version").payload == version
    assert watcher.publishes() == []


def test_connect_waits_for_an_asynchronous_password_check():
    """Issue 2 P1 (bcrypt off the event loop): the core asks Broker.authenticate and waits.
    Until the answer comes the connection reads nothing (the link is paused) and the packets
    that followed the CONNECT wait; then CONNACK goes out and they are handled, in order.
    A refusal answers CONNACK 4 (3.1.1) and drops what was waiting."""
    pw = PasswordFile()
    pw.set("alice", "secret", cost=4)
    broker = make_broker(passwords=pw)
    pending = []
    broker.authenticator = lambda user, password, peer, done: pending.append((user, password, done))
    sub = TestClient(broker)
    sub.connect("sub")  # anonymous: no check needed
    sub.subscribe("a/#", qos=1)
    c = TestClient(broker)
    c.send_bytes(encode(p.Connect("MQTT", 4, True, 60, "c", None, "alice", b"secret"), 4)
                 + encode(p.Publish("a/1", b"after connect", 1, False, False, 3), 4))
    assert c.received() == [] and not c.link.reading
    [(user, password, done)] = pending
    assert (user, password) == ("alice", b"secret")
    done(True)
    connack, puback = c.received()
    assert isinstance(connack, p.Connack) and connack.reason_code == 0
    assert isinstance(puback, p.Puback) and puback.packet_id == 3
    assert c.link.reading
    assert [m.payload for m in sub.publishes()] == [b"after connect"]

    bad = TestClient(broker)
    bad.send_bytes(encode(p.Connect("MQTT", 4, True, 60, "bad", None, "alice", b"guess"), 4)
                   + encode(p.Publish("a/1", b"never", 0, False, False, None), 4))
    pending[-1][2](False)
    [refusal] = bad.received()
    assert isinstance(refusal, p.Connack) and refusal.reason_code == 4 and bad.link.closed
    assert sub.publishes() == []


def test_a_client_gone_during_the_password_check_is_forgotten():
    """The answer for a connection that closed meanwhile changes nothing (no session)."""
    pw = PasswordFile()
    pw.set("alice", "secret", cost=4)
    broker = make_broker(passwords=pw)
    pending = []
    broker.authenticator = lambda user, password, peer, done: pending.append(done)
    c = TestClient(broker)
    c.send(p.Connect("MQTT", 4, False, 60, "gone", None, "alice", b"secret"))
    c.drop()
    pending[0](True)
    assert "gone" not in broker.sessions and c.link.data == b""


def test_clients_connected_and_maximum_follow_connects_take_overs_and_drops():
    """$SYS clients/connected and clients/maximum (issue 2): counted as CONNECTs are accepted
    and connections go, whatever way they go (DISCONNECT, a dropped socket, a session take-over,
    a refused CONNECT that never counted), so the figure needs no pass over every connection."""
    broker = make_broker()

    def figures() -> tuple[str, str]:
        values = stats_values(broker)  # what $SYS/broker/clients/... publish
        return values["clients/connected"], values["clients/maximum"]

    watcher = TestClient(broker)
    watcher.connect("watcher")
    a, b, c = TestClient(broker), TestClient(broker), TestClient(broker)
    for client, name in ((a, "a"), (b, "b"), (c, "c")):
        client.connect(name)
    assert figures() == ("4", "4")
    a.send(p.Disconnect())
    b.drop()
    assert figures() == ("2", "4")
    again = TestClient(broker)
    again.connect("c")  # takes the session over: c's connection goes
    assert figures() == ("2", "4")
    refused = TestClient(broker)
    refused.send(p.Connect("MQTT", 4, False, 60, ""))  # 3.1.1: an empty id needs a clean session
    assert isinstance(ack := refused.take_first(), p.Connack) and ack.reason_code == 2
    assert figures() == ("2", "4")
    assert broker.stats.clients_connected == sum(1 for x in broker.connections if x.connected)
