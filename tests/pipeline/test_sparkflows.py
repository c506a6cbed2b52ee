"""Flows on Spark without Spark: what one log record becomes, including a message the flow
rejects (issue 7 "Flows on Spark ... with the same node code as in the broker"; audit item 4:
one bad message must not stop the job - the input node's failure terminal runs, as in the
broker's runtime, flows/runtime.py FlowRuntime._failed)."""

from __future__ import annotations

import asyncio

import pytest

from relaymq.flows.context import CollectingPorts
from relaymq.flows.definition import build_flow, load_definition
from relaymq.flows.errors import FlowException
from relaymq.flows.runtime import DEAD_LETTER_QUEUE, Delivery, FlowRuntime
from relaymq.pipeline.record import LogRecord
from relaymq.pipeline.sparkflows import failure_outputs, flow_outputs, to_message
from test_example import EXAMPLE_FLOW, SEED_BATCH

GARBAGE = LogRecord(topic="LCUnit/9/batch", partition="t-0", seq=4, timestamp=1000.0, domain="XMLNS",
                    body=b"<events><Heartbeat/></events>")  # no d_tstamp: the Compute raises


def broker_outcome(definition: dict, record: LogRecord) -> CollectingPorts:
    """The same message through the broker's own runtime (backout, failure terminal, backout queue)."""
    flow = build_flow(definition)
    ports = CollectingPorts()

    async def main() -> None:
        runtime = FlowRuntime(flow, ports)
        runtime.start()
        await runtime.submit(Delivery(flow.input_nodes()[0].name, to_message(record)))
        await runtime.drain()

    asyncio.run(main())
    return ports


def test_a_rejected_message_takes_the_failure_terminal_as_in_the_broker() -> None:
    """audit item 4: the telemetry flow wires SCADAInput1.failure -> MQOutput TELEMETRY.ERRORS; a
    batch the Compute rejects becomes that put (the original body, lineage kept), exactly what
    the broker's runtime puts for the same message."""
    definition = load_definition(EXAMPLE_FLOW)
    flow = build_flow(definition)
    with pytest.raises(FlowException):
        flow_outputs(flow, GARBAGE)
    (out,) = failure_outputs(flow, GARBAGE, FlowException("rejected", node="SplitBatch"))
    assert (out.queue, out.topic, out.body) == ("TELEMETRY.ERRORS", None, GARBAGE.body)
    assert (out.partition, out.seq, out.timestamp) == ("t-0", 4, 1000.0)
    broker = broker_outcome(definition, GARBAGE)
    assert [(q, m.mq.body) for q, m in broker.puts] == [(out.queue, out.body)]
    assert broker.publications == []


def test_without_a_failure_terminal_the_message_goes_to_the_backout_queue() -> None:
    """flows-http.md item 4 (backout): no failure wiring -> the flow's backout queue, else
    SYSTEM.DEAD.LETTER.QUEUE; as in the broker."""
    definition = load_definition(EXAMPLE_FLOW)
    definition["connections"] = [c for c in definition["connections"] if "failure" not in c]
    flow = build_flow(definition)
    (out,) = failure_outputs(flow, GARBAGE, FlowException("rejected", node="SplitBatch"))
    assert (out.queue, out.body) == (DEAD_LETTER_QUEUE, GARBAGE.body)
    assert [(q, m.mq.body) for q, m in broker_outcome(definition, GARBAGE).puts] == [(out.queue, out.body)]
    definition["backout_queue"] = "TELEMETRY.BACKOUT"
    (out,) = failure_outputs(build_flow(definition), GARBAGE, FlowException("rejected", node="SplitBatch"))
    assert out.queue == "TELEMETRY.BACKOUT"


def test_a_good_batch_is_split_into_its_events() -> None:
    """flows-http.md item 13 on the Spark path's record -> message -> flow: the seed's sample."""
    flow = build_flow(load_definition(EXAMPLE_FLOW))
    record = LogRecord(topic="LCUnit/12345/batch", partition="t-0", seq=0, domain="XMLNS", body=SEED_BATCH)
    assert [(o.topic, o.usr["d_tstamp"]) for o in flow_outputs(flow, record)] == [
        ("LCUnit/12345/StateChange", "20040417104439"), ("LCUnit/12345/Heartbeat", "20040417105126")]
