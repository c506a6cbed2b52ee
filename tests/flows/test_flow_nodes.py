"""The node library and the engine, run without a broker: every transforming node over real
messages (the same code the Spark pipeline maps over DataFrames), the output nodes recording
into a unit of work, failure/catch paths and TryCatch (flows-http.md items 1-5, 8)."""

from __future__ import annotations

import pytest

from flow_helpers import TELEMETRY
from relaymq.flows import Assembly, CollectingPorts, FlowException, build_flow, evaluate_node, load_flow
from relaymq.flows import http_headers
from relaymq.message.mqtt_mapping import from_mqtt, mqtt_publication
from relaymq.flows.registry import NODE_TYPES
from relaymq.message.constants import MQMT_REPLY, MQRO_PASS_CORREL_ID
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqrfh2 import MQRFH2
from relaymq.message.tree import Element

BATCH = (TELEMETRY / "batch.xml").read_bytes()


def message(usr: dict | None = None, body: bytes = b"", domain: str = "BLOB", topic: str | None = None) -> Message:
    rfh2 = MQRFH2(Format="MQSTR")
    if topic:
        psc = Element("psc")
        psc.add("Topic", topic)
        rfh2.folders.append(psc)
    if usr:
        folder = Element("usr")
        for k, v in usr.items():
            folder.add(k, v)
        rfh2.folders.append(folder)
    return Message(MQMessage(headers=[rfh2] if rfh2.folders else [], body=body), configured_domain=domain)


def single(kind: str, **props):
    return NODE_TYPES[kind]("N", props)


def chain(*nodes: tuple[str, dict], connections: list[str] | None = None, **top) -> object:
    """A flow In(MQInput) -> first node -> ... each `out` to the next, unless connections are given."""
    spec = {"In": {"type": "MQInput", "queue": "IN"}}
    names = ["In"]
    for i, (kind, props) in enumerate(nodes):
        spec[f"N{i}"] = {"type": kind, **props}
        names.append(f"N{i}")
    if connections is None:
        connections = [f"{a}.out -> {b}" for a, b in zip(names, names[1:], strict=False)]
    return build_flow({"flow": "t", "nodes": spec, "connections": connections, **top})


# -- the telemetry Compute (items 11-13) -------------------------------------------------------

def test_telemetry_compute_splits_the_seed_batch():
    """flows-http.md items 12-13; seed 000 l.479-504: two messages, MQRFH2 CCSID 1208, Format
    MQSTR, NameValueCCSID 1208, psc.Topic, usr = attributes + b_time, body = CDATA text."""
    flow = load_flow(str(TELEMETRY / "telemetry.yaml"))
    source = from_mqtt("dev/1", BATCH, 1, domain="XMLNS")
    source.mq.md.UserIdentifier = "device1"
    ports = flow.run_sync(source)
    assert [p[0] for p in ports.publications] == ["LCUnit/12345/StateChange", "LCUnit/12345/Heartbeat"]
    first, second = (p[1] for p in ports.publications)
    rfh2 = first.mq.first_rfh2()
    assert (rfh2.CodedCharSetId, rfh2.Format.strip(), rfh2.NameValueCCSID) == (1208, "MQSTR", 1208)
    assert first.mq.md.UserIdentifier == "device1"  # MQMD copied from the input
    assert dict(mqtt_publication(first)[1]["user_property"]) == {
        "topic": "LCUnit/12345/StateChange", "d_tstamp": "20040417104439", "i_state": "1",
        "i_old_state": "0", "b_time": "20040417103118"}
    assert first.mq.body == b"Changing state from 'Starting' to 'Payload' because 'The startup routine is complete'"
    assert dict(mqtt_publication(second)[1]["user_property"]) == {
        "topic": "LCUnit/12345/Heartbeat", "d_tstamp": "20040417105126", "i_state": "1", "b_time": "20040417103118"}
    assert second.mq.body == b""  # no CDATA, child elements not copied
    # the message survives MQ encoding: a queue subscriber reads the same folders
    decoded = Message.from_bytes(first.to_bytes())
    assert decoded.mq.first_rfh2().get("usr.b_time") == "20040417103118"


def test_malformed_batch_raises_and_publishes_nothing():
    """flows-http.md item 10: a batch that does not parse is an error of the flow."""
    flow = load_flow(str(TELEMETRY / "telemetry.yaml"))
    with pytest.raises(FlowException) as info:
        flow.run_sync(from_mqtt("dev/1", b"<events><broken", 1, domain="XMLNS"))
    assert info.value.node == "SplitBatch"


# -- Compute -------------------------------------------------------------------------------------

def test_compute_propagates_several_messages_to_several_terminals():
    """flows-http.md item 2: Compute may emit several messages (ESQL PROPAGATE), to any of
    its terminals; returning a Message propagates it to out."""
    code = (
        "def main(c):\n"
        "    for i in range(3):\n"
        "        m = c.new_message()\n"
        "        m.mq.body = str(i).encode()\n"
        "        c.propagate(m, 'out1' if i == 1 else 'out')\n"
    )
    node = single("Compute", code=code)
    out = evaluate_node(node, message(body=b"x"))
    assert [(t, m.mq.body) for t, m in out] == [("out", b"0"), ("out1", b"1"), ("out", b"2")]
    returns = single("Compute", code="def main(c):\n    return c.copy_input()\n")
    assert [(t, m.mq.body) for t, m in evaluate_node(returns, message(body=b"kept"))] == [("out", b"kept")]


def test_compute_from_module():
    """A Compute function may live in an importable module."""
    import json

    node = single("Compute", module="json", function="dumps")
    assert node.function is json.dumps


# -- Filter, Route, Label ---------------------------------------------------------------------

@pytest.mark.parametrize("usr, terminal", [({"colour": "blue"}, "true"), ({"colour": "red"}, "false"), ({}, "unknown")])
def test_filter_terminals(usr, terminal):
    """README decision 3; flows-http.md item 2: Filter routes by the selector's three values."""
    node = single("Filter", expression="usr.colour = 'blue'")
    assert [t for t, _ in evaluate_node(node, message(usr))] == [terminal]


def test_filter_reads_the_body():
    """README decision 3: dotted references into the parsed body (XML compares numerically)."""
    node = single("Filter", expression="Body.order.qty > 3")
    assert evaluate_node(node, message(body=b"<order><qty>10</qty></order>", domain="XMLNSC"))[0][0] == "true"


def test_route_all_first_and_default():
    """flows-http.md item 2: Route sends to the labelled terminals whose filter matches."""
    rows = [{"expression": "usr.n > 1", "terminal": "big"}, {"expression": "usr.n > 5", "terminal": "huge"}]
    every = single("Route", filters=rows)
    first = single("Route", filters=rows, distribution="first")
    big = message({"n": 9})
    assert [t for t, _ in evaluate_node(every, big)] == ["big", "huge"]
    assert [t for t, _ in evaluate_node(first, big)] == ["big"]
    assert [t for t, _ in evaluate_node(every, message({"n": 0}))] == ["default"]


def test_route_to_label():
    """flows-http.md item 2: a Compute names labels in LocalEnvironment; RouteToLabel jumps."""
    code = ("def main(c):\n"
            "    c.local_environment.set('Destination.RouteToLabel.Destination.labelname', c.input.get('MQRFH2.usr.to'))\n"
            "    return c.copy_input()\n")
    flow = build_flow({"flow": "t", "nodes": {
        "In": {"type": "MQInput", "queue": "Q"},
        "Pick": {"type": "Compute", "code": code},
        "Jump": {"type": "RouteToLabel"},
        "A": {"type": "Label", "label": "alpha"}, "B": {"type": "Label", "label": "beta"},
        "OutA": {"type": "MQOutput", "queue": "QA"}, "OutB": {"type": "MQOutput", "queue": "QB"}},
        "connections": ["In.out -> Pick", "Pick.out -> Jump", "A.out -> OutA", "B.out -> OutB"]})
    assert [q for q, _ in flow.run_sync(message({"to": "beta"})).puts] == ["QB"]
    with pytest.raises(FlowException, match="no Label node with label 'gamma'"):
        flow.run_sync(message({"to": "gamma"}))


# -- transforms ---------------------------------------------------------------------------------

def test_mq_jms_transform_and_back():
    """formats-and-jms.md items 15-19: MQJMSTransform exposes the JMS header values and
    properties; a change there is carried into the MQRFH2 by JMSMQTransform."""
    to_jms = single("MQJMSTransform")
    source = message({"colour": "blue"}, body=b"hello")
    source.mq.md.Priority = 7
    [(_, jms_view)] = evaluate_node(to_jms, source)
    folder = next(f for f in jms_view.transport if f.name == "JMSTransport")
    assert folder.get("Transport_Folders.Header_Values.JMSPriority") == 7
    assert folder.get("Transport_Folders.Application_Properties.colour") == "blue"
    folder.set("Transport_Folders.Application_Properties.size", "XL")
    folder.set("Transport_Folders.Header_Values.JMSPriority", 2)
    [(_, back)] = evaluate_node(single("JMSMQTransform"), jms_view)
    assert back.mq.md.Priority == 2
    assert back.mq.first_rfh2().get("usr.size") == "XL"
    assert back.mq.first_rfh2().get("usr.colour") == "blue"
    assert all(f.name != "JMSTransport" for f in back.transport)


def test_mqtt_user_properties_enter_the_usr_folder_when_it_can_hold_their_names():
    """flows-http.md item 10 (user properties in usr): ``trace-id`` is an XML name and kept;
    a name with a space or a colon cannot be a usr element and is left out; a repeated name
    keeps its first value."""
    message = from_mqtt("dev/1", b"x", 1, [("trace-id", "t-1"), ("a b", "no"), ("ns:x", "no"), ("trace-id", "t-2")])
    usr = message.mq.first_rfh2().folder("usr")
    assert [(c.name, c.value) for c in usr.children] == [("trace-id", "t-1")]


def test_a_changed_property_that_is_no_java_identifier_is_kept():
    """formats-and-jms.md items 15-19 with an MQTT user property such as ``trace-id`` (not a
    Java identifier, so JMS cannot set it): a Compute that changes it, or adds another such
    name, between the transforms gets the new value into the MQRFH2 usr folder instead of a
    DataTypeError failing the message."""
    [(_, jms_view)] = evaluate_node(single("MQJMSTransform"), message({"trace-id": "abc"}, body=b"x"))
    folder = next(f for f in jms_view.transport if f.name == "JMSTransport")
    assert folder.get("Transport_Folders.Application_Properties.trace-id") == "abc"
    folder.set("Transport_Folders.Application_Properties.trace-id", "abc-checked")
    folder.set("Transport_Folders.Application_Properties.hop-count", 2)
    [(_, back)] = evaluate_node(single("JMSMQTransform"), jms_view)
    rfh2 = back.mq.first_rfh2()
    assert (rfh2.get("usr.trace-id"), rfh2.get("usr.hop-count")) == ("abc-checked", 2)


def test_reset_content_descriptor_reparses_the_same_bytes():
    """formats-and-jms.md items 6-7: a BLOB that is XML becomes readable as XMLNSC."""
    blob = message(body=b"<a><b>7</b></a>")
    [(_, out)] = evaluate_node(single("ResetContentDescriptor", domain="xmlnsc"), blob)
    assert out.domain == "XMLNSC" and out.body().get("a.b") == "7"
    assert out.mq.body == blob.mq.body


# -- Trace, Throw, TryCatch, failure terminals --------------------------------------------------

def test_trace_renders_paths_and_passes_the_message_on():
    """flows-http.md item 2: Trace writes a line built from the tree and changes nothing."""
    flow = chain(("Trace", {"pattern": "prio=${Root.MQMD.Priority} colour=${usr.colour} x=${Body.x}", "destination": "file", "file": "/nonexistent/t.log"}),
                 ("MQOutput", {"queue": "OUT"}))
    source = message({"colour": "blue"}, body=b"<x>1</x>", domain="XMLNSC")
    source.mq.md.Priority = 4
    ports = flow.run_sync(source)
    assert ports.traces == [("N0", "prio=4 colour=blue x=1", "/nonexistent/t.log")]
    assert [q for q, _ in ports.puts] == ["OUT"]


def test_throw_goes_to_trycatch_catch_and_discards_try_outputs():
    """flows-http.md item 4: an exception on the try path goes to catch with the exception
    list; what the try path had put is discarded."""
    flow = build_flow({"flow": "t", "nodes": {
        "In": {"type": "MQInput", "queue": "Q"}, "Try": {"type": "TryCatch"},
        "Early": {"type": "MQOutput", "queue": "EARLY"}, "Boom": {"type": "Throw", "message": "bad order", "number": 3042},
        "Log": {"type": "Trace", "pattern": "${ExceptionList}", "destination": "log"},
        "Caught": {"type": "MQOutput", "queue": "CAUGHT"}},
        "connections": ["In.out -> Try", "Try.try -> Early", "Early.out -> Boom", "Try.catch -> Log", "Log.out -> Caught"]})
    ports = flow.run_sync(message(body=b"m"))
    assert [q for q, _ in ports.puts] == ["CAUGHT"]
    assert ports.traces[0][1] == "UserException 3042 in Boom: bad order"


def test_a_raising_compute_goes_to_its_failure_terminal():
    """flows-http.md item 4: an error in a node goes to its failure terminal when connected."""
    flow = build_flow({"flow": "t", "nodes": {
        "In": {"type": "MQInput", "queue": "Q"},
        "C": {"type": "Compute", "code": "def main(c):\n    raise RuntimeError('kaput')\n"},
        "Why": {"type": "Trace", "pattern": "${ExceptionList}", "destination": "log"},
        "Err": {"type": "MQOutput", "queue": "ERR"}},
        "connections": ["In.out -> C", "C.failure -> Why", "Why.out -> Err"]})
    ports = flow.run_sync(message(body=b"m"))
    assert [q for q, _ in ports.puts] == ["ERR"]
    assert ports.traces[0][1] == "RecoverableException 2230 in C: RuntimeError: kaput"


def test_input_catch_terminal_takes_the_failed_message():
    """flows-http.md item 4: with the input's catch terminal connected, a failing run's
    outputs are discarded and the catch path runs."""
    flow = build_flow({"flow": "t", "nodes": {
        "In": {"type": "MQInput", "queue": "Q"}, "Out": {"type": "MQOutput", "queue": "OK"},
        "Boom": {"type": "Throw"}, "Catch": {"type": "MQOutput", "queue": "CATCH"}},
        "connections": ["In.out -> Out", "Out.out -> Boom", "In.catch -> Catch"]})
    assert [q for q, _ in flow.run_sync(message()).puts] == ["CATCH"]


# -- output nodes --------------------------------------------------------------------------------

def test_mq_output_queue_and_destination_list():
    """flows-http.md item 5: MQOutput to a queue, or to a distribution list named in the
    LocalEnvironment; MsgId cleared for the queue manager to assign."""
    code = ("def main(c):\n"
            "    for i, q in enumerate(['A', 'B']):\n"
            "        c.local_environment.set(f'Destination.MQ.DestinationData[{i + 1}].queueName', q)\n"
            "    return c.copy_input()\n")
    flow = chain(("Compute", {"code": code}), ("MQOutput", {"destination_mode": "list"}))
    source = message(body=b"m")
    source.mq.md.MsgId = b"\x01" * 24
    ports = flow.run_sync(source)
    assert [q for q, _ in ports.puts] == ["A", "B"]
    assert all(m.mq.md.MsgId == bytes(24) for _, m in ports.puts)


def test_mq_reply_uses_reply_to_q_and_correlates():
    """flows-http.md item 5: request/reply: the reply goes to ReplyToQ with CorrelId = the
    request's MsgId (or its CorrelId with MQRO_PASS_CORREL_ID), MsgType REPLY."""
    flow = chain(("MQReply", {}))
    request = message(body=b"q")
    request.mq.md.ReplyToQ, request.mq.md.MsgId, request.mq.md.CorrelId = "REPLY.Q", b"\x07" * 24, b"\x09" * 24
    [(queue, reply)] = flow.run_sync(request).puts
    assert (queue, reply.mq.md.MsgType, reply.mq.md.CorrelId) == ("REPLY.Q", MQMT_REPLY, b"\x07" * 24)
    request.mq.md.Report = MQRO_PASS_CORREL_ID
    assert flow.run_sync(request).puts[0][1].mq.md.CorrelId == b"\x09" * 24
    with pytest.raises(FlowException, match="no ReplyToQ"):
        flow.run_sync(message())


def test_publication_topic_and_qos():
    """flows-http.md item 2: Publication takes psc.Topic (or its own topic) and a
    subscription point; QoS follows persistence unless set."""
    flow = chain(("Publication", {"subscription_point": "Gold"}))
    persistent = message(topic="a/b")
    persistent.mq.md.Persistence = 1
    topic, _, qos, retain, point = flow.run_sync(persistent).publications[0]
    assert (topic, qos, retain, point) == ("a/b", 1, False, "Gold")
    fixed = chain(("Publication", {"topic": "fixed/t", "qos": 2}))
    topic, _, qos, _, _ = fixed.run_sync(message()).publications[0]
    assert (topic, qos) == ("fixed/t", 2)
    with pytest.raises(FlowException, match="no topic"):
        flow.run_sync(message())


def test_http_reply_headers_and_defaults():
    """flows-http.md item 8; seed 000 l.2024-2032: HTTPReply answers the request named in the
    LocalEnvironment, defaulting Content-Type to text/xml; charset=utf-8 with a computed
    Content-Length; an HTTPReplyHeader folder wins and may set the status."""
    flow = chain(("HTTPReply", {}))
    ports = CollectingPorts()
    source = message(body=b"<ok/>")
    from relaymq.flows.context import RunContext

    assembly = Assembly(source)
    assembly.local_environment.set("Destination.HTTP.RequestIdentifier", "r1")
    flow.process("In", assembly, RunContext(ports))
    rid, status, headers, body = ports.replies[0]
    assert (rid, status, body) == ("r1", 200, b"<ok/>")
    assert ("Content-Type", "text/xml; charset=utf-8") in headers and ("Content-Length", "5") in headers
    header = Element("HTTPReplyHeader")
    header.add("Content-Type", "application/json")
    header.add("X-Original-HTTP-Status-Code", 201)
    source.transport.append(header)
    assert http_headers.reply_status(source) == 201
    assert http_headers.reply_headers(source, 5) == [("Content-Type", "application/json"), ("Content-Length", "5")]


def test_http_reply_without_a_waiting_request():
    """HTTPReply with nothing to answer: ignored by default, an error when asked."""
    assert chain(("HTTPReply", {})).run_sync(message()).replies == []
    with pytest.raises(FlowException, match="no HTTP request"):
        chain(("HTTPReply", {"ignore_transport_failures": False})).run_sync(message())


def test_http_request_default_headers():
    """flows-http.md item 8; seed 000 l.2034-2043: HTTPRequest defaults Host from the URL,
    Content-Length, Content-Type and SOAPAction ""; an HTTPInputHeader is forwarded."""
    source = message(body=b"abc")
    source.transport.append(http_headers.input_header_folder("POST", "/x", "1.1", [("cookie", "J=1"), ("host", "other")]))
    headers = http_headers.request_headers(source, "http://ws.example:9080/greenpages", 3)
    assert headers == [("Host", "ws.example:9080"), ("Cookie", "J=1"), ("Content-Type", "text/xml; charset=utf-8"),
                       ("SOAPAction", '""'), ("Content-Length", "3")]


def test_http_input_header_folder():
    """flows-http.md item 8; seed 000 l.2012-2022: HTTPInputHeader holds the request headers
    (Host, Content-Length, Content-Type, SOAPAction...) and the original command line."""
    folder = http_headers.input_header_folder("POST", "/greenpages/servlet/rpcrouter", "1.0",
                                              [("host", "localhost"), ("soapaction", '""'), ("content-length", "520")])
    assert folder.get("X-Original-HTTP-Command") == "POST /greenpages/servlet/rpcrouter HTTP/1.0"
    assert (folder.get("Host"), folder.get("SOAPAction"), folder.get("Content-Length")) == ("localhost", '""', "520")


def test_http_response_header_folder_keeps_the_status_line():
    """flows-http.md item 8; seed 000 l.1994-1996, 2088: HTTPResponseHeader's
    X-Original-HTTP-Status-Line is the status line with its reason phrase (``HTTP/1.0 200
    OK``); a server that sent none gets the standard phrase."""
    folder = http_headers.response_header_folder(200, "OK", "1.0", [("content-length", "1585")])
    assert folder.get("X-Original-HTTP-Status-Line") == "HTTP/1.0 200 OK"
    assert folder.get("X-Original-HTTP-Status-Code") == 200 and folder.get("Content-Length") == "1585"
    assert http_headers.response_header_folder(404, "", "1.1", []).get("X-Original-HTTP-Status-Line") == "HTTP/1.1 404 Not Found"


def test_http_request_needs_the_event_loop_outside_the_broker():
    """Pure runs refuse nodes that need I/O instead of blocking."""
    from relaymq.flows.errors import NeedsEventLoop

    with pytest.raises(NeedsEventLoop):
        chain(("HTTPRequest", {"url": "http://127.0.0.1:9/x"})).run_sync(message())


def deployed_node_types() -> dict[str, set[str]]:
    """Node types in the flows the broker tests deploy: every ``type: X`` in the string
    literals of the test modules that start a broker, and in the example flows they deploy
    (examples/*/*.yaml), by the file they appear in."""
    import ast
    import re
    from pathlib import Path

    pattern = re.compile(r"\btype:\s*([A-Za-z]+)")
    found: dict[str, set[str]] = {}
    here = Path(__file__).resolve().parent
    for path in sorted(here.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.Name) and n.id == "FlowBroker" for n in ast.walk(tree)):
            continue  # no broker: a node run in-process does not count
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for kind in pattern.findall(node.value):
                    found.setdefault(kind, set()).add(path.name)
    for path in sorted((here.parents[1] / "examples").glob("*/*.yaml")):
        for kind in pattern.findall(path.read_text()):
            found.setdefault(kind, set()).add(str(path.relative_to(here.parents[1])))
    return found


def test_every_node_type_is_deployed_in_a_broker_test():
    """Issue 6 "every node is covered by tests through real clients": each registered node
    type appears in a flow that some broker test deploys (a new node type without such a test
    fails here)."""
    deployed = deployed_node_types()
    missing = sorted(set(NODE_TYPES) - set(deployed))
    assert not missing, f"node types no broker test deploys: {missing}"
