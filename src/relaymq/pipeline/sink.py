"""The ``relaymq`` sink: a DataFrame's rows published to topics (MQTT, to a running broker) or
put to queues, exactly once per micro-batch across restarts.

Input columns: ``topic`` or ``queue`` (or the ``topic``/``queue`` option for all rows),
``body`` (binary or string), and optionally ``qos``, ``retain``, ``usr`` (map of strings),
``correl_id`` (binary), ``content_type``. Options:

* ``broker``: ``host:port`` (or ``mqtt://host:port``, ``mqtts://host:port`` for TLS) of the MQTT
  listener to publish to; ``username`` / ``password`` when the broker has a password file;
  ``tls`` (``true``: TLS, verified against the system CAs or ``caFile``), ``caFile``,
  ``certFile`` + ``keyFile`` (a client certificate);
* ``queueManager`` + ``dataDir``: put to queues of that queue manager (its store opened directly:
  only while no broker runs it);
* ``qos`` (default 1), ``clientId`` (default ``relaymq-sink-<sinkId>``), ``sinkId`` (default
  ``sink``), ``ledger``: the ledger's directory (streaming; default
  ``<checkpointLocation>/relaymq-ledger``; it must be a local or NFS path).

How exactly-once works: executors only stage the rows (their task result); the driver's
``commit(messages, batchId)`` delivers them, waiting for every acknowledgement, and then
records the batch id in the ledger (see ``ledger``). A batch id already in the ledger is not
delivered again, so a restart after "sink committed, Spark did not record it" sends nothing
twice. Queue puts carry the UID ``<sinkId>:<batch>:<index>`` and are confirmed in two steps
(QueueManager.put with a confirm id, then confirm_put), so the queue manager itself refuses a
message it already has - even one consumed since - and a crash in the middle of a batch does
not duplicate queue messages either. A batch write (``df.write.format("relaymq")``) has no
batch id: it delivers at least once. Staging through the driver suits message-rate outputs
(alerts, commands); bulk data belongs in Parquet through Spark's own file sink.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from relaymq.pipeline.ledger import Ledger, LedgerError, query_id

LEDGER_DIR = "relaymq-ledger"

SINK_ID_PROPERTY = "relaymq-sink-id"


@dataclass
class OutMessage:
    """One message to deliver, as staged by an executor."""

    topic: str | None
    queue: str | None
    body: bytes
    qos: int = 1
    retain: bool = False
    usr: dict[str, str] = field(default_factory=dict)
    correl_id: bytes | None = None
    content_type: str | None = None


@dataclass
class StagedRows(WriterCommitMessage):
    """An executor's task result: the messages it read, in order."""

    messages: list[OutMessage]


def _target(name: str | None, kind: str) -> str:
    """The topic or queue a message goes to; a row staged for the other kind of sink has none."""
    if name is None:
        raise ValueError(f"relaymq sink: a row has no {kind}, and this sink delivers to a {kind}")
    return name


def _text_or_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _lower(options: Any) -> dict[str, str]:
    """Spark hands options over case-insensitively (lower-cased keys); so does this module."""
    return {str(key).lower(): value for key, value in dict(options).items()}


def stage(rows: Iterator[Any], options: dict[str, str]) -> StagedRows:
    """Turn rows into OutMessages (runs on the executors)."""
    options = _lower(options)
    default_topic, default_queue = options.get("topic"), options.get("queue")
    default_qos = int(options.get("qos", "1"))
    staged: list[OutMessage] = []
    for row in rows:
        data = row.asDict() if hasattr(row, "asDict") else dict(row)
        topic = data.get("topic") or default_topic
        queue = data.get("queue") or default_queue
        if not topic and not queue:
            raise ValueError("relaymq sink: a row has neither a topic nor a queue (column or option)")
        usr = data.get("usr") or {}
        staged.append(OutMessage(
            topic=topic, queue=None if topic else queue, body=_text_or_bytes(data.get("body")),
            qos=int(data["qos"]) if data.get("qos") is not None else default_qos,
            retain=bool(data.get("retain") or False), usr={str(k): str(v) for k, v in dict(usr).items()},
            correl_id=_text_or_bytes(data["correl_id"]) if data.get("correl_id") is not None else None,
            content_type=data.get("content_type"),
        ))
    return StagedRows(staged)


def _flag(options: dict[str, str], name: str) -> bool:
    value = str(options.get(name, "false")).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"relaymq sink: option {name} must be true or false, got {value!r}")
    return value in ("true", "1", "yes")


class MqttPublisher:
    """Publishes over MQTT 5 with paho and waits for every acknowledgement."""

    def __init__(self, address: str, client_id: str, timeout: float = 30.0, *, username: str | None = None,
                 password: str | None = None, tls: bool = False, ca_file: str | None = None,
                 cert_file: str | None = None, key_file: str | None = None) -> None:
        import paho.mqtt.client as mqtt

        if address.startswith("mqtts://"):
            tls, address = True, address.removeprefix("mqtts://")
        address = address.removeprefix("mqtt://")
        host, _, port = address.rpartition(":")
        self.timeout = timeout
        self._mqtt = mqtt
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        if username:
            self.client.username_pw_set(username, password)
        if tls or ca_file or cert_file:
            self.client.tls_set(ca_certs=ca_file or None, certfile=cert_file or None, keyfile=key_file or None)
        connected = threading.Event()
        self._reason: Any = None

        def on_connect(_c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
            self._reason = reason
            connected.set()

        self.client.on_connect = on_connect
        try:
            self.client.connect(host or "127.0.0.1", int(port or 1883), keepalive=60)
        except (OSError, ValueError) as error:
            raise ConnectionError(f"relaymq sink: cannot connect to the broker at {address}: {error}") from None
        self.client.loop_start()
        if not connected.wait(timeout) or (self._reason is not None and self._reason.is_failure):
            self.close()
            reason = self._reason if self._reason is not None else "no answer"
            raise ConnectionError(f"relaymq sink: the broker at {address} refused the connection: {reason}")

    def deliver(self, messages: list[OutMessage], sink_ids: list[str]) -> None:
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        infos = []
        for message, sink_id in zip(messages, sink_ids, strict=False):
            props = Properties(PacketTypes.PUBLISH)
            props.UserProperty = [*message.usr.items(), (SINK_ID_PROPERTY, sink_id)]
            if message.correl_id:
                props.CorrelationData = message.correl_id
            if message.content_type:
                props.ContentType = message.content_type
            infos.append(self.client.publish(_target(message.topic, "topic"), message.body, qos=message.qos,
                                             retain=message.retain, properties=props))
        for info in infos:
            info.wait_for_publish(self.timeout)
            if not info.is_published() and info.rc == self._mqtt.MQTT_ERR_SUCCESS and info.mid:
                raise TimeoutError("relaymq sink: the broker did not acknowledge a publication in time")
            if info.rc != self._mqtt.MQTT_ERR_SUCCESS:
                raise ConnectionError(f"relaymq sink: publish failed: {self._mqtt.error_string(info.rc)}")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class QueuePutter:
    """Puts to queues of a queue manager opened from its data directory (relaymq.qmgr), each
    message with its sink id as UID, in two steps (put unconfirmed, then confirm) so that the
    queue manager refuses a message it already holds or delivered (within its confirm window,
    24 h by default) - a batch re-run after a crash puts only what is missing."""

    def __init__(self, qmgr_name: str, data_dir: str | None) -> None:
        from relaymq.qmgr import QueueManager

        try:
            self.qm = QueueManager.open(qmgr_name, data_dir)
        except Exception as error:  # noqa: BLE001 - one line for the operator
            raise ConnectionError(
                f"relaymq sink: cannot open queue manager {qmgr_name} in {data_dir}: {error}. The sink opens the "
                f"queue manager's store directly, which only works while no broker runs that queue manager: "
                f"stop the broker, or let the job publish to a topic instead") from None

    def deliver(self, messages: list[OutMessage], sink_ids: list[str]) -> None:
        from relaymq.qmgr.errors import DuplicateMessage

        for message, sink_id in zip(messages, sink_ids, strict=False):
            try:
                self.qm.put(_target(message.queue, "queue"), to_mq_message(message, sink_id), uid=sink_id, confirm_id=1, resend=True)
            except DuplicateMessage:
                continue  # delivered before a crash: the queue manager already has it
            self.qm.confirm_put(sink_id)

    def close(self) -> None:
        self.qm.close()


def to_mq_message(message: OutMessage, sink_id: str) -> Any:
    """An OutMessage as a relaymq Message: body, CorrelId, and an MQRFH2 whose ``usr`` folder
    holds the user properties (flows-http.md decisions: usr travels in the RFH2 in MQ format)."""
    from relaymq.message.headers import MQMessage
    from relaymq.message.message import Message
    from relaymq.message.mqmd import MQMD
    from relaymq.message.mqrfh2 import MQRFH2

    md = MQMD(Format="MQHRF2")
    if message.correl_id:
        md.CorrelId = message.correl_id[:24].ljust(24, b"\0")
    rfh2 = MQRFH2(Format="MQSTR" if message.content_type and message.content_type.startswith("text") else "",
                  CodedCharSetId=1208)
    usr = rfh2.ensure_folder("usr")
    for name, value in [*message.usr.items(), (SINK_ID_PROPERTY, sink_id)]:
        usr.add(name, value)
    return Message(MQMessage(md=md, headers=[rfh2], body=message.body))


def _delivery(options: dict[str, str], sink_id: str) -> Any:
    if options.get("queuemanager"):
        return QueuePutter(options["queuemanager"], options.get("datadir"))
    broker = options.get("broker")
    if not broker:
        raise ValueError('relaymq sink: option "broker" (host:port) or "queueManager" is required')
    return MqttPublisher(broker, options.get("clientid") or f"relaymq-sink-{sink_id}",
                         username=options.get("username"), password=options.get("password"),
                         tls=_flag(options, "tls"), ca_file=options.get("cafile"),
                         cert_file=options.get("certfile"), key_file=options.get("keyfile"))


def deliver_batch(options: dict[str, str], messages: list[StagedRows | None], batch_id: int | None) -> int:
    """Deliver the staged messages of one batch (driver side); returns how many were sent
    (0 when the ledger says this batch was already delivered)."""
    options = _lower(options)
    sink_id = options.get("sinkid", "sink")
    ledger = _ledger(options, sink_id) if batch_id is not None else None
    if ledger is not None and batch_id is not None and ledger.delivered(batch_id):
        return 0
    outgoing = [m for staged in messages if staged is not None for m in staged.messages]
    if outgoing:
        delivery = _delivery(options, sink_id)
        try:
            delivery.deliver(outgoing, [f"{sink_id}:{batch_id}:{i}" for i in range(len(outgoing))])
        finally:
            delivery.close()
    if ledger is not None and batch_id is not None:
        ledger.record(batch_id, len(outgoing))
    return len(outgoing)


def _local_path(location: str, option: str) -> str:
    """A local (or NFS-mounted) directory from a path or a ``file:`` URI; other filesystems
    (hdfs:, s3a:, ...) cannot hold the ledger, which renames and fsyncs files."""
    if location.startswith("file:"):
        return "/" + location.removeprefix("file:").lstrip("/")
    scheme, sep, _rest = location.partition(":")
    if sep and scheme.isalpha() and len(scheme) > 1:
        raise LedgerError(f"relaymq sink: the ledger needs a local or NFS-mounted directory, but {option} is "
                          f"{location!r}; give the sink a local directory with option ledger")
    return location


def _ledger(options: dict[str, str], sink_id: str) -> Ledger:
    """The ledger of this sink: option ``ledger``, else ``<checkpointLocation>/relaymq-ledger``
    (Spark hands a sink the checkpointLocation set with ``.option()``), one directory per
    sinkId, bound to the checkpoint's query id when the checkpoint is a local directory."""
    checkpoint = options.get("checkpointlocation")
    local_checkpoint = None
    if checkpoint:
        try:
            local_checkpoint = _local_path(checkpoint, "the checkpointLocation")
        except LedgerError:
            if not options.get("ledger"):
                raise
    if options.get("ledger"):
        root = _local_path(options["ledger"], "option ledger")
    elif local_checkpoint:
        root = os.path.join(local_checkpoint, LEDGER_DIR)
    else:
        raise ValueError('relaymq sink: streaming needs .option("checkpointLocation", ...) on the query (the '
                         'ledger goes inside it) or option "ledger", for exactly-once delivery')
    ledger = Ledger(os.path.join(root, sink_id))
    if local_checkpoint:
        query = query_id(local_checkpoint)
        if query is not None:
            ledger.bind(query)
    return ledger


class RelayMQBatchWriter(DataSourceWriter):
    """``df.write.format("relaymq")``: deliver every row once the job's tasks succeeded."""

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        self.options = _lower(options)

    def write(self, iterator: Iterator[Any]) -> StagedRows:
        return stage(iterator, self.options)

    def commit(self, messages: list[Any]) -> None:
        deliver_batch(self.options, messages, None)


class RelayMQStreamWriter(DataSourceStreamWriter):
    """``writeStream.format("relaymq")``: one delivery per micro-batch id, ever."""

    def __init__(self, options: Mapping[str, str], schema: Any) -> None:
        self.options = _lower(options)
        _ledger(self.options, self.options.get("sinkid", "sink"))  # fail at start, not at batch 0

    def write(self, iterator: Iterator[Any]) -> StagedRows:
        return stage(iterator, self.options)

    def commit(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        deliver_batch(self.options, messages, batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:  # noqa: N803
        return None  # nothing was delivered: staging has no side effects
