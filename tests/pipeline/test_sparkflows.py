"""Flows on Spark without Spark: what log records become, including a message the flow
rejects (issue 7 "Flows on Spark ... with the same node code as in the broker"; audit item 4:
one bad message must not stop the job - the input node's failure terminal runs, as in the
broker, by the broker's runtime itself: flows/runtime.py FlowRuntime.run)."""

from __future__ import annotations

import pytest

from relaymq.flows.definition import build_flow, load_definition
from relaymq.flows.errors import FlowException
from relaymq.flows.runtime import DEAD_LETTER_QUEUE
from relaymq.pipeline.record import LogRecord
from relaymq.pipeline.sparkflows import broker_outputs, flow_outputs
from test_example import EXAMPLE_FLOW, SEED_BATCH

GARBAGE = LogRecord(topic="LCUnit/9/batch", partition="t-0", seq=4, timestamp=1000.0, domain="XMLNS",
                    body=b"<events><Heartbeat></Heartbeat></events>")  # no d_tstamp: the Compute raises


def test_a_rejected_message_takes_the_failure_terminal() -> None:
    """audit item 4: the telemetry flow wires SCADAInput1.failure -> MQOutput TELEMETRY.ERRORS; a
    batch the Compute rejects becomes that put (the original body, lineage kept) and the good
    batches around it are split as usual."""
    flow = build_flow(load_definition(EXAMPLE_FLOW))
    with pytest.raises(FlowException):
        flow_outputs(flow, GARBAGE)
    good = LogRecord(topic="LCUnit/12345/batch", partition="t-0", seq=5, domain="XMLNS", body=SEED_BATCH)
    outputs = broker_outputs(flow, [GARBAGE, good])
    assert [(o.queue, o.topic, o.seq) for o in outputs] == [
        ("TELEMETRY.ERRORS", None, 4), (None, "LCUnit/12345/StateChange", 5), (None, "LCUnit/12345/Heartbeat", 5)]
    assert (outputs[0].body, outputs[0].partition, outputs[0].timestamp) == (GARBAGE.body, "t-0", 1000.0)


def test_without_a_failure_terminal_the_message_goes_to_the_backout_queue() -> None:
    """flows-http.md item 4 (backout): no failure wiring -> the flow's backout queue, else
    SYSTEM.DEAD.LETTER.QUEUE."""
    definition = load_definition(EXAMPLE_FLOW)
    definition["connections"] = [c for c in definition["connections"] if "failure" not in c]
    (out,) = broker_outputs(build_flow(definition), [GARBAGE])
    assert (out.queue, out.body) == (DEAD_LETTER_QUEUE, GARBAGE.body)
    definition["backout_queue"] = "TELEMETRY.BACKOUT"
    (out,) = broker_outputs(build_flow(definition), [GARBAGE])
    assert out.queue == "TELEMETRY.BACKOUT"


def test_a_good_batch_is_split_into_its_events() -> None:
    """flows-http.md item 13 on the Spark path's record -> message -> flow: the seed's sample."""
    flow = build_flow(load_definition(EXAMPLE_FLOW))
    record = LogRecord(topic="LCUnit/12345/batch", partition="t-0", seq=0, domain="XMLNS", body=SEED_BATCH)
    assert [(o.topic, o.usr["d_tstamp"]) for o in flow_outputs(flow, record)] == [
        ("LCUnit/12345/StateChange", "20040417104439"), ("LCUnit/12345/Heartbeat", "20040417105126")]
