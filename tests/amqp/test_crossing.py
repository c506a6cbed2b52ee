"""A JMS-typed message crossing protocols with its headers and properties: AMQP -> MQTT 5
(paho-mqtt), MQTT 5 -> AMQP, and AMQP -> an MQ-format queue read through the IBM-shaped REST
interface. Clients: python-qpid-proton and paho-mqtt, over loopback sockets.

Spec: issue 20 ("a message keeps its JMS headers across MQTT 5, MQ-format queues and AMQP");
formats-and-jms.md items 10-11 (header fields, typed properties), 15-17 (JMS <-> MQMD/MQRFH2:
JMSCorrelationID, JMSType <-> mcd.Type, JMSPriority <-> Priority).
"""

from __future__ import annotations

import base64
import queue
import urllib.request
import uuid
from collections.abc import Iterator

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from proton import Message, int32
from proton.utils import BlockingConnection

from harness import BrokerProcess

from .broker import amqp_broker, url

WAIT = 15.0


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[BrokerProcess, int]]:
    with amqp_broker() as started:
        yield started


def mqtt5(broker: BrokerProcess) -> tuple[mqtt.Client, queue.Queue[mqtt.MQTTMessage]]:
    inbox: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
    connected: queue.Queue[object] = queue.Queue()
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"x-{uuid.uuid4().hex[:8]}", protocol=mqtt.MQTTv5)
    client.on_message = lambda c, u, m: inbox.put(m)
    client.on_connect = lambda c, u, f, rc, p: connected.put(rc)
    client.on_subscribe = lambda c, u, mid, rcs, p: connected.put(rcs)
    client.connect(broker.host, broker.port)
    client.loop_start()
    connected.get(timeout=WAIT)
    return client, inbox


def test_amqp_to_mqtt5_subscriber(broker: tuple[BrokerProcess, int]) -> None:
    """An AMQP TextMessage on topic://T reaches an MQTT 5 subscriber of T with JMSType,
    JMSPriority, JMSCorrelationID (Correlation Data), JMSReplyTo (Response Topic) and its
    properties (user properties) intact."""
    proc, port = broker
    topic = f"cross/{uuid.uuid4().hex[:8]}"
    client, inbox = mqtt5(proc)
    try:
        client.subscribe(topic, 1)
        conn = BlockingConnection(url(port), timeout=WAIT)
        try:
            # the subscription is in place once a probe published after it comes back
            sender = conn.create_sender(f"topic://{topic}")
            while True:
                sender.send(Message(body="probe"))
                try:
                    if inbox.get(timeout=1.0).payload == b"probe":
                        break
                except queue.Empty:
                    continue
            sender.send(Message(body="hello mqtt", subject="Greeting", priority=6, correlation_id="corr-7",
                                reply_to="topic://answers", properties={"region": "EU", "n": int32(42)}))
        finally:
            conn.close()
        got = inbox.get(timeout=WAIT)
    finally:
        client.loop_stop()
        client.disconnect()
    assert got.topic == topic and got.payload == b"hello mqtt"
    users = dict(got.properties.UserProperty)
    assert users["JMSType"] == "Greeting" and users["JMSPriority"] == "6"
    assert users["region"] == "EU" and users["n"] == "42"
    assert users["JMS_Class"] == "jms_text"
    assert got.properties.CorrelationData == b"corr-7"
    assert got.properties.ResponseTopic == "answers"


def test_mqtt5_publication_to_amqp_receiver(broker: tuple[BrokerProcess, int]) -> None:
    """An MQTT 5 PUBLISH with user properties, Correlation Data and Response Topic reaches an
    AMQP receiver as a JMS message: properties, JMSCorrelationID, JMSReplyTo, JMSType."""
    proc, port = broker
    topic = f"cross/{uuid.uuid4().hex[:8]}"
    conn = BlockingConnection(url(port), timeout=WAIT)
    client, _ = mqtt5(proc)
    try:
        receiver = conn.create_receiver(f"topic://{topic}")
        props = Properties(PacketTypes.PUBLISH)
        props.UserProperty = [("JMSType", "Reading"), ("site", "plant-4")]
        props.CorrelationData = b"req-9"
        props.ResponseTopic = "replies/here"
        client.publish(topic, b"21.5", qos=1, properties=props).wait_for_publish(WAIT)
        got = receiver.receive(timeout=WAIT)
        receiver.accept()
    finally:
        client.loop_stop()
        client.disconnect()
        conn.close()
    assert got.subject == "Reading" and got.correlation_id == "req-9"
    assert got.reply_to == "topic://replies/here"
    assert got.properties["site"] == "plant-4"
    assert got.address == f"topic://{topic}"
    assert got.annotations["x-opt-jms-msg-type"] == 3  # no class given, payload format 0: bytes
    assert got.body == b"21.5"


def test_amqp_to_mq_format_queue(broker: tuple[BrokerProcess, int]) -> None:
    """An AMQP message put to queue://JMSQ is an MQ-format message with an MQRFH2: read by
    the REST interface (another entrance, IBM's shape), its MQMD priority, correlation id and
    persistence and its typed usr properties are there."""
    proc, port = broker
    conn = BlockingConnection(url(port), timeout=WAIT)
    try:
        conn.create_sender("queue://JMSQ").send(Message(
            body="to mq", subject="Order", priority=8, correlation_id="ID:" + "ab" * 24, durable=True,
            properties={"colour": "red", "n": int32(3)}))
    finally:
        conn.close()
    token = base64.b64encode(proc.admin_credentials.read_text().strip().encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{proc.http_port}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/JMSQ/message",
        method="DELETE", headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        headers = {k.lower(): v for k, v in response.headers.items()}
        body = response.read()
    assert body == b"to mq"
    assert headers["ibm-mq-md-priority"] == "8"
    assert headers["ibm-mq-md-persistence"] in ("persistent", "1")
    assert headers["ibm-mq-md-correlationid"].lower() == "id:" + "ab" * 24
    usr = headers["ibm-mq-usr"]
    assert "colour;red" in usr.replace('"', "") and "n;3;i4" in usr
