"""Every record kind survives a restart exactly as stored, on both engines."""

from __future__ import annotations

import copy

import pytest
from store_helpers import Engine

from relaymq.store.base import (
    NEVER_EXPIRES,
    RELEASED,
    SENT,
    DeliveryRecord,
    InboundRecord,
    SessionRecord,
    Snapshot,
    StoredMessage,
    StoreError,
    SubscriptionRecord,
)

PROPS = {
    "user_property": [("region", "eu"), ("region", "us"), ("", "é")],
    "correlation_data": b"\x00\x01\xfe\xff",
    "subscription_identifier": [3, 70000],
    "content_type": "application/json",
    "message_expiry_interval": 60,
}


def test_every_operation_survives_restart(engine: Engine) -> None:
    """Each put/update/delete leaves exactly its effect after a restart (spec README decision 4;
    mqtt.md items 6, 9, 26: QoS 1/2 messages, in-flight state and subscriptions outlive the
    connection; pubsub.md items 19, 22)."""
    store = engine.open()
    m1 = StoredMessage(1, "a/b", b"one", 1, False, copy.deepcopy(PROPS), 1_900_000_000.5, 1_700_000_000.25)
    m2 = StoredMessage(2, "a/c", b"", 2, True)
    m3 = StoredMessage(3, "gone", b"x", 1)
    for m in (m1, m2, m3):
        store.put_message(m)
    store.delete_message(3)

    s1 = SessionRecord("c1", 5, 3600, 1_700_000_100.0, "alice", 1, 1_700_000_130.5)  # a delayed will
    s2 = SessionRecord("c2", 4, NEVER_EXPIRES)
    store.put_session(s1)
    store.put_session(s2)

    store.put_subscription(SubscriptionRecord("c1", "a/#", 0))
    replaced = SubscriptionRecord("c1", "a/#", 2, True, True, 2, 17, "Body.temp > 30")
    store.put_subscription(replaced)  # same (client, filter): replaces
    shared = SubscriptionRecord("c2", "$share/g/a/+", 1)
    store.put_subscription(shared)
    store.put_subscription(SubscriptionRecord("c2", "dropped", 1))
    store.delete_subscription("c2", "dropped")

    store.put_delivery(DeliveryRecord("c2", 10, 1, 1, subscription_ids=[17, 4]))
    store.put_delivery(DeliveryRecord("c1", 11, 2, 2, True))
    store.update_delivery("c1", 11, 7, RELEASED)
    store.put_delivery(DeliveryRecord("c1", 12, 1, 1))
    store.update_delivery("c1", 12, 8, SENT)
    store.put_delivery(DeliveryRecord("c2", 13, 2, 1))
    store.delete_delivery("c2", 13)

    m4 = StoredMessage(4, "a/d", b"four", 2)
    store.put_message_and_inbound(m4, InboundRecord("c1", 5, 4))
    store.put_message_and_inbound(StoredMessage(5, "a/e", b"", 2), InboundRecord("c1", 6, 5))
    store.put_message_and_inbound(StoredMessage(6, "a/f", b"", 2), InboundRecord("c2", 5, 6))
    store.delete_inbounds([(6, True), (5, False)])  # released: 6 with its message, 5 kept

    store.put_retained("a/c", 2)
    store.put_retained("a/b", 1)

    assert engine.restart(store) == Snapshot(
        messages={1: m1, 2: m2, 4: m4, 5: StoredMessage(5, "a/e", b"", 2)},
        sessions={"c1": s1, "c2": s2},
        subscriptions=[replaced, shared],
        deliveries=[
            DeliveryRecord("c2", 10, 1, 1, subscription_ids=[17, 4]),
            DeliveryRecord("c1", 11, 2, 2, True, 7, RELEASED),
            DeliveryRecord("c1", 12, 1, 1, False, 8, SENT),
        ],
        inbound=[InboundRecord("c1", 5, 4)],
        retained={"a/b": 1, "a/c": 2},
        next_msg_id=7,
        next_seq=14,
    )


def test_delete_session_cascades_to_the_clients_rows_only(engine: Engine) -> None:
    """Deleting a session removes its subscriptions, deliveries and inbound ids, nothing of
    another client's and no message (mqtt.md item 20: clean start discards the client's state;
    base.Store contract)."""
    store = engine.open()
    store.put_message(StoredMessage(1, "t", b"p", 1))
    for msg_id, client in ((2, "gone"), (3, "kept")):
        store.put_session(SessionRecord(client, 4, NEVER_EXPIRES))
        store.put_subscription(SubscriptionRecord(client, "t", 1))
        store.put_message_and_inbound(StoredMessage(msg_id, "t", b"q", 2), InboundRecord(client, 9, msg_id))
    store.put_delivery(DeliveryRecord("gone", 1, 1, 1))
    store.put_delivery(DeliveryRecord("kept", 2, 1, 1))
    store.put_delivery(DeliveryRecord("gone", 3, 1, 1))
    store.delete_session("gone")

    snap = engine.restart(store)
    assert list(snap.sessions) == ["kept"]
    assert [s.client_id for s in snap.subscriptions] == ["kept"]
    assert [(d.client_id, d.seq) for d in snap.deliveries] == [("kept", 2)]
    assert [(r.client_id, r.packet_id) for r in snap.inbound] == [("kept", 9)]
    assert list(snap.messages) == [1, 2, 3]  # the gone client's message loses its state only


def test_retained_is_replaced_and_deleted_per_topic(engine: Engine) -> None:
    """One retained publication per topic; a new one replaces it, a delete removes it and
    leaves the others; retained survive restart (pubsub.md items 21, 22; mqtt.md item 31)."""
    store = engine.open()
    store.put_retained("x", 1)
    store.put_retained("y", 2)
    store.put_retained("x", 3)
    store.put_retained("z", 4)
    store.delete_retained("z")
    store.delete_retained("never-there")
    assert engine.restart(store).retained == {"x": 3, "y": 2}


def test_properties_round_trip_and_are_copied_at_submission(engine: Engine) -> None:
    """MQTT 5 properties (bytes, user-property pairs, lists of ints) come back equal and with
    their types (tuples stay tuples, bytes stay bytes); mutating a record after submitting it
    does not change what was stored (spec README decision 4: what was acknowledged is what is
    kept), a payload given as a bytearray included (the message holds a copy of it: bytes),
    compiled (``store/records.py``: docs/architecture.md, "Compiled modules") or not."""
    store = engine.open()
    buffer = bytearray(b"payload")
    message = StoredMessage(1, "p", buffer, 1, properties=copy.deepcopy(PROPS))
    delivery = DeliveryRecord("c", 1, 1, 1, subscription_ids=[1, 2])
    store.put_message(message)
    store.put_delivery(delivery)
    message.properties["user_property"].append(("late", "change"))
    buffer[0:1] = b"P"
    assert message.payload == b"payload" and type(message.payload) is bytes
    delivery.state = SENT
    delivery.subscription_ids.append(3)

    snap = engine.restart(store)
    stored = snap.messages[1]
    assert stored.payload == b"payload" and type(stored.payload) is bytes
    assert stored.properties == PROPS
    assert stored.properties["user_property"][0] == ("region", "eu")
    assert type(stored.properties["user_property"][0]) is tuple
    assert type(stored.properties["correlation_data"]) is bytes
    assert snap.deliveries == [DeliveryRecord("c", 1, 1, 1, subscription_ids=[1, 2])]


def test_numbering_continues_above_deleted_ids(engine: Engine) -> None:
    """next_msg_id / next_seq stay above every id ever stored even when its rows are gone, so a
    restarted broker never reuses one (spec README decision 4; Snapshot contract)."""
    store = engine.open()
    store.put_message(StoredMessage(41, "t", b"", 1))
    store.put_delivery(DeliveryRecord("c", 99, 41, 1))
    store.put_message(StoredMessage(5, "t", b"", 1))
    store.delete_delivery("c", 99)
    store.delete_message(41)
    snap = engine.restart(store)
    assert (snap.next_msg_id, snap.next_seq) == (42, 100)
    assert list(snap.messages) == [5] and snap.deliveries == []


def test_unstorable_property_is_refused_at_submission(engine: Engine) -> None:
    """A property value that cannot round-trip safely (anything but str, int, bytes, lists,
    pairs) raises TypeError in the caller and leaves the store usable: properties are never
    pickled (task brief; spec README decision 4)."""
    store = engine.open()
    with pytest.raises(TypeError, match="set"):
        store.put_message(StoredMessage(1, "t", b"", 1, properties={"bad": {1, 2}}))
    store.put_message(StoredMessage(2, "t", b"", 1))
    assert list(engine.restart(store).messages) == [2]


def test_closed_store_refuses_further_calls(engine: Engine) -> None:
    """After close() every call raises StoreError; a second close() is harmless (base.Store
    contract)."""
    store = engine.open()
    store.close()
    store.close()
    with pytest.raises(StoreError):
        store.put_retained("t", 1)
    with pytest.raises(StoreError):
        store.on_durable(lambda: None)
    with pytest.raises(StoreError):
        store.load()


def test_read_deliveries_pages_a_clients_backlog_in_seq_order(engine: Engine) -> None:
    """Issue 2 limits ("keep QoS 1/2 in the store"): a backlog kept only in the store is read
    back a page at a time, in seq order, with its messages, including writes not yet committed."""
    store = engine.open()
    for i in range(1, 8):
        store.put_message(StoredMessage(i, f"t/{i}", f"p{i}".encode(), 1))
        store.put_delivery(DeliveryRecord("c", i * 10, i, 1, False, None, 0, [i]))
    store.put_delivery(DeliveryRecord("other", 25, 2, 1))
    store.delete_delivery("c", 30)
    page = store.read_deliveries("c", 10, 3)
    assert [(rec.seq, msg.payload, rec.subscription_ids) for rec, msg in page] == [
        (20, b"p2", [2]), (40, b"p4", [4]), (50, b"p5", [5])]
    assert [rec.seq for rec, _ in store.read_deliveries("c", 50, 10)] == [60, 70]
    assert store.read_deliveries("nobody", 0, 10) == []


def test_a_windows_states_and_a_reads_acknowledgements_go_in_one_call_each(engine: Engine) -> None:
    """Row 8 (a backlog drained): a refilled window's SENT states (``update_deliveries``) and a
    read's acknowledged deliveries (``delete_deliveries``, each with its message when it held
    the last reference) survive a restart as one call each; more rows than one combined
    statement carries, two clients' rows in one batch, and nothing but the named rows goes."""
    store = engine.open()
    for seq in range(1, 151):
        store.put_message(StoredMessage(seq, "t/c", b"c", 1))
        store.put_delivery(DeliveryRecord("c", seq, seq, 1))
        store.put_message(StoredMessage(1000 + seq, "t/d", b"d", 1))
        store.put_delivery(DeliveryRecord("d", 1000 + seq, 1000 + seq, 1))
    store.flush()  # committed: the deletes below reach the database, none cancels a put
    with store.unit():
        store.delete_deliveries("c", [(seq, seq if seq % 2 else None) for seq in range(1, 101)])
        store.delete_deliveries("d", [(1000 + seq, None) for seq in range(1, 81)])
        store.update_deliveries("c", [(seq, seq - 100, SENT) for seq in range(101, 151)])
    snap = engine.restart(store)
    kept = {(d.client_id, d.seq): (d.packet_id, d.state) for d in snap.deliveries}
    assert kept == {**{("c", seq): (seq - 100, SENT) for seq in range(101, 151)},
                    **{("d", 1000 + seq): (None, 0) for seq in range(81, 151)}}
    assert set(snap.messages) == ({seq for seq in range(1, 151) if seq > 100 or not seq % 2}
                                  | set(range(1001, 1151)))
