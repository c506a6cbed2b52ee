"""The JMS flow nodes against an outside JMS provider: Debian's RabbitMQ (3.10, its AMQP 1.0
plugin), started by the test on loopback ports with its own data directory
(tests/amqp/rabbitmq.py). A JMS message sent to RabbitMQ by python-qpid-proton's client goes
through a relaymq flow (JMSInput -> JMSOutput, both on RabbitMQ) and comes back with its JMS
headers and typed properties; a second flow takes it from RabbitMQ into relaymq's queue
manager (JMSInput -> JMSMQTransform -> MQOutput), read through the REST interface.

Spec: flows-http.md items 2, 6 (JMS nodes "with any JMS provider"); seed 000 l.2116-2131 (the
nodes behave like JMS clients of any provider), l.2683-2714 (administered objects); issue 20.
"""

from __future__ import annotations

import base64
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Message, int32
from proton.utils import BlockingConnection

from flow_helpers import FlowBroker, admin, deploy_text as deploy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "amqp"))
from rabbitmq import RabbitMQ, available  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not available(), reason="rabbitmq-server is not installed "
                                                   "(bin/test installs it: ensure_test_packages in bin/_env.sh)")]
WAIT = 30.0


@pytest.fixture(scope="module")
def rabbit() -> Iterator[RabbitMQ]:
    server = RabbitMQ().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def broker() -> Iterator[FlowBroker]:
    proc = FlowBroker(queues=("FROM.RABBIT",))
    with proc:  # BrokerProcess: started here, stopped and removed at the end
        yield proc


def rabbit_connection(rabbit: RabbitMQ) -> BlockingConnection:
    return BlockingConnection(f"amqp://guest:guest@127.0.0.1:{rabbit.port}", timeout=WAIT, allowed_mechs="PLAIN",
                              allow_insecure_mechs=True)


def jndi(rabbit: RabbitMQ) -> str:
    return (f"{{'connectionfactory.jms/RabbitCF': 'amqp://127.0.0.1:{rabbit.port}?jms.username=guest&jms.password=guest',"
            " 'queue.jms/In': '/queue/relaymq.in', 'queue.jms/Out': '/queue/relaymq.out',"
            " 'queue.jms/ToMQ': '/queue/relaymq.tomq'}")


def test_jms_message_through_a_flow_on_rabbitmq(rabbit: RabbitMQ, broker: FlowBroker) -> None:
    """JMSInput and JMSOutput as JMS clients of RabbitMQ: the JMS header fields and typed
    properties of the message survive the provider and the flow."""
    deploy(broker, "\n".join([
        "flow: rabbit-relay", "nodes:",
        f"  In: {{type: JMSInput, jndi: {jndi(rabbit)}, connection_factory: jms/RabbitCF, source: jms/In}}",
        f"  Out: {{type: JMSOutput, jndi: {jndi(rabbit)}, connection_factory: jms/RabbitCF, destination: jms/Out}}",
        "connections:", "  - In.out -> Out"]))
    conn = rabbit_connection(rabbit)
    try:
        receiver = conn.create_receiver("/queue/relaymq.out")
        conn.create_sender("/queue/relaymq.in").send(Message(
            body="via rabbit", subject="Order", correlation_id="c-rabbit", priority=7, durable=True,
            properties={"qty": int32(4), "site": "north"}))
        got = receiver.receive(timeout=WAIT)
        receiver.accept()
    finally:
        conn.close()
    assert got.body == "via rabbit"
    assert (got.subject, got.correlation_id, got.priority, got.durable) == ("Order", "c-rabbit", 7, True)
    assert got.properties["qty"] == 4 and type(got.properties["qty"]) is int32 and got.properties["site"] == "north"
    assert got.annotations["x-opt-jms-msg-type"] == 5
    admin(broker, "DELETE", "/rabbit-relay")


def test_from_rabbitmq_into_an_mq_queue(rabbit: RabbitMQ, broker: FlowBroker) -> None:
    """JMSInput (RabbitMQ) -> JMSMQTransform -> MQOutput: the JMS message becomes an MQ message
    on relaymq's queue with its properties in the MQRFH2 (read through REST)."""
    deploy(broker, "\n".join([
        "flow: rabbit-to-mq", "nodes:",
        f"  In: {{type: JMSInput, jndi: {jndi(rabbit)}, connection_factory: jms/RabbitCF, source: jms/ToMQ}}",
        "  Transform: {type: JMSMQTransform}",
        "  Out: {type: MQOutput, queue: FROM.RABBIT}",
        "connections:", "  - In.out -> Transform", "  - Transform.out -> Out"]))
    conn = rabbit_connection(rabbit)
    try:
        conn.create_sender("/queue/relaymq.tomq").send(Message(body="to mq", priority=8,
                                                              properties={"n": int32(5), "colour": "red"}))
    finally:
        conn.close()
    token = base64.b64encode(broker.admin_credentials.read_text().strip().encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{broker.http_port}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/FROM.RABBIT/message?wait=20000",
        method="DELETE", headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(request, timeout=WAIT + 10) as response:
        headers = {k.lower(): v for k, v in response.headers.items()}
        body = response.read()
    assert body == b"to mq"
    assert headers["ibm-mq-md-priority"] == "8"
    assert "n;5;i4" in headers["ibm-mq-usr"] and "colour;red" in headers["ibm-mq-usr"].replace('"', "")
    admin(broker, "DELETE", "/rabbit-to-mq")
