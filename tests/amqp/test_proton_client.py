"""relaymq's AMQP 1.0 listener driven by python-qpid-proton's own client (BlockingConnection),
a client nobody here wrote, over real loopback sockets, against a broker process started here.

Spec: issue 20 (the AMQP listener: queue:// and topic:// addresses, settlement, selectors,
durable subscriptions, the JMS mapping); formats-and-jms.md items 9-11 (the JMS model: six
classes, ten header fields, typed properties) and the JMS selector items (000 l.2744-2779).
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest
from proton import Message, Timeout, byte, float32, int32, short
from proton.reactor import DurableSubscription, Selector
from proton.utils import BlockingConnection, LinkDetached

from harness import BrokerProcess

from .broker import amqp_broker, put_and_get, url

WAIT = 15.0


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[BrokerProcess, int]]:
    with amqp_broker() as started:
        yield started


def connect(port: int, **kwargs: object) -> BlockingConnection:
    return BlockingConnection(url(port), timeout=WAIT, **kwargs)


def test_queue_round_trip_keeps_jms_headers_and_typed_properties(broker: tuple[BrokerProcess, int]) -> None:
    """A message put through AMQP to queue://ORDERS comes back from it with its JMS header
    fields and property types (formats-and-jms.md items 10-11; issue 20 JMS mapping)."""
    _, port = broker
    conn = connect(port)
    try:
        got = put_and_get(conn, Message(
            body="order 1", subject="OrderType", correlation_id="corr-1", durable=True, priority=7,
            reply_to="queue://REPLIES",
            properties={"i": int32(3), "s": short(2), "b": byte(1), "f": float32(1.5), "l": 2**40,
                        "d": 2.5, "flag": True, "colour": "red"}))
    finally:
        conn.close()
    assert got.body == "order 1"
    assert (got.subject, got.correlation_id, got.durable, got.priority) == ("OrderType", "corr-1", True, 7)
    assert got.reply_to == "queue://REPLIES"
    assert got.annotations["x-opt-jms-msg-type"] == 5  # TextMessage
    props = got.properties
    assert [type(props[k]) for k in ("i", "s", "b", "f")] == [int32, short, byte, float32]
    assert (props["i"], props["s"], props["b"], props["f"], props["l"], props["d"], props["flag"],
            props["colour"]) == (3, 2, 1, 1.5, 2**40, 2.5, True, "red")


def test_message_classes_cross_a_queue(broker: tuple[BrokerProcess, int]) -> None:
    """Bytes, Map and Stream messages keep their class and body through a queue
    (formats-and-jms.md item 9: the six classes)."""
    _, port = broker
    conn = connect(port)
    try:
        sender = conn.create_sender("queue://ORDERS")
        sender.send(Message(body=b"\x00\x01raw", inferred=True))
        sender.send(Message(body={"qty": int32(5), "name": "bolt"}))
        sender.send(Message(body=["a", int32(7)], inferred=True))
        receiver = conn.create_receiver("queue://ORDERS")
        got = []
        for _ in range(3):
            got.append(receiver.receive(timeout=WAIT))
            receiver.accept()
    finally:
        conn.close()
    assert [m.annotations["x-opt-jms-msg-type"] for m in got] == [3, 2, 4]
    assert got[0].body == b"\x00\x01raw"
    assert got[1].body == {"qty": 5, "name": "bolt"} and type(got[1].body["qty"]) is int32
    assert got[2].body == ["a", 7]


def test_queue_selector_takes_only_matching_messages(broker: tuple[BrokerProcess, int]) -> None:
    """A receiver with the apache.org:selector-filter:string filter gets only what the JMS
    selector selects; the rest stays on the queue for others (JMS selectors, 000 l.2744-2779)."""
    _, port = broker
    conn = connect(port)
    try:
        sender = conn.create_sender("queue://ORDERS")
        for colour, n in (("blue", 1), ("red", 2), ("red", 3), ("green", 4)):
            sender.send(Message(body=f"m{n}", properties={"colour": colour, "n": int32(n)}))
        reds = conn.create_receiver("queue://ORDERS", options=Selector("colour = 'red' AND n > 2"))
        got = reds.receive(timeout=WAIT)
        reds.accept()
        assert got.body == "m3"
        with pytest.raises(Timeout):  # nothing else matches
            reds.receive(timeout=1.5)
        reds.close()
        rest = conn.create_receiver("queue://ORDERS")
        bodies = []
        for _ in range(3):
            bodies.append(rest.receive(timeout=WAIT).body)
            rest.accept()
    finally:
        conn.close()
    assert bodies == ["m1", "m2", "m4"]


def test_released_message_is_delivered_again(broker: tuple[BrokerProcess, int]) -> None:
    """At-least-once from a queue: a released delivery goes back to the queue (the get is
    undone), an accepted one is gone (issue 20 settlement modes)."""
    _, port = broker
    conn = connect(port)
    try:
        conn.create_sender("queue://ORDERS").send(Message(body="again"))
        receiver = conn.create_receiver("queue://ORDERS", credit=1)
        first = receiver.receive(timeout=WAIT)
        receiver.release()
        second = receiver.receive(timeout=WAIT)
        receiver.accept()
        assert first.body == second.body == "again"
        with pytest.raises(Timeout):
            receiver.receive(timeout=1.0)
    finally:
        conn.close()


def test_unknown_queue_refuses_the_link(broker: tuple[BrokerProcess, int]) -> None:
    """An address naming no queue refuses the attach with amqp:not-found; the connection
    stays usable (issue 20: queue:// addresses map to the queue manager)."""
    _, port = broker
    conn = connect(port)
    try:
        with pytest.raises(LinkDetached) as refused:
            conn.create_sender("queue://NO.SUCH.QUEUE")
        assert "not-found" in str(refused.value) or "NO.SUCH.QUEUE" in str(refused.value)
        assert put_and_get(conn, Message(body="still fine")).body == "still fine"
    finally:
        conn.close()


def test_topic_publish_subscribe_with_selector(broker: tuple[BrokerProcess, int]) -> None:
    """topic://FILTER receivers are subscriptions in the topic tree (wildcards included); a
    selector filters them (issue 20; JMS selectors)."""
    _, port = broker
    topic = f"prices/{uuid.uuid4().hex[:8]}"
    conn = connect(port)
    try:
        everything = conn.create_receiver(f"topic://{topic}/#", name="everything")
        cheap = conn.create_receiver(f"topic://{topic}/#", name="cheap", options=Selector("price < 10"))
        sender = conn.create_sender(f"topic://{topic}/bolts")
        sender.send(Message(body="dear", properties={"price": int32(50)}))
        sender.send(Message(body="cheap", properties={"price": int32(5)}))
        all_got = [everything.receive(timeout=WAIT), everything.receive(timeout=WAIT)]
        everything.accept()
        cheap_got = cheap.receive(timeout=WAIT)
        cheap.accept()
    finally:
        conn.close()
    assert [m.body for m in all_got] == ["dear", "cheap"]
    assert all_got[0].address == f"topic://{topic}/bolts"
    assert all_got[0].annotations["x-opt-jms-dest"] == 1
    assert cheap_got.body == "cheap"


def test_durable_subscription_keeps_messages_while_detached(broker: tuple[BrokerProcess, int]) -> None:
    """A durable subscription (durable terminus, expiry never: Qpid JMS's
    createDurableSubscriber) receives what was published while its receiver was away; closing
    the link (JMS unsubscribe) ends it (issue 20 durable subscriptions)."""
    _, port = broker
    topic = f"news/{uuid.uuid4().hex[:8]}"
    container = f"jms-client-{uuid.uuid4().hex[:6]}"
    sub = BlockingConnection(url(port), timeout=WAIT, container_id=container)
    receiver = sub.create_receiver(f"topic://{topic}", name="sub1", options=DurableSubscription())
    receiver.detach()  # JMS: the subscriber closes, the subscription stays
    sub.close()
    pub = connect(port)
    try:
        pub.create_sender(f"topic://{topic}").send(Message(body="while away"))
    finally:
        pub.close()
    sub = BlockingConnection(url(port), timeout=WAIT, container_id=container)
    try:
        receiver = sub.create_receiver(f"topic://{topic}", name="sub1", options=DurableSubscription())
        assert receiver.receive(timeout=WAIT).body == "while away"
        receiver.accept()
        receiver.close()  # unsubscribe
    finally:
        sub.close()
    pub = connect(port)
    try:
        pub.create_sender(f"topic://{topic}").send(Message(body="after unsubscribe"))
    finally:
        pub.close()
    sub = BlockingConnection(url(port), timeout=WAIT, container_id=container)
    try:
        receiver = sub.create_receiver(f"topic://{topic}", name="sub1", options=DurableSubscription())
        with pytest.raises(Timeout):
            receiver.receive(timeout=1.5)
        receiver.close()
    finally:
        sub.close()


def test_malformed_frame_closes_only_that_connection(broker: tuple[BrokerProcess, int]) -> None:
    """Garbage after the protocol header ends that connection; another one keeps working
    (bad input gets a clear error, only that connection closes)."""
    _, port = broker
    raw = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    try:
        raw.sendall(b"AMQP\x00\x01\x00\x00" + b"\x00\x00\x00\x10\x02\x00\x00\x00garbage!")
        deadline = time.monotonic() + WAIT
        received = b""
        while time.monotonic() < deadline:
            chunk = raw.recv(4096)
            if not chunk:
                break
            received += chunk
        else:
            pytest.fail("the connection stayed open after a malformed frame")
        assert received.startswith(b"AMQP\x00\x01\x00\x00")
    finally:
        raw.close()
    conn = connect(port)
    try:
        conn.create_sender("queue://ORDERS").send(Message(body="ok"))
        r = conn.create_receiver("queue://ORDERS")
        assert r.receive(timeout=WAIT).body == "ok"
        r.accept()
    finally:
        conn.close()


def test_not_an_amqp_header_is_refused() -> None:
    """An HTTP request on the AMQP port gets the AMQP header and the close (part 2.2)."""
    with amqp_broker() as (_, port):
        raw = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        try:
            raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
            data = raw.recv(64)
            assert data == b"" or data.startswith(b"AMQP")
        finally:
            raw.close()


def test_large_message_crosses_in_many_frames(broker: tuple[BrokerProcess, int]) -> None:
    """A message larger than the engine's input buffer and than one frame (multi-frame
    transfer) is put and got whole (issue 20; the listener feeds the engine in pieces)."""
    _, port = broker
    body = bytes(range(256)) * 2048  # 512 KiB
    conn = connect(port)
    try:
        got = put_and_get(conn, Message(body=body, inferred=True))
    finally:
        conn.close()
    assert got.body == body
