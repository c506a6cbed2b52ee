"""The Publication node in a running broker: subscription points and the noMatch terminal,
through real clients - a device on a SCADAInput port, an MQTT 5 subscriber (paho) and
``psc`` queue subscribers registered and read back over the REST interface (flows-http.md
items 2, 10; seed 003 l.1925-1962: the stock-price example, dollars at the default
subscription point and pounds at "Pounds")."""

from __future__ import annotations

import json
import time

import pytest

from flow_helpers import Client, FlowBroker, admin, rest_get, rest_put
from harness import free_port

CONTROL = "SYSTEM.BROKER.CONTROL.QUEUE"
QUEUES = ("DOLLARS.SUBS", "POUNDS.SUBS", "PSC.REPLY", "NOMATCH", "MATCHED")

TO_POUNDS = ("def main(c):\n"
             "    m = c.copy_input()\n"
             "    m.mq.body = ('%g' % (float(c.input.mq.body) * 0.5)).encode()\n"
             "    return m\n")


def register(broker: FlowBroker, topic: str, queue: str, point: str | None = None) -> None:
    """RegSub over REST, as a queue application registers (pubsub.md item 26); the pscr
    answer on PSC.REPLY must say ok."""
    sub_point = f"<SubPoint>{point}</SubPoint>" if point else ""
    command = f"<psc><Command>RegSub</Command><Topic>{topic}</Topic><QName>{queue}</QName>{sub_point}</psc>"
    assert rest_put(broker, CONTROL, command.encode(), [("ibm-mq-md-replyTo", "PSC.REPLY")]) == 201
    status, _, body = rest_get(broker, "PSC.REPLY")
    assert status == 200 and b"<Completion>ok</Completion>" in body, body


@pytest.fixture(scope="module")
def broker():
    b = FlowBroker(queues=QUEUES)
    b.start()
    yield b
    b.cleanup()


def test_stock_prices_in_dollars_and_pounds_reach_the_subscribers_of_each_point(broker):
    """Seed 003 l.1925-1962: a flow with a Publication at the default subscription point
    (dollars) and one at "Pounds" (the converted price). The MQTT 5 subscriber and the queue
    subscriber at the default point get the dollar price only; the queue subscriber at
    "Pounds" gets the pound price only, with psc.SubPoint in its MQRFH2 - each exactly once."""
    register(broker, "Stock/#", "DOLLARS.SUBS")
    register(broker, "Stock/#", "POUNDS.SUBS", "Pounds")
    port = free_port()
    flow = (f"flow: stocks\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            "  Dollars: {type: Publication}\n"
            f"  Convert: {{type: Compute, code: {json.dumps(TO_POUNDS)}}}\n"
            "  Pounds: {type: Publication, subscription_point: Pounds}\n"
            "connections:\n  - In.out -> Dollars\n  - In.out -> Convert\n  - Convert.out -> Pounds\n")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer
    mqtt_sub = Client(broker.port, "v5").subscribe("Stock/#")
    device = Client(port, "v311", "ticker")
    try:
        device.publish("Stock/IBM", b"120")
        assert [(t, p) for t, p, _ in mqtt_sub.wait_for(1)] == [("Stock/IBM", b"120")]
        status, headers, body = rest_get(broker, "DOLLARS.SUBS")
        assert (status, body) == (200, b"120")
        status, headers, body = rest_get(broker, "POUNDS.SUBS")
        assert (status, body) == (200, b"60")
        # Exactly once, and nothing crossed over between the points.
        assert rest_get(broker, "DOLLARS.SUBS", 1000)[0] == 204
        assert rest_get(broker, "POUNDS.SUBS", 1000)[0] == 204
        time.sleep(0.3)
        assert len(mqtt_sub.received) == 1
        stats = admin(broker, "GET", "/stocks")[1]["stats"]
        assert stats["completed"] == 1 and stats["backouts"] == 0
    finally:
        mqtt_sub.close()
        device.close()
        admin(broker, "DELETE", "/stocks")


def test_pounds_subscriber_sees_the_subscription_point_in_its_rfh2(broker):
    """pubsub.md (seed 003 l.5902-5914): a publication delivered from a named point carries
    psc.SubPoint; read back with the queue manager's own REST client and decoded."""
    register(broker, "Rates/#", "POUNDS.SUBS", "Pounds")
    port = free_port()
    flow = (f"flow: rates\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            "  Pounds: {type: Publication, subscription_point: Pounds}\nconnections:\n  - In.out -> Pounds\n")
    assert admin(broker, "POST", "", flow.encode())[0] == 201
    device = Client(port, "v5", "ticker")
    try:
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        props = Properties(PacketTypes.PUBLISH)
        props.UserProperty = [("currency", "GBP")]
        device.client.publish("Rates/GBP", b"0.79", 1, properties=props).wait_for_publish(20)
        status, headers, body = rest_get(broker, "POUNDS.SUBS")
        assert (status, body) == (200, b"0.79")
        assert "currency;GBP" in headers.get("ibm-mq-usr", "").replace('"', "")
    finally:
        device.close()
        admin(broker, "DELETE", "/rates")


def test_publication_takes_no_match_when_nobody_subscribed(broker):
    """The Publication node's noMatch terminal: taken when no subscription at its point
    matches the topic; out when one does (checked with queues read over REST)."""
    port = free_port()
    flow = (f"flow: lonely\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            "  Pub: {type: Publication, subscription_point: Nobody}\n"
            "  Missed: {type: MQOutput, queue: NOMATCH}\n  Hit: {type: MQOutput, queue: MATCHED}\n"
            "connections:\n  - In.out -> Pub\n  - Pub.noMatch -> Missed\n  - Pub.out -> Hit\n")
    assert admin(broker, "POST", "", flow.encode())[0] == 201
    device = Client(port, "v311", "dev")
    try:
        device.publish("Lonely/1", b"first")
        status, _, body = rest_get(broker, "NOMATCH")
        assert (status, body) == (200, b"first")
        register(broker, "Lonely/#", "DOLLARS.SUBS", "Nobody")
        device.publish("Lonely/2", b"second")
        status, _, body = rest_get(broker, "MATCHED")
        assert (status, body) == (200, b"second")
        assert rest_get(broker, "DOLLARS.SUBS")[2] == b"second"
        assert rest_get(broker, "NOMATCH", 500)[0] == 204
    finally:
        device.close()
        admin(broker, "DELETE", "/lonely")
