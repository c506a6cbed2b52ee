"""The JMS transport nodes (JMSInput, JMSOutput, JMSReply) in a running broker, speaking AMQP
1.0 to a JMS provider: here relaymq's own AMQP listener (queue:// addresses on its queue
manager), reached over a loopback socket like any outside provider. The JMS application is
python-qpid-proton's client. docs/amqp.md says what of RabbitMQ was tried.

Spec: flows-http.md items 2 (JMSInput, JMSOutput, JMSReply), 4 (backout), 6 (the JMS
transport); formats-and-jms.md item 12 (output: no Message_MetaData gives a BytesMessage;
JMSReplyTo set means a reply); seed 000 l.2116-2300 (the JMS transport, JNDI administered
objects) and l.2652-2740; issue 20.
"""

from __future__ import annotations

import base64
import urllib.request
from collections.abc import Iterator

import pytest
from proton import Message, Timeout, int32
from proton.utils import BlockingConnection

from harness import free_port

from flow_helpers import FlowBroker, admin, deploy_text as deploy

WAIT = 20.0
QUEUES = ("JMS.IN", "JMS.OUT", "JMS.REQ", "JMS.REPLIES", "JMS.BAD", "JMS.BACKOUT", "MQ.IN")


@pytest.fixture(scope="module")
def broker() -> Iterator[FlowBroker]:
    port = free_port()
    proc = FlowBroker(queues=QUEUES, config={"amqp": {"enabled": True, "host": "127.0.0.1", "port": port,
                                                      "allow_anonymous": True}})
    proc.amqp_port = port  # type: ignore[attr-defined]
    with proc:  # BrokerProcess: started here, stopped and removed at the end
        yield proc


def amqp(broker: FlowBroker) -> BlockingConnection:
    return BlockingConnection(f"amqp://127.0.0.1:{broker.amqp_port}", timeout=WAIT)


def receive(broker: FlowBroker, address: str) -> Message:
    conn = amqp(broker)
    try:
        receiver = conn.create_receiver(address)
        message = receiver.receive(timeout=WAIT)
        receiver.accept()
        return message
    finally:
        conn.close()


def send(broker: FlowBroker, address: str, message: Message) -> None:
    conn = amqp(broker)
    try:
        conn.create_sender(address).send(message)
    finally:
        conn.close()


#: A JMS node with the flow's administered objects (JNDI names as Qpid JMS's jndi.properties).
JNDI_MAP = ("{{{kind}, jndi: {{'connectionfactory.jms/RelayCF': 'amqp://127.0.0.1:{port}', "
            "'queue.jms/In': 'queue://JMS.IN', 'queue.jms/Out': 'queue://JMS.OUT', "
            "'queue.jms/Requests': 'queue://JMS.REQ', 'queue.jms/Bad': 'queue://JMS.BAD'}}, "
            "connection_factory: jms/RelayCF{extra}}}")


def node(broker: FlowBroker, kind: str, extra: str = "") -> str:
    return JNDI_MAP.format(kind=kind, port=broker.amqp_port, extra=", " + extra if extra else "")


def test_jms_input_to_jms_output_keeps_the_jms_message(broker: FlowBroker) -> None:
    """JMSInput (source jms/In) -> JMSOutput (destination jms/Out): a JMS TextMessage goes
    through the flow with its JMSType, correlation id, priority and typed properties; the JNDI
    names resolve through the flow's administered objects (flows-http.md items 2, 6)."""
    deploy(broker, "\n".join([
        "flow: jms-relay",
        "nodes:",
        "  In: " + node(broker, "type: JMSInput", "source: jms/In"),
        "  Out: " + node(broker, "type: JMSOutput", "destination: jms/Out"),
        "connections:", "  - In.out -> Out"]))
    send(broker, "queue://JMS.IN", Message(body="through the flow", subject="Order", correlation_id="c-1",
                                           priority=6, durable=True, properties={"qty": int32(12), "who": "acme"}))
    got = receive(broker, "queue://JMS.OUT")
    assert got.body == "through the flow"
    assert (got.subject, got.correlation_id, got.priority) == ("Order", "c-1", 6)
    assert got.properties["qty"] == 12 and type(got.properties["qty"]) is int32 and got.properties["who"] == "acme"
    assert got.annotations["x-opt-jms-msg-type"] == 5
    admin(broker, "DELETE", "/jms-relay")


def test_jms_reply_answers_the_request(broker: FlowBroker) -> None:
    """JMSInput -> JMSReply: the reply goes to the request's JMSReplyTo with JMSCorrelationID
    = the request's JMSMessageID (seed 000 l.2672; flows-http.md item 2)."""
    deploy(broker, "\n".join([
        "flow: jms-service", "nodes:",
        "  In: " + node(broker, "type: JMSInput", "source: jms/Requests"),
        "  Reply: " + node(broker, "type: JMSReply"),
        "connections:", "  - In.out -> Reply"]))
    send(broker, "queue://JMS.REQ", Message(id="ID:request-1", body="ping", reply_to="queue://JMS.REPLIES"))
    got = receive(broker, "queue://JMS.REPLIES")
    assert got.body == "ping" and got.correlation_id == "ID:request-1"
    admin(broker, "DELETE", "/jms-service")


def test_failing_run_backs_out_to_the_backout_queue(broker: FlowBroker) -> None:
    """A run that keeps failing is backed out up to the threshold, then put to the flow's
    backout queue with the reason in usr; the JMS message is then accepted, not redelivered
    for ever (flows-http.md item 4)."""
    deploy(broker, "\n".join([
        "flow: jms-poison", "backout_threshold: 2", "backout_queue: JMS.BACKOUT", "nodes:",
        "  In: " + node(broker, "type: JMSInput", "source: jms/Bad"),
        "  Fail: {type: Throw, message: no good}",
        "connections:", "  - In.out -> Fail"]))
    send(broker, "queue://JMS.BAD", Message(body="poison", properties={"n": int32(1)}))
    got = receive(broker, "queue://JMS.BACKOUT")
    assert got.body == "poison" and got.properties["n"] == 1
    assert got.properties["relaymq_flow"] == "jms-poison"
    conn = amqp(broker)
    try:
        with pytest.raises(Timeout):  # accepted at the provider: nothing left on JMS.BAD
            conn.create_receiver("queue://JMS.BAD").receive(timeout=2.0)
    finally:
        conn.close()
    admin(broker, "DELETE", "/jms-poison")


def test_mq_input_to_jms_output_sends_a_bytes_message(broker: FlowBroker) -> None:
    """A message that is not JMS (no MQRFH2 mcd) leaves a JMSOutput as a BytesMessage of its
    body (formats-and-jms.md item 12); request mode sets JMSReplyTo."""
    deploy(broker, "\n".join([
        "flow: mq-to-jms", "nodes:",
        "  In: {type: MQInput, queue: MQ.IN}",
        "  Out: " + node(broker, "type: JMSOutput", "destination: jms/Out, mode: request, reply_to: jms/Requests"),
        "connections:", "  - In.out -> Out"]))
    token = base64.b64encode(broker.admin_credentials.read_text().strip().encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.http_port}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/MQ.IN/message",
        data=b"plain bytes", method="POST",
        headers={"Authorization": f"Basic {token}", "Content-Type": "text/plain;charset=utf-8"})
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        assert response.status == 201
    got = receive(broker, "queue://JMS.OUT")
    assert got.body == b"plain bytes"
    assert got.annotations["x-opt-jms-msg-type"] == 3
    assert got.reply_to == "queue://JMS.REQ"
    admin(broker, "DELETE", "/mq-to-jms")


def test_bad_jndi_binding_names_the_key(broker: FlowBroker) -> None:
    """An administered object that is not an AMQP URL stops the deploy naming node and key."""
    status, answer = admin(broker, "POST", "", "\n".join([
        "flow: jms-bad", "nodes:",
        "  Out: {type: JMSOutput, jndi: {'connectionfactory.cf': 'http://x'}, connection_factory: cf, "
        "destination: queue://X}",
        "  In: {type: MQInput, queue: MQ.IN}",
        "connections:", "  - In.out -> Out"]).encode())
    assert status == 400
    assert "jndi" in str(answer) and "Out" in str(answer)
