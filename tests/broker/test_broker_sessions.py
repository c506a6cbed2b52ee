"""Sessions, keep alive, wills and take-over in the sans-I/O broker core, with a manual clock."""

from __future__ import annotations

from relaymq.mqtt import packets as p
from .driver import TestClient, make_broker


def test_keep_alive_closes_after_one_and_a_half_times_and_publishes_the_will():
    """mqtt.md item 21 (seed 000 l.1023): disconnect after 1.5 x keep alive without a packet;
    item 25 and the decision: a keep-alive expiry publishes the will."""
    broker = make_broker()
    watcher = TestClient(broker)
    watcher.connect("watcher", keep_alive=0)
    watcher.subscribe("wills/#")
    device = TestClient(broker)
    device.connect("device", keep_alive=10, will=p.Will("wills/device", b"gone"))
    broker.clock.advance(14.9)
    broker.tick()
    assert not device.link.closed
    device.send(p.Pingreq())
    assert isinstance(device.received()[0], p.Pingresp)  # item 21: PINGREQ -> PINGRESP
    broker.clock.advance(14.9)  # 1.49 x since the PINGREQ
    broker.tick()
    assert not device.link.closed and watcher.publishes() == []
    broker.clock.advance(0.2)
    broker.tick()
    assert device.link.closed
    [will] = watcher.publishes()
    assert (will.topic, will.payload) == ("wills/device", b"gone")


def test_keep_alive_zero_disables_the_timer():
    """mqtt.md item 21 (seed 000 l.1025): a keep alive of 0 disables it."""
    broker = make_broker()
    c = TestClient(broker)
    c.connect("idle", keep_alive=0)
    broker.clock.advance(100_000)
    broker.tick()
    assert not c.link.closed


def test_no_will_after_disconnect_and_will_after_socket_failure():
    """mqtt.md item 25 (seed 000 l.970-972): the will goes out on an I/O error, never after
    DISCONNECT; at the will QoS and retain flag (l.1211)."""
    broker = make_broker()
    watcher = TestClient(broker)
    watcher.connect("w")
    watcher.subscribe("wills/+", qos=1)
    a = TestClient(broker)
    a.connect("a", will=p.Will("wills/a", b"a-died", qos=1, retain=True))
    a.send(p.Disconnect())
    assert watcher.publishes() == []
    b = TestClient(broker)
    b.connect("b", will=p.Will("wills/b", b"b-died", qos=1, retain=True))
    b.drop()
    [will] = watcher.publishes()
    assert (will.topic, will.payload, will.qos) == ("wills/b", b"b-died", 1)
    assert broker.retained.get("wills/b").payload == b"b-died"


def test_take_over_closes_the_old_connection_and_keeps_the_session():
    """mqtt.md decision: a second connection with a connected client id takes over; the will of
    the old one is published in 3.1.1 but not in MQIsdp v3; the session continues."""
    for level, will_expected in ((4, True), (3, False)):
        broker = make_broker()
        watcher = TestClient(broker)
        watcher.connect("watcher")
        watcher.subscribe("wills/#")
        old = TestClient(broker, level)
        old.connect("dev", clean=False, will=p.Will("wills/dev", b"x"))
        old.subscribe("cmd/dev", qos=1)
        new = TestClient(broker, level)
        ack = new.connect("dev", clean=False)
        assert old.link.closed
        assert bool(watcher.publishes()) is will_expected
        if level == 4:
            assert ack.session_present
        watcher.publish("cmd/dev", b"go", qos=1, packet_id=7)
        [msg] = new.publishes()
        assert msg.payload == b"go"


def test_clean_session_discards_and_persistent_session_queues_qos1_but_not_qos0():
    """mqtt.md items 20 and 26 (seed 000 l.957-959, 1227-1229): subscriptions survive a
    DISCONNECT of a persistent session, QoS 1/2 are kept until it reconnects, QoS 0 are not;
    clean start discards all of it."""
    broker = make_broker()
    sub = TestClient(broker)
    sub.connect("sub", clean=False)
    sub.subscribe("t/#", qos=2)
    sub.send(p.Disconnect())
    pub = TestClient(broker)
    pub.connect("pub")
    pub.publish("t/0", b"zero", qos=0)
    pub.publish("t/1", b"one", qos=1, packet_id=1)
    pub.publish("t/2", b"two", qos=2, packet_id=2)
    pub.send(p.Pubrel(2))
    back = TestClient(broker)
    ack = back.connect("sub", clean=False)
    assert ack.session_present
    got = back.publishes()
    assert [(m.topic, m.qos) for m in got] == [("t/1", 1), ("t/2", 2)]
    back.send(p.Disconnect())
    clean = TestClient(broker)
    assert not clean.connect("sub", clean=True).session_present
    pub.publish("t/1", b"again", qos=1, packet_id=3)
    assert clean.publishes() == []  # the clean start removed the subscription


def test_clean_start_resets_packet_ids_to_one():
    """mqtt.md item 20 (seed 000 l.957-959): clean start resets the message id to 1."""
    broker = make_broker()
    sub = TestClient(broker)
    sub.connect("s", clean=True)
    sub.subscribe("x", qos=1)
    pub = TestClient(broker)
    pub.connect("p")
    for i in range(3):
        pub.publish("x", b"m", qos=1, packet_id=i + 1)
    ids = [m.packet_id for m in sub.publishes()]
    assert ids == [1, 2, 3]
    sub.send(p.Disconnect())
    again = TestClient(broker)
    again.connect("s", clean=True)
    again.subscribe("x", qos=1)
    pub.publish("x", b"m", qos=1, packet_id=9)
    assert [m.packet_id for m in again.publishes()] == [1]


def test_v3_client_id_rules():
    """mqtt.md item 23 and decision: MQIsdp v3 ids are 1-23 characters; empty or longer gets
    return code 2. 3.1.1 accepts an empty id only with clean session (an id is assigned)."""
    broker = make_broker()
    assert TestClient(broker, 3).connect("x" * 24).reason_code == 2
    assert TestClient(broker, 3).connect("").reason_code == 2
    assert TestClient(broker, 3).connect("x" * 23).reason_code == 0
    assert TestClient(broker, 4).connect("", clean=False).reason_code == 2
    assert TestClient(broker, 4).connect("", clean=True).reason_code == 0
    ack5 = TestClient(broker, 5).connect("")
    assert ack5.reason_code == 0 and ack5.properties["assigned_client_identifier"]


def test_mqtt5_session_expiry_and_will_delay():
    """MQTT 5 3.1.2.11 / 3.1.3.2.2: a session ends when its expiry interval has passed after the
    disconnect; a delayed will is cancelled by a reconnect in time, else published."""
    broker = make_broker()
    watcher = TestClient(broker)
    watcher.connect("w")
    watcher.subscribe("wills/#")
    c = TestClient(broker, 5)
    c.connect("dev", clean=True, properties={"session_expiry_interval": 100},
              will=p.Will("wills/dev", b"x", properties={"will_delay_interval": 30}))
    c.drop()
    broker.clock.advance(20)
    broker.tick()
    assert watcher.publishes() == []
    again = TestClient(broker, 5)
    assert again.connect("dev", clean=False, properties={"session_expiry_interval": 100}).session_present
    broker.clock.advance(60)
    broker.tick()
    assert watcher.publishes() == []  # reconnected within the delay: no will
    again.drop()  # this connection had no will
    broker.clock.advance(99)
    broker.tick()
    assert "dev" in broker.sessions
    broker.clock.advance(2)
    broker.tick()
    assert "dev" not in broker.sessions


def test_session_expiry_zero_cannot_become_nonzero_at_disconnect():
    """MQTT 5 3.14.2.2.2: a DISCONNECT may not set a session expiry when it was 0."""
    broker = make_broker()
    c = TestClient(broker, 5)
    c.connect("c")
    c.send(p.Disconnect(0, {"session_expiry_interval": 10}))
    [d] = c.received()
    assert isinstance(d, p.Disconnect) and d.reason_code == 0x82
    assert c.link.closed


def _restart(path, clock_now: float, **settings):
    """A new broker on the same SQLite file, its clock at ``clock_now`` (time went on)."""
    from relaymq.broker.broker import Broker
    from relaymq.clock import ManualClock
    from relaymq.store.sqlite import SQLiteStore

    from .driver import Callbacks, make_config

    store = SQLiteStore(path, notify=Callbacks())
    broker = Broker(make_config(**settings), store, ManualClock(clock_now))
    broker.restore(store.load())
    return broker, store


def test_session_expiry_counts_the_time_the_broker_was_down(tmp_path):
    """MQTT 5 3.1.2.11.2 (Session Expiry Interval, counted from the disconnect), issue 2 P2
    (audit: every restart restarted the expiry clock, so regular restarts kept sessions for
    ever): the disconnect time is stored and honoured after a restart."""
    from relaymq.store.sqlite import SQLiteStore

    from .driver import Callbacks

    path = str(tmp_path / "exp.db")
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store)
    for cid, expiry in (("short", 100), ("long", 1000)):
        c = TestClient(broker, 5)
        c.connect(cid, clean=False, properties={"session_expiry_interval": expiry})
        c.send(p.Disconnect())
    broker.clock.advance(60)
    down_at = broker.clock.monotonic()
    store.close()
    broker2, store2 = _restart(path, down_at + 50)  # 110 s after the disconnect
    assert set(broker2.sessions) == {"short", "long"}
    broker2.tick()
    assert set(broker2.sessions) == {"long"}
    store2.close()


def test_delayed_will_survives_a_restart(tmp_path):
    """MQTT 5 3.1.3.2 (Will Delay Interval): a will waiting for its delay is stored with its
    persistent session, published when the delay has passed after a restart, and never when
    the client comes back in time; its message does not stay behind in the store."""
    path = str(tmp_path / "will.db")
    from relaymq.store.sqlite import SQLiteStore

    from .driver import Callbacks

    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store)
    for cid in ("late", "back"):
        c = TestClient(broker, 5)
        c.connect(cid, clean=False, properties={"session_expiry_interval": 3600},
                  will=p.Will(f"will/{cid}", cid.encode(), 1, False, {"will_delay_interval": 30}))
        c.drop()
    assert set(broker.wills.pending) == {"late", "back"}
    broker.clock.advance(10)
    now = broker.clock.monotonic()
    store.close()

    broker2, store2 = _restart(path, now + 5)  # 15 s of the 30 s delay are gone
    assert set(broker2.wills.pending) == {"late", "back"}
    watcher = TestClient(broker2)
    watcher.connect("watcher")
    watcher.subscribe("will/#", qos=1)
    back = TestClient(broker2, 5)
    back.connect("back", clean=False, properties={"session_expiry_interval": 3600})
    broker2.clock.advance(14)
    broker2.tick()
    assert watcher.publishes() == []
    broker2.clock.advance(2)
    broker2.tick()
    assert [(m.topic, m.payload) for m in watcher.publishes()] == [("will/late", b"late")]
    store2.flush()
    snap = store2.load()
    assert snap.messages == {} and all(r.will_msg_id is None for r in snap.sessions.values())
    store2.close()
