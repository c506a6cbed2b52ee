"""Nodes in a running broker through real clients, where the node-level tests run them without
one: Compute's five output terminals, and MQJMSTransform -> Compute -> JMSMQTransform mapping
MQMD/MQRFH2 to the JMS header values and properties and back (flows-http.md item 2; seed 002;
formats-and-jms.md items 15-19). Messages are put and read with the REST interface."""

from __future__ import annotations

import json

import pytest

from flow_helpers import Client, FlowBroker, admin, rest_get, rest_put
from harness import free_port
from relaymq.qmgr.rest_format import parse_usr

ROUTES = tuple(f"ROUTE.{i}" for i in range(5))

FAN_OUT = ("def main(c):\n"
           "    text = c.input.mq.body.decode()\n"
           "    targets = ['out', 'out1', 'out2', 'out3', 'out4'] if text == 'all' else [text]\n"
           "    for terminal in targets:\n"
           "        m = c.copy_input()\n"
           "        m.mq.body = ('%s via %s' % (text, terminal)).encode()\n"
           "        c.propagate(m, terminal)\n")

EDIT_JMS = ("import json\n"
            "def folder_of(message):\n"
            "    return [f for f in message.transport if f.name == 'JMSTransport'][0]\n"
            "def main(c):\n"
            "    folder = folder_of(c.input)\n"
            "    headers = folder.find('Transport_Folders.Header_Values')\n"
            "    props = folder.find('Transport_Folders.Application_Properties')\n"
            "    seen = c.new_message()\n"
            "    seen.mq.md.Format = 'MQSTR'\n"
            "    seen.mq.body = json.dumps({\n"
            "        'headers': {e.name: e.value for e in headers.children},\n"
            "        'app': {e.name: e.value for e in props.children if not e.name.startswith('JMS')}}).encode()\n"
            "    c.propagate(seen, 'out1')\n"
            "    out = c.copy_input()\n"
            "    edit = folder_of(out)\n"
            "    edit.find('Transport_Folders.Header_Values').set('JMSPriority', 2)\n"
            "    edit.find('Transport_Folders.Header_Values').set('JMSCorrelationID', 'ID:' + 'cd' * 24)\n"
            "    edit.find('Transport_Folders.Application_Properties').add('checked', True, dt='boolean')\n"
            "    return out\n")


@pytest.fixture(scope="module")
def broker():
    b = FlowBroker(queues=(*ROUTES, "JMS.IN", "JMS.SEEN", "JMS.OUT", "TRACED"))
    b.start()
    yield b
    b.cleanup()


def test_compute_propagates_to_out_and_out1_to_out4(broker):
    """Item 2 (Compute, ESQL PROPAGATE TO TERMINAL): a message goes to the terminal it names;
    'all' propagates one message to each of the five terminals, each wired to its own queue."""
    port = free_port()
    nodes = "".join(f"  Q{i}: {{type: MQOutput, queue: ROUTE.{i}}}\n" for i in range(5))
    wires = "".join(f"  - Fan.{t} -> Q{i}\n" for i, t in enumerate(("out", "out1", "out2", "out3", "out4")))
    flow = (f"flow: fan\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            f"  Fan: {{type: Compute, code: {json.dumps(FAN_OUT)}}}\n{nodes}connections:\n  - In.out -> Fan\n{wires}")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer
    device = Client(port, "v311", "dev")
    try:
        device.publish("x", b"out3")
        assert rest_get(broker, "ROUTE.3")[2] == b"out3 via out3"
        device.publish("x", b"all")
        for i, terminal in enumerate(("out", "out1", "out2", "out3", "out4")):
            assert rest_get(broker, f"ROUTE.{i}")[2] == f"all via {terminal}".encode()
        for queue in ROUTES:
            assert rest_get(broker, queue, 300)[0] == 204  # nothing else anywhere
    finally:
        device.close()
        admin(broker, "DELETE", "/fan")


def test_mq_to_jms_and_back_maps_the_headers(broker):
    """Seed 002 mapping through the two transform nodes: MQJMSTransform gives the Compute
    JMSPriority/JMSDeliveryMode/JMSCorrelationID from the MQMD and the usr folder as
    application properties; the Compute changes the header values and adds a property;
    JMSMQTransform builds the MQMD and the RFH2 usr folder from them (read with REST)."""
    flow = (f"flow: jms\nnodes:\n  In: {{type: MQInput, queue: JMS.IN}}\n  ToJms: {{type: MQJMSTransform}}\n"
            f"  Edit: {{type: Compute, code: {json.dumps(EDIT_JMS)}}}\n  ToMq: {{type: JMSMQTransform}}\n"
            "  Seen: {type: MQOutput, queue: JMS.SEEN}\n  Out: {type: MQOutput, queue: JMS.OUT}\n"
            "connections:\n  - In.out -> ToJms\n  - ToJms.out -> Edit\n  - Edit.out1 -> Seen\n"
            "  - Edit.out -> ToMq\n  - ToMq.out -> Out\n")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer
    try:
        headers = [("ibm-mq-md-priority", "7"), ("ibm-mq-md-correlationId", "ID:" + "ab" * 24),
                   ("ibm-mq-md-persistence", "persistent"), ("ibm-mq-usr", 'colour;"blue";string,size;3;i4')]
        assert rest_put(broker, "JMS.IN", b"hello jms", headers) == 201
        seen = json.loads(rest_get(broker, "JMS.SEEN")[2])
        assert seen["headers"]["JMSPriority"] == 7
        assert seen["headers"]["JMSDeliveryMode"] == 2  # persistent
        assert seen["headers"]["JMSCorrelationID"] == "ID:" + "ab" * 24
        assert seen["headers"]["JMSMessageType"] == "jms_text"
        assert seen["app"] == {"colour": "blue", "size": 3}
        status, out_headers, body = rest_get(broker, "JMS.OUT")
        assert (status, body) == (200, b"hello jms")
        assert out_headers["ibm-mq-md-priority"] == "2"
        assert out_headers["ibm-mq-md-correlationid"] == "ID:" + "cd" * 24
        assert out_headers["ibm-mq-md-persistence"] == "persistent"
        usr = {name: (value, kind) for name, value, kind in parse_usr([out_headers["ibm-mq-usr"]])}
        assert usr == {"colour": ("blue", "string"), "size": (3, "i4"), "checked": (True, "boolean")}
    finally:
        admin(broker, "DELETE", "/jms")


MARK_TRACE = ("def main(c):\n"
              "    out = c.copy_input()\n"
              "    folder = [f for f in out.transport if f.name == 'JMSTransport'][0]\n"
              "    props = folder.find('Transport_Folders.Application_Properties')\n"
              "    props.set('trace-id', props.get('trace-id') + '/checked')\n"
              "    return out\n")


def test_an_mqtt_user_property_that_is_no_java_identifier_survives_the_transforms(broker):
    """formats-and-jms.md items 15-19 with a telemetry device's MQTT 5 user property
    ``trace-id`` (flows-http.md item 10: user properties arrive in the usr folder): the
    Compute between MQJMSTransform and JMSMQTransform changes it; the message is put with
    the new value in its usr folder (REST ibm-mq-usr) instead of failing the flow."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    port = free_port()
    flow = (f"flow: traced\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            f"  ToJms: {{type: MQJMSTransform}}\n  Mark: {{type: Compute, code: {json.dumps(MARK_TRACE)}}}\n"
            "  ToMq: {type: JMSMQTransform}\n  Out: {type: MQOutput, queue: TRACED}\n"
            "connections:\n  - In.out -> ToJms\n  - ToJms.out -> Mark\n  - Mark.out -> ToMq\n  - ToMq.out -> Out\n")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer
    device = Client(port, "v5", "tracer")
    try:
        properties = Properties(PacketTypes.PUBLISH)
        properties.UserProperty = [("trace-id", "t-42")]
        device.client.publish("meter/1", b"reading", qos=1, properties=properties).wait_for_publish(20)
        status, headers, body = rest_get(broker, "TRACED")
        assert (status, body) == (200, b"reading")
        usr = {name: value for name, value, _ in parse_usr([headers["ibm-mq-usr"]])}
        assert usr["trace-id"] == "t-42/checked"
        stats = admin(broker, "GET", "/traced")[1]["stats"]
        assert stats["completed"] == 1 and stats["backouts"] == 0
    finally:
        device.close()
        admin(broker, "DELETE", "/traced")
