"""Helpers for the pub/sub engine tests: send a psc command to a sans-I/O engine and sort out
what it answered (the response, publications put to subscriber queues, events)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from relaymq.message.message import Message
from relaymq.pubsub import psc
from relaymq.pubsub.engine import CONTROL_QUEUE, PubSubEngine
from relaymq.pubsub.model import ClearRetained, MqttPublish, Put

STREAM = psc.DEFAULT_STREAM


def make_engine(**options) -> PubSubEngine:
    counter = itertools.count(1)
    options.setdefault("known_qmgrs", ("QM2",))
    return PubSubEngine("QM1", new_id=lambda: next(counter).to_bytes(24, "big"), **options)


@dataclass
class Result:
    response: Message | None = None
    puts: list[Put] = field(default_factory=list)
    mqtt: list[MqttPublish] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)

    @property
    def completion(self) -> str:
        assert self.response is not None, "no response was sent"
        return psc.reply_reasons(self.response)[0]

    @property
    def reasons(self) -> list[int]:
        assert self.response is not None, "no response was sent"
        return psc.reply_reasons(self.response)[1]

    def to(self, queue: str) -> list[Message]:
        return [p.message for p in self.puts if p.queue == queue]

    def topics_to(self, queue: str) -> list[str]:
        return [str(m.mq.first_rfh2().get("psc.Topic")) for m in self.to(queue)]


def sort(actions) -> Result:
    result = Result()
    for action in actions:
        if isinstance(action, Put) and action.purpose == "response":
            assert result.response is None, "two responses"
            result.response = action.message
        elif isinstance(action, Put):
            result.puts.append(action)
        elif isinstance(action, MqttPublish):
            result.mqtt.append(action)
        elif isinstance(action, ClearRetained):
            result.cleared.append(action.topic)
    return result


def send(engine: PubSubEngine, command: str, *, queue: str | None = None, now: float = 1000.0,
         reply_to: str = "REPLY.Q", user_id: str = "alice", **params) -> Result:
    """Put a command (a REQUEST, so a response always comes) to the control queue (RegSub,
    DeregSub, ReqUpdate) or the default stream queue (Publish, DeletePub)."""
    if queue is None:
        queue = CONTROL_QUEUE if command in psc.CONTROL_COMMANDS else STREAM
    message = psc.command_message(command, reply_to=reply_to, user_id=user_id, **params)
    return sort(engine.handle_message(message, queue, now))


def send_message(engine: PubSubEngine, message: Message, queue: str, now: float = 1000.0) -> Result:
    return sort(engine.handle_message(message, queue, now))
