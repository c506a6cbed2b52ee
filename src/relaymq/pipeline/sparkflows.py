"""Message flows on Spark: the nodes of a relaymq flow (Compute, Filter, Route, the transforms,
Publication, MQOutput...) run over a DataFrame of messages with ``mapInArrow``, using the very
node code the broker runs (relaymq.flows: ``Flow.run_sync`` and ``evaluate_node``).

    events = run_flow(spark.read.format("relaymq").option("log", ...).load(),
                      "examples/telemetry-flow/telemetry.yaml")

``run_flow`` feeds each message to the flow's input node and returns what the flow would
publish (a row with ``topic``) or put (a row with ``queue``), in the log's schema, keeping the
input's ``partition``/``seq``/``timestamp`` as lineage. A message the flow rejects takes the
input node's failure path, as in the broker (``on_error``). ``map_node`` runs one node and adds
the ``terminal`` it propagated to (a Filter's true/false, a Route's labels).

The flow definition is loaded once on the driver (its code files inlined) and rebuilt on each
executor from that mapping, so executors need only relaymq installed, not the flow's files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from relaymq.pipeline.arrowio import SPARK_SCHEMA, records_from_batches, to_batch
from relaymq.pipeline.record import LogRecord, from_message

#: The schema ``map_node`` returns: the log's columns plus the terminal.
NODE_SCHEMA = SPARK_SCHEMA + ", `terminal` STRING"


def to_message(record: LogRecord) -> Any:
    """A log record as the flow input message the broker would have built: a publication
    through flows.mqtt_mapping.from_mqtt (psc.Topic, usr), a queue message with its MQMD
    fields, an RFH2 ``usr`` folder and the body, in the record's domain."""
    from relaymq.message.mqtt_mapping import from_mqtt
    from relaymq.message.headers import Header, MQMessage
    from relaymq.message.message import Message
    from relaymq.message.mqmd import MQMD
    from relaymq.message.mqrfh2 import MQRFH2
    from relaymq.pipeline.record import MQMD_COLUMNS

    if record.topic is not None:
        message = from_mqtt(record.topic, record.body, record.qos, list(record.usr.items()), domain=record.domain)
        if record.correl_id:
            message.mq.md.CorrelId = record.correl_id.ljust(24, b"\0")[:24]
        return message
    md = MQMD()
    for name, column in MQMD_COLUMNS.items():
        value = getattr(record, column)
        if isinstance(value, bytes):
            value = value.ljust(24, b"\0")[:24] if value else getattr(md, name)
        setattr(md, name, value)
    headers: list[Header] = []
    if record.usr:
        rfh2 = MQRFH2(CodedCharSetId=record.ccsid, Format=record.format, NameValueCCSID=1208)
        usr = rfh2.ensure_folder("usr")
        for key, value in record.usr.items():
            usr.add(key, value)
        headers.append(rfh2)
        md.Format = "MQHRF2"
        md.CodedCharSetId = 1208
    return Message(MQMessage(md=md, headers=headers, body=record.body), configured_domain=record.domain)


def _output(message: Any, source: LogRecord, *, topic: str | None = None, queue: str | None = None,
            qos: int | None = None) -> LogRecord:
    from relaymq.message.message import body_bytes

    out = from_message(queue or "", message)
    out.queue = queue
    out.topic = topic
    out.body = body_bytes(message)
    if qos is not None:
        out.qos = qos
    out.partition, out.seq, out.timestamp = source.partition, source.seq, source.timestamp
    return out


def _collected(puts: list[tuple[str, Any]], publications: list[tuple[str, Any, int, bool, str]],
               record: LogRecord) -> list[LogRecord]:
    outputs = [_output(m, record, topic=topic, qos=qos) for topic, m, qos, _retain, _point in publications]
    outputs += [_output(m, record, queue=queue) for queue, m in puts]
    return outputs


def flow_outputs(flow: Any, record: LogRecord, input_node: str | None = None) -> list[LogRecord]:
    """What one message through the flow publishes and puts, as log records (lineage kept).
    Raises FlowException when the flow rejects the message."""
    ports = flow.run_sync(to_message(record), input_node)
    return _collected(ports.puts, ports.publications, record)


def broker_outputs(flow: Any, records: list[LogRecord], input_node: str | None = None) -> list[LogRecord]:
    """What the broker makes of each record (relaymq.flows.run_messages, the runtime's own
    failure handling): the flow's outputs, or for a message the flow rejects - after the
    reruns up to the backout threshold - the input node's ``failure`` terminal's outputs, else
    a put to the flow's backout queue (default SYSTEM.DEAD.LETTER.QUEUE); each as log records
    with lineage. One event loop and one worker thread for all the records."""
    from relaymq.flows import run_messages

    results = run_messages(flow, (to_message(record) for record in records), input_node)
    outputs: list[LogRecord] = []
    for record, result in zip(records, results, strict=False):
        outputs.extend(_collected(result.puts, result.publications, record))
    return outputs


def load_definition(flow: str | Mapping[str, Any]) -> dict[str, Any]:
    """A flow definition mapping from a YAML file (code files inlined) or a mapping."""
    if isinstance(flow, Mapping):
        return dict(flow)
    from relaymq.flows.definition import load_definition as load

    return load(flow)


ON_ERROR = ("failure", "raise", "skip")


def run_flow(df: Any, flow: str | Mapping[str, Any], *, input_node: str | None = None,
             on_error: str = "failure") -> Any:
    """Run a flow over a DataFrame in the log's schema; returns its publications and puts.

    ``on_error`` - what a message the flow rejects (a FlowException) becomes:

    * ``failure`` (default): what the broker does, by the broker's own runtime (``broker_outputs``):
      the input node's failure terminal runs and its puts/publications are in the result;
      unwired (or failing too), a put of the message to the flow's backout queue
      (``SYSTEM.DEAD.LETTER.QUEUE`` by default). One bad message never stops the job;
    * ``raise``: the Spark task fails (a streaming query then stops until the message is dealt with);
    * ``skip``: the message is dropped without a trace (count them by comparing with the input).
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
    definition = load_definition(flow)
    from relaymq.flows.definition import build_flow

    build_flow(definition)  # a definition error shows on the driver, before any task runs

    def process(batches: Iterator[Any]) -> Iterator[Any]:
        from relaymq.flows.errors import FlowException

        built = build_flow(definition)
        for batch in batches:
            records = records_from_batches([batch])
            if on_error == "failure":
                out = broker_outputs(built, records, input_node)
            else:
                out = []
                for record in records:
                    try:
                        out.extend(flow_outputs(built, record, input_node))
                    except FlowException:
                        if on_error == "raise":
                            raise
            if out:
                yield to_batch(out)

    return df.select(*_columns()).mapInArrow(process, SPARK_SCHEMA)


def map_node(df: Any, kind: str, properties: Mapping[str, Any], name: str = "node") -> Any:
    """Run one node (``kind`` as in a flow definition: Compute, Filter, Route, ...) over a
    DataFrame of messages; each output row carries the ``terminal`` it was propagated to."""
    from relaymq.flows.registry import NODE_TYPES

    props = dict(properties)
    if kind not in NODE_TYPES:
        raise ValueError(f"unknown node type {kind!r}")
    NODE_TYPES[kind](name, props)  # fail on the driver for bad properties

    def process(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from relaymq.flows.flow import evaluate_node

        node = NODE_TYPES[kind](name, props)
        for batch in batches:
            out: list[LogRecord] = []
            terminals: list[str] = []
            for record in records_from_batches([batch]):
                for terminal, message in evaluate_node(node, to_message(record)):
                    result = _output(message, record, topic=record.topic, queue=record.queue)
                    out.append(result)
                    terminals.append(terminal)
            if out:
                base = to_batch(out)
                yield pa.RecordBatch.from_arrays([*base.columns, pa.array(terminals, pa.string())],
                                                 names=[*base.schema.names, "terminal"])

    return df.select(*_columns()).mapInArrow(process, NODE_SCHEMA)


def _columns() -> list[str]:
    from relaymq.pipeline.record import COLUMNS

    return list(COLUMNS)
