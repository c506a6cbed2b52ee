"""The flows' I/O inside the broker process (the :class:`relaymq.flows.context.Ports` the
runtime commits to): puts through the queue manager, publications through the broker (MQTT
subscribers) and the pub/sub engine (queue subscribers), HTTP replies to waiting requests,
HTTP requests through relaymq.http.client, trace lines to the log or a file."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from relaymq.flows.bindings import PendingReplies
from relaymq.flows.assembly import copy_message
from relaymq.flows.mqtt_mapping import mqtt_publication
from relaymq.message.message import Message

log = logging.getLogger("relaymq.flows.trace")


CONTROL_QUEUE = "SYSTEM.BROKER.CONTROL.QUEUE"


def psc_publish(topic: str, message: Message, subscription_point: str, retain: bool) -> Message:
    """``message`` as a psc Publish command: its first MQRFH2's psc folder says Command
    Publish, Topic, SubPoint (and RetainPub); the other folders and the body are kept."""
    from relaymq.message.mqrfh2 import MQRFH2
    from relaymq.message.tree import Element

    out = copy_message(message)
    first = out.mq.first_rfh2()
    if first is None:
        first = MQRFH2(CodedCharSetId=1208, Format=out.mq.md.Format, NameValueCCSID=1208)
        out.mq.headers.insert(0, first)
    first.folders = [f for f in first.folders if f.name != "psc"]
    psc = Element("psc")
    psc.add("Command", "Publish")
    psc.add("Topic", topic)
    psc.add("SubPoint", subscription_point)
    if retain:
        psc.add("PubOpt", "RetainPub")
    first.folders.insert(0, psc)
    return out


class NoQueueManager(RuntimeError):
    """A flow put to a queue but the broker runs without a queue manager."""


class BrokerPorts:
    def __init__(self, broker: Any, services: dict[str, Any], pending: PendingReplies) -> None:
        self.broker = broker
        self.services = services
        self.pending = pending

    async def put(self, queue: str, message: Message, qmgr: str | None) -> bytes:
        aio = self.services.get("qmgr.aio")
        if aio is None:
            raise NoQueueManager(f"cannot put to {queue}: no queue manager is running")
        return await aio.put(queue, message, qmgr=qmgr)  # type: ignore[no-any-return]

    def publish(self, topic: str, message: Message, *, qos: int, retain: bool, subscription_point: str) -> Any:
        """The default subscription point: through the broker, which reaches MQTT subscribers
        and, through the pub/sub engine's publication tap, queue subscribers (usr folder =
        user properties). A named subscription point exists for queue subscribers only: the
        publication is a ``psc`` Publish command put to SYSTEM.BROKER.CONTROL.QUEUE (seed 003)."""
        if subscription_point:
            return self.put(CONTROL_QUEUE, psc_publish(topic, message, subscription_point, retain), None)
        payload, properties = mqtt_publication(message)
        return self.broker.publish(topic, payload, qos=qos, retain=retain, properties=properties)

    def http_reply(self, request_id: str, status: int, headers: list[tuple[str, str]], body: bytes) -> bool:
        return self.pending.reply(request_id, status, headers, body)

    async def http_request(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes,
                           timeout: float) -> Any:
        from relaymq.http.client import HttpClientError, request

        try:
            return await request(method, url, headers=headers, body=body, timeout=timeout)
        except HttpClientError as err:
            if "no response within" in str(err):
                raise TimeoutError(str(err)) from None
            raise OSError(str(err)) from None

    def trace(self, node: str, text: str, destination: str) -> None:
        if destination == "log":
            log.info("%s: %s", node, text)
            return
        line = text + "\n"
        asyncio.get_running_loop().run_in_executor(None, _append, destination, line)


def _append(path: str, line: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError as err:
        log.error("trace file %s: %s", path, err)
