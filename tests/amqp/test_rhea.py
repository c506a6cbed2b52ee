"""relaymq's AMQP 1.0 listener driven by rhea, the npm AMQP 1.0 client (installed into
tests/amqp/rhea/node_modules by bin/_env.sh ensure_node_packages), through a small
command-line wrapper (rhea/client.js) run with node.

Spec: issue 20 (tests with clients no one here wrote: send, receive, selectors, durable
subscription; the JMS mapping's x-opt-jms-msg-type / x-opt-jms-dest annotations);
formats-and-jms.md item 9 (message classes) and the JMS selector items (000 l.2744-2779).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import BrokerProcess

from .broker import amqp_broker

CLIENT = Path(__file__).resolve().parent / "rhea" / "client.js"
NODE = shutil.which("node")
WAIT = 30.0

pytestmark = [pytest.mark.interop]
if NODE is None or not (CLIENT.parent / "node_modules" / "rhea").is_dir():
    pytestmark.append(pytest.mark.skip(reason="node or rhea missing: bin/test installs them (ensure_node_packages)"))


@pytest.fixture(scope="module")
def broker() -> Iterator[tuple[BrokerProcess, int]]:
    with amqp_broker() as started:
        yield started


def rhea(port: int, *args: str, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    command = [str(NODE), str(CLIENT), str(port), *args]
    if options is not None:
        command.append(json.dumps(options))
    done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0, f"rhea client failed ({done.returncode}): {done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def send(port: int, address: str, messages: list[dict[str, Any]]) -> None:
    assert rhea(port, "send", address, json.dumps(messages)) == [{"accepted": len(messages)}]


def test_send_and_receive_on_a_queue(broker: tuple[BrokerProcess, int]) -> None:
    """rhea sends to queue://ORDERS and receives from it: body, subject (JMSType),
    correlation id and application properties come back, with the JMS annotations."""
    _, port = broker
    send(port, "queue://ORDERS", [{"body": "from rhea", "subject": "Order", "correlation_id": "c-42",
                                   "application_properties": {"qty": 7, "colour": "red"}}])
    [got] = rhea(port, "receive", "queue://ORDERS", "1")
    assert got["body"] == "from rhea" and got["subject"] == "Order" and got["correlation_id"] == "c-42"
    assert got["application_properties"] == {"qty": 7, "colour": "red"}
    assert got["message_annotations"] == {"x-opt-jms-msg-type": 5, "x-opt-jms-dest": 0}
    assert got["to"] == "queue://ORDERS"


def test_selector_on_a_queue(broker: tuple[BrokerProcess, int]) -> None:
    """rhea's filter.selector (descriptor 0x468C00000004) selects with relaymq's selector
    language; the others stay on the queue."""
    _, port = broker
    send(port, "queue://ORDERS", [{"body": f"m{i}", "application_properties": {"qty": i}} for i in range(1, 6)])
    got = rhea(port, "receive", "queue://ORDERS", "2", options={"selector": "qty BETWEEN 2 AND 3"})
    assert [m["body"] for m in got] == ["m2", "m3"]
    rest = rhea(port, "receive", "queue://ORDERS", "3")
    assert [m["body"] for m in rest] == ["m1", "m4", "m5"]


def test_map_and_bytes_messages(broker: tuple[BrokerProcess, int]) -> None:
    """A map (x-opt-jms-msg-type 2) and a data section (BytesMessage, 3) keep their class."""
    _, port = broker
    send(port, "queue://ORDERS", [{"body": {"a": 1, "b": "two"}, "body_type": "map"},
                                  {"body": "raw bytes", "body_type": "bytes"}])
    first, second = rhea(port, "receive", "queue://ORDERS", "2")
    assert first["body"] == {"a": 1, "b": "two"} and first["message_annotations"]["x-opt-jms-msg-type"] == 2
    assert second["body"] == "raw bytes" and second["message_annotations"]["x-opt-jms-msg-type"] == 3


def test_durable_subscription(broker: tuple[BrokerProcess, int]) -> None:
    """A durable receiver (durable 2, expiry never, named) that went away gets what was
    published meanwhile when it comes back with the same container id and name."""
    _, port = broker
    topic = f"rhea/{uuid.uuid4().hex[:8]}"
    durable = {"durable": "orders-sub", "container": f"rhea-{uuid.uuid4().hex[:6]}"}
    assert rhea(port, "receive", f"topic://{topic}", "0", options=durable) == [{"ready": True}]
    send(port, f"topic://{topic}", [{"body": "while away", "application_properties": {"n": 1}}])
    [got] = rhea(port, "receive", f"topic://{topic}", "1", options=durable)
    assert got["body"] == "while away" and got["application_properties"] == {"n": 1}
    assert got["message_annotations"]["x-opt-jms-dest"] == 1


def test_unknown_queue_is_refused(broker: tuple[BrokerProcess, int]) -> None:
    """A receiver on a queue that does not exist is refused with amqp:not-found."""
    _, port = broker
    assert rhea(port, "receive", "queue://NOT.THERE", "1") == [{"refused": "amqp:not-found"}]
