"""Flows in a running broker, through real clients: the seed's telemetry flow fed by an
MQIsdp v3 device, the error queue, queue nodes, the SOAP example over HTTP, HTTPRequest,
time-outs, backout to a backout queue (flows-http.md items 2, 4, 5, 8-13; issue 6 tests)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from flow_helpers import SOAP, TELEMETRY, Client, FlowBroker, admin, flow_file, http, queue_cli, rest_get, rest_put
from harness import free_port
from relaymq.qmgr.rest_format import parse_usr

BATCH = (TELEMETRY / "batch.xml").read_bytes()
REQUEST = (SOAP / "request.xml").read_bytes()

QUEUES = ("TELEMETRY.ERRORS", "REQ", "REPLIES", "POISON", "POISON.BO", "SUBQ", "REGREPLY")


def queue_get(broker: FlowBroker, queue: str) -> dict:
    """``relaymq queue get QUEUE --url``: the message as it prints it, usr parsed."""
    done = queue_cli(broker, "get", queue, "--wait", "20")
    assert done.returncode == 0, done.stderr
    message = json.loads(done.stdout)
    message["usr"] = {n: v for n, v, _ in parse_usr([message["usr"]])} if "usr" in message else {}
    return message

@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flows")
    b = FlowBroker(queues=QUEUES)
    b.scada = (free_port(), free_port())
    b.start()
    telemetry = flow_file(tmp, TELEMETRY / "telemetry.yaml",
                          {"SCADAInput1": {"port": b.scada[0]}, "SCADAInput2": {"port": b.scada[1]}})
    deploys = [telemetry.read_bytes(), flow_file(tmp, SOAP / "soap.yaml").read_bytes()]
    for body in deploys:
        status, answer = admin(b, "POST", "", body)
        assert status == 201, answer
    yield b
    b.cleanup()


def test_telemetry_batch_gives_the_two_publications_of_item_13(broker):
    """flows-http.md items 10-13 (seed 000 l.441-504): an MQIsdp v3 device's batch gives
    exactly two publications; an MQTT 5 subscriber sees usr as user properties, a 3.1.1
    subscriber only the body (flows-http.md Decisions)."""
    v5 = Client(broker.port, "v5").subscribe("LCUnit/#")
    v311 = Client(broker.port, "v311").subscribe("LCUnit/#")
    device = Client(broker.scada[0], "v31", "dev")
    try:
        device.publish("LCUnit/12345/batch", BATCH)
        got = v5.wait_for(2)
        time.sleep(0.5)  # a third publication would have arrived by now: there must be none
        assert len(v5.received) == 2
        by_topic = {t: (p, dict(u)) for t, p, u in got}
        assert by_topic["LCUnit/12345/StateChange"] == (
            b"Changing state from 'Starting' to 'Payload' because 'The startup routine is complete'",
            {"topic": "LCUnit/12345/StateChange", "d_tstamp": "20040417104439", "i_state": "1",
             "i_old_state": "0", "b_time": "20040417103118"})
        assert by_topic["LCUnit/12345/Heartbeat"] == (
            b"", {"topic": "LCUnit/12345/Heartbeat", "d_tstamp": "20040417105126", "i_state": "1",
                  "b_time": "20040417103118"})
        assert sorted((t, p) for t, p, _ in v311.wait_for(2)) == sorted((t, p) for t, (p, _) in by_topic.items())
    finally:
        for c in (v5, v311, device):
            c.close()


def test_second_telemetry_port_feeds_the_same_flow(broker):
    """flows-http.md item 10: two telemetry inputs on different ports, one flow."""
    sub = Client(broker.port, "v5").subscribe("LCUnit/+/Heartbeat")
    device = Client(broker.scada[1], "v31", "dev")
    try:
        device.publish("any/topic", BATCH, qos=0)
        assert sub.wait_for(1)[0][0] == "LCUnit/12345/Heartbeat"
    finally:
        sub.close()
        device.close()


def test_malformed_batch_goes_to_the_error_queue_and_the_flow_keeps_running(broker):
    """flows-http.md item 10 (seed 000 l.443): errors go to an MQOutput error queue, read here
    with `relaymq queue get --url`: the batch as the device sent it, with why it failed in its
    usr folder; the next good batch is still split."""
    events = Client(broker.port, "v5").subscribe("LCUnit/12345/StateChange")
    device = Client(broker.scada[0], "v31", "dev")
    try:
        device.publish("LCUnit/12345/batch", b"<events d_tstamp='1'><StateChange>")
        error = queue_get(broker, "TELEMETRY.ERRORS")
        assert error["body"] == "<events d_tstamp='1'><StateChange>"
        assert error["usr"]["relaymq_flow"] == "telemetry" and error["usr"]["relaymq_node"] == "SplitBatch"
        assert error["usr"]["relaymq_error_text"]  # the parser's complaint
        device.publish("LCUnit/12345/batch", BATCH)
        assert events.wait_for(1)[0][0] == "LCUnit/12345/StateChange"
    finally:
        for c in (events, device):
            c.close()


def test_soap_example_answers_with_the_expected_envelope(broker):
    """flows-http.md item 9 (seed 000 l.2053-2114): the SOAP request POSTed to
    /greenpages/servlet/rpcrouter is answered 200 with the getUserNameResponse envelope and the
    default Content-Type of item 8."""
    response = http("POST", f"{broker.url}/greenpages/servlet/rpcrouter", REQUEST,
                    [("content-type", "text/xml; charset=utf-8"), ("soapaction", '""')])
    assert response.status == 200
    headers = {k.lower(): v for k, v in response.headers}
    assert headers["content-type"] == "text/xml; charset=utf-8"
    assert int(headers["content-length"]) == len(response.body)
    body = response.body.decode()
    for part in ("<ns1:getUserNameResponse", '<fullName xsi:type="xsd:string">Joseph Bloggs</fullName>',
                 '<empNum xsi:type="xsd:int">65874</empNum>', "(718)545-3623"):
        assert part in body


def test_soap_over_http_1_0_as_in_the_seed(broker):
    """flows-http.md item 8: the seed's request line is ``POST <url> HTTP/1.0``."""
    head = (f"POST /greenpages/servlet/rpcrouter HTTP/1.0\r\nHost: localhost\r\n"
            f"Content-Type: text/xml; charset=utf-8\r\nContent-Length: {len(REQUEST)}\r\nSOAPAction: \"\"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=20) as s:
        s.sendall(head.encode() + REQUEST)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK\r\n")  # seed 000 l.2088: answered in kind
    assert f"content-length: {len(body)}".encode() in head.lower()
    assert b"Joseph Bloggs" in body


def test_soap_fault_for_an_unknown_name(broker):
    """flows-http.md item 9: an error answer; the Compute sets the status through HTTPReplyHeader."""
    response = http("POST", f"{broker.url}/greenpages/servlet/rpcrouter", REQUEST.replace(b"bloggs, joe", b"nobody"))
    assert response.status == 500
    assert b"<faultstring>no user called 'nobody'</faultstring>" in response.body


def test_http_request_node_calls_a_web_service(broker, tmp_path: Path):
    """flows-http.md item 8: HTTPRequest calls the URL and continues with the response and an
    HTTPResponseHeader; here it calls the SOAP example on the same broker, and HTTPReply
    relays the answer."""
    proxy = (f"flow: proxy\nnodes:\n  In: {{type: HTTPInput, path: /proxy}}\n"
             f"  Call: {{type: HTTPRequest, url: '{broker.url}/greenpages/servlet/rpcrouter', timeout: 15}}\n"
             f"  Out: {{type: HTTPReply}}\nconnections:\n  - In.out -> Call\n  - Call.out -> Out\n  - Call.error -> Out\n")
    assert admin(broker, "POST", "", proxy.encode())[0] == 201
    try:
        response = http("POST", f"{broker.url}/proxy", REQUEST)
        assert response.status == 200 and b"Joseph Bloggs" in response.body
        fault = http("POST", f"{broker.url}/proxy", REQUEST.replace(b"bloggs, joe", b"nobody"))
        assert b"faultstring" in fault.body  # the web service's 500 went to error -> relayed
    finally:
        admin(broker, "DELETE", "/proxy")


def test_http_timeouts(broker):
    """flows-http.md item 8: a request nobody replies to gets 504 after the HTTPInput time-out;
    an HTTPRequest that times out goes to its failure terminal."""
    silent = ("flow: silent\nnodes:\n  In: {type: HTTPInput, path: /silent, timeout: 1}\n"
              "  Nothing: {type: Trace, destination: none}\nconnections:\n  - In.out -> Nothing\n")
    caller = (f"flow: caller\nnodes:\n  In: {{type: HTTPInput, path: /caller, timeout: 20}}\n"
              f"  Call: {{type: HTTPRequest, url: '{broker.url}/silent', timeout: 0.3}}\n"
              "  Why: {type: Compute, code: \"def main(c):\\n    m = c.new_message()\\n"
              "    m.mq.body = c.exception_list.children[0].get('Text').encode()\\n    return m\\n\"}\n"
              "  Out: {type: HTTPReply}\nconnections:\n  - In.out -> Call\n  - Call.failure -> Why\n  - Why.out -> Out\n")
    for body in (silent, caller):
        assert admin(broker, "POST", "", body.encode())[0] == 201
    try:
        assert http("GET", f"{broker.url}/silent").status == 504
        answer = http("POST", f"{broker.url}/caller", b"x")
        assert answer.status == 200 and b"within 0.3s" in answer.body
    finally:
        admin(broker, "DELETE", "/silent")
        admin(broker, "DELETE", "/caller")


def test_queue_nodes_request_and_reply(broker):
    """flows-http.md item 5: request/reply over queues: a Compute sets ReplyToQ, MQOutput puts
    the request, a second flow's MQInput gets it and MQReply answers to ReplyToQ, where the
    requester reads the reply over REST (CorrelId = the request's MsgId)."""
    make = ("def main(c):\n    m = c.copy_input()\n    m.mq.md.ReplyToQ = 'REPLIES'\n"
            "    m.mq.md.MsgId = b'REQUEST-ID-0000000000001'\n    return m\n")
    port = free_port()
    request = (f"flow: requester\nnodes:\n  In: {{type: SCADAInput, port: {port}}}\n"
               f"  C: {{type: Compute, code: {json.dumps(make)}}}\n  Put: {{type: MQOutput, queue: REQ, new_msg_id: false}}\n"
               "connections:\n  - In.out -> C\n  - C.out -> Put\n")
    replier = "flow: replier\nnodes:\n  In: {type: MQInput, queue: REQ}\n  R: {type: MQReply}\nconnections:\n  - In.out -> R\n"
    for body in (request, replier):
        status, answer = admin(broker, "POST", "", body.encode())
        assert status == 201, answer
    device = Client(port, "v311", "dev")
    try:
        device.publish("req", b"ping")
        status, headers, body = rest_get(broker, "REPLIES")
        assert (status, body) == (200, b"ping")
        assert headers["ibm-mq-md-correlationid"] == "ID:" + b"REQUEST-ID-0000000000001".hex()
    finally:
        device.close()
        for name in ("requester", "replier"):
            admin(broker, "DELETE", f"/{name}")


def test_backout_to_the_backout_queue_after_the_threshold(broker):
    """flows-http.md item 4; formats-and-jms.md item 13: a message put with `relaymq queue put`
    that keeps failing is redelivered and, at the backout threshold, put to the backout queue,
    where `relaymq queue get` finds it with the Throw node's exception in its usr folder."""
    poison = ("flow: poison\nbackout_threshold: 3\nbackout_queue: POISON.BO\nnodes:\n"
              "  In: {type: MQInput, queue: POISON}\n  Boom: {type: Throw, message: always, number: 3042}\n"
              "connections:\n  - In.out -> Boom\n")
    status, answer = admin(broker, "POST", "", poison.encode())
    assert status == 201, answer
    try:
        done = queue_cli(broker, "put", "POISON", "--message", "poison")
        assert done.returncode == 0, done.stderr
        backed_out = queue_get(broker, "POISON.BO")
        assert backed_out["body"] == "poison"
        assert backed_out["usr"]["relaymq_error_type"] == "UserException"
        assert backed_out["usr"]["relaymq_error_number"] == 3042
        assert backed_out["usr"]["relaymq_error_text"] == "always"
        status, answer = admin(broker, "GET", "/poison")
        assert answer["stats"]["backouts"] == 3 and answer["stats"]["backout_queue"] == 1
    finally:
        admin(broker, "DELETE", "/poison")


def test_psc_subscriber_queue_gets_usr_in_the_rfh2(broker):
    """flows-http.md items 10, 13 and Decisions: a queue subscriber registered with the psc
    protocol (seed 003 RegSub, POSTed over REST) receives the two event publications with the
    usr values in the MQRFH2 usr folder and the event text as an MQSTR body, read back over REST."""
    regsub = b"<psc><Command>RegSub</Command><Topic>LCUnit/#</Topic><QName>SUBQ</QName></psc>"
    assert rest_put(broker, "SYSTEM.BROKER.CONTROL.QUEUE", regsub, [("ibm-mq-md-replyTo", "REGREPLY")]) == 201
    assert b"<Completion>ok</Completion>" in rest_get(broker, "REGREPLY")[2]
    device = Client(broker.scada[0], "v31", "dev")
    try:
        device.publish("LCUnit/12345/batch", BATCH)
        got = []
        for _ in range(2):
            status, headers, body = rest_get(broker, "SUBQ")
            assert status == 200 and headers["content-type"].startswith("text/plain")  # MQSTR
            got.append(({n: v for n, v, _ in parse_usr([headers["ibm-mq-usr"]])}, body.decode()))
        assert sorted(got, key=lambda g: g[0]["topic"]) == [
            ({"topic": "LCUnit/12345/Heartbeat", "d_tstamp": "20040417105126", "i_state": "1",
              "b_time": "20040417103118"}, ""),
            ({"topic": "LCUnit/12345/StateChange", "d_tstamp": "20040417104439", "i_state": "1",
              "i_old_state": "0", "b_time": "20040417103118"},
             "Changing state from 'Starting' to 'Payload' because 'The startup routine is complete'")]
        assert rest_get(broker, "SUBQ", 500)[0] == 204  # exactly the two
    finally:
        device.close()
        dereg = b"<psc><Command>DeregSub</Command><Topic>LCUnit/#</Topic><QName>SUBQ</QName></psc>"
        rest_put(broker, "SYSTEM.BROKER.CONTROL.QUEUE", dereg, [("ibm-mq-md-replyTo", "REGREPLY")])
        rest_get(broker, "REGREPLY")


def test_routing_and_transform_nodes_in_the_broker(broker):
    """flows-http.md item 2, through real clients: ResetContentDescriptor (BLOB -> XMLNSC),
    Filter, Route with labelled terminals, MQJMSTransform -> JMSMQTransform, RouteToLabel and
    Label, each deciding where a device's publication goes."""
    label = ("def main(c):\n    c.local_environment.set('Destination.RouteToLabel.Destination.labelname', 'blue')\n"
             "    return c.copy_input()\n")
    port = free_port()
    body = f"""flow: routing
nodes:
  In: {{type: SCADAInput, port: {port}}}
  Xml: {{type: ResetContentDescriptor, domain: XMLNSC}}
  Big: {{type: Filter, expression: "Body.order.qty > 3"}}
  Colour: {{type: Route, filters: [{{expression: "Body.order.colour = 'red'", terminal: red}}]}}
  ToJms: {{type: MQJMSTransform}}
  ToMq: {{type: JMSMQTransform}}
  Red: {{type: Publication, topic: routed/red}}
  Other: {{type: Publication, topic: routed/other}}
  Small: {{type: Publication, topic: routed/small}}
  Pick: {{type: Compute, code: {json.dumps(label)}}}
  Jump: {{type: RouteToLabel}}
  Blue: {{type: Label, label: blue}}
  BluePub: {{type: Publication, topic: routed/label}}
connections:
  - In.out -> Xml
  - Xml.out -> Big
  - Big.true -> Colour
  - Big.false -> Small
  - Colour.red -> ToJms
  - ToJms.out -> ToMq
  - ToMq.out -> Red
  - Colour.default -> Other
  - Colour.default -> Pick
  - Pick.out -> Jump
  - Blue.out -> BluePub
"""
    status, answer = admin(broker, "POST", "", body.encode())
    assert status == 201, answer
    sub = Client(broker.port, "v5").subscribe("routed/#")
    device = Client(port, "v311", "dev")
    try:
        for payload in (b"<order><qty>9</qty><colour>red</colour></order>",
                        b"<order><qty>9</qty><colour>green</colour></order>",
                        b"<order><qty>1</qty><colour>red</colour></order>"):
            device.publish("orders", payload)
        got = sub.wait_for(4)
        assert sorted((t, p) for t, p, _ in got) == [
            ("routed/label", b"<order><qty>9</qty><colour>green</colour></order>"),
            ("routed/other", b"<order><qty>9</qty><colour>green</colour></order>"),
            ("routed/red", b"<order><qty>9</qty><colour>red</colour></order>"),
            ("routed/small", b"<order><qty>1</qty><colour>red</colour></order>")]
    finally:
        sub.close()
        device.close()
        admin(broker, "DELETE", "/routing")
