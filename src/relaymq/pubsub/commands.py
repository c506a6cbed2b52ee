"""The psc command protocol of one broker (pubsub.md items 25-28, 33-34; seed 003
l.5248-7610): a message from the control queue or a publication input queue in, the
response and the command's actions out.

Why a part of its own: reading the command, sending it to its handler, turning any failure
into the seed's response (3008 for an internal one) and addressing that response are the
same for every command; Publish and DeletePub are here, the subscription commands are
``registration``'s.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from relaymq.message.constants import MQMT_REPLY, MQMT_REPORT, MQPER_PERSISTENT
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqdlh import MQDLH
from relaymq.message.mqrfh import MQRFH
from relaymq.message.tree import Element
from relaymq.pubsub import psc as wire
from relaymq.pubsub import reasons as r
from relaymq.pubsub.checks import DEL_OPTIONS, PUB_OPTIONS, ZERO_ID, CommandChecks
from relaymq.pubsub.delivery import MQAT_BROKER
from relaymq.pubsub.model import DEFAULT_SUBPOINT, Action, DeadLetter, Publication, Put, SubscriberId
from relaymq.pubsub.registration import Registration
from relaymq.pubsub.retained_store import RetainedPublications
from relaymq.pubsub.topicacl import PUBLISH

log = logging.getLogger("relaymq.pubsub")

CONTROL_QUEUE = "SYSTEM.BROKER.CONTROL.QUEUE"

Handler = Callable[[wire.Command, wire.Response, str, float], list[Action]]


class CommandProcessor:
    """Commands in, responses and actions out; ``publish`` delivers a publication (the
    engine's, which hands default-point publications to the MQTT broker)."""

    def __init__(self, qmgr_name: str, *, checks: CommandChecks, registration: Registration,
                 retained: RetainedPublications, publish: Callable[[Publication, float], list[Action]],
                 input_queues: dict[str, str], control_queue: str) -> None:
        self.qmgr_name = qmgr_name
        self.checks = checks
        self.registration = registration
        self.retained = retained
        self.publish = publish
        self.input_queues = input_queues
        self.control_queue = control_queue
        self.handlers: dict[str, Handler] = {
            wire.PUBLISH: self._publish, wire.DELETE_PUB: self._delete_pub,
            wire.REG_SUB: lambda c, resp, _q, now: registration.reg_sub(c, resp, now),
            wire.DEREG_SUB: lambda c, resp, _q, now: registration.dereg_sub(c, resp, now),
            wire.REQ_UPDATE: lambda c, resp, _q, now: registration.req_update(c, resp, now),
        }

    def handle_message(self, message: Message, queue: str, now: float) -> list[Action]:
        """One message from the control queue or a publication input queue (items 26-37)."""
        try:
            command = wire.read_command(message)
        except r.PscError as err:
            loose = loose_command(message)
            return self._respond(loose, wire.Response.error(err)) if loose is not None else []
        if command is None:
            if wire.is_response(message):
                return []  # an inbound pscr is ignored (item 26, seed 5248-5264)
            return self._not_a_command(message, queue)
        try:
            if (command.name in wire.CONTROL_COMMANDS) != (queue == self.control_queue):
                raise r.PscError(r.INCORRECT_Q, f"{command.name} sent to {queue}")
            response = wire.Response()
            after = self.handlers[command.name](command, response, queue, now)
        except r.PscError as err:
            return self._respond(command, wire.Response.error(err))
        except Exception:  # an internal failure must answer, not kill the listener (3008)
            log.exception("pub/sub %s command failed", command.name)
            return self._respond(command, wire.Response.error(r.PscError(r.COMMAND_FAILED)))
        return [*self._respond(command, response), *after]

    def _not_a_command(self, message: Message, queue: str) -> list[Action]:
        """A message with no psc command on the control queue or a publication input queue:
        logged, answered with 2336 RFH_COMMAND_ERROR when it names a ReplyToQ (and is not
        itself a reply or report, so that two brokers never bounce errors forever), and put on
        the dead-letter queue with that reason, so nothing is lost silently (docs/pubsub.md)."""
        md = message.mq.md
        log.warning("pub/sub: a message on %s has no psc command (MsgId %s, from %s); "
                    "it goes to the dead-letter queue", queue, md.MsgId.hex(), md.PutApplName.strip() or "?")
        actions: list[Action] = []
        if md.ReplyToQ.strip() and md.MsgType not in (MQMT_REPLY, MQMT_REPORT):
            command = wire.Command("", {}, Element("psc"), md)
            address = wire.reply_address(command, self.qmgr_name)
            error = wire.Response.error(r.PscError(r.RFH_COMMAND_ERROR, "no psc command"))
            if address is not None:
                actions.append(Put(address[0], address[1], wire.response_message(command, error, self.qmgr_name), "response"))
        actions.append(DeadLetter(message, r.RFH_COMMAND_ERROR, queue))
        return actions

    def failure(self, message: Message, reason: int) -> list[Action]:
        """The error response (if one is wanted) of a command that failed outside the engine
        (3008: its change could not be made durable)."""
        command = wire.command_of(message) or loose_command(message)
        return self._respond(command, wire.Response.error(r.PscError(reason))) if command is not None else []

    def _respond(self, command: wire.Command, response: wire.Response) -> list[Action]:
        if not wire.response_wanted(command.md, response.completion, command.in_body):
            return []
        address = wire.reply_address(command, self.qmgr_name)
        if address is None:
            return []
        return [Put(address[0], address[1], wire.response_message(command, response, self.qmgr_name), "response")]

    # ---------------------------------------------------------------- Publish (item 28)
    def _publish(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        options = self.checks.options(command, "PubOpt", PUB_OPTIONS, r.PUB_OPTIONS_ERROR)
        if "IsRetainedPub" in options:
            raise r.PscError(r.PUB_OPTIONS_ERROR, "IsRetainedPub is set by the broker only", PubOpt="IsRetainedPub")
        topics = self.checks.topics(command, publish=True)
        publisher = self._publisher(command, options)
        seq = command.one("SeqNum")
        if seq is not None and not seq.lstrip("-").isdigit():
            raise r.PscError(r.RFH_PARM_ERROR, "SeqNum is not an integer", SeqNum=seq)
        topics = self.checks.authorised(command, topics, PUBLISH, response)
        md = command.md
        domain = str(command.mcd.get("Msd")) if command.mcd is not None and command.mcd.get("Msd") else None
        usr = [(c.name, "" if c.value is None else str(c.value)) for c in command.usr.children] if command.usr else []
        actions: list[Action] = []
        for topic in topics:
            pub = Publication(
                topic, command.body, self.input_queues.get(queue, DEFAULT_SUBPOINT), usr, domain,
                command.body_format, md.Persistence == MQPER_PERSISTENT, max(md.Priority, 0),
                now + md.Expiry / 10 if md.Expiry > 0 else None, command.one("PubTime"), seq,
                retain="RetainPub" in options, local="Local" in options, publisher=publisher,
                other_subs_only="OtherSubsOnly" in options, user_id=command.user_id,
                untyped_usr=command.rfh1,
            )
            actions.extend(self.publish(pub, now))
        return actions

    def _publisher(self, command: wire.Command, options: list[str]) -> SubscriberId | None:
        """The publisher's own subscriber queue (seed 6021-6043), when it names one or asks
        OtherSubsOnly: 3074/3076 when it is not valid (seed 7082-7118 lists Publish among the
        commands that issue them); it must not be blank only with OtherSubsOnly."""
        own_queue = command.one("QName") or command.md.ReplyToQ.strip()
        if "OtherSubsOnly" not in options and not (own_queue and ("QName" in command.params or "QMgrName" in command.params)):
            return None
        correl = command.md.CorrelId if "CorrelAsId" in options and command.md.CorrelId != ZERO_ID else b""
        own = self.checks.subscriber(command, False)
        return SubscriberId(own.qmgr, own.queue, correl)

    # ---------------------------------------------------------------- DeletePub (item 25)
    def _delete_pub(self, command: wire.Command, response: wire.Response, queue: str, now: float) -> list[Action]:
        self.checks.options(command, "DelOpt", DEL_OPTIONS, r.DEL_OPTIONS_ERROR)
        topics = self.checks.topics(command, publish=False)
        topics = self.checks.authorised(command, topics, PUBLISH, response)
        sub_point = command.one("SubPoint", self.input_queues.get(queue, DEFAULT_SUBPOINT)) or DEFAULT_SUBPOINT
        return self.retained.delete(topics, sub_point)


def loose_command(message: Message) -> wire.Command | None:
    """Enough of a malformed command to address its error response."""
    rfh2 = message.mq.first_rfh2()
    psc = rfh2.folder("psc") if rfh2 is not None else None
    if psc is not None:
        return wire.Command("", {}, psc, message.mq.md)
    v1 = next((h for h in message.mq.headers if isinstance(h, MQRFH)), None)
    if v1 is not None:
        return wire.Command("", {}, wire._psc_from_rfh1(v1), message.mq.md, rfh1=True)
    found = wire.psc_in_body(message.mq)
    return wire.Command("", {}, found[0], message.mq.md, in_body=True) if found is not None else None


def dead_letter_message(action: DeadLetter, qmgr_name: str, now: float) -> Message:
    """``action.message`` as it goes to the dead-letter queue: an MQDLH (reason, the queue it
    was taken from, the broker as putter) in front of its headers and body, as MQ does."""
    from relaymq.message.jms_mq import put_date_time  # the JMS mapping: only for a dead letter

    original = action.message.mq
    put_date, put_time = put_date_time(int(now * 1000))
    dlh = MQDLH(Reason=action.reason, DestQName=action.queue, DestQMgrName=qmgr_name,
                Encoding=original.md.Encoding, CodedCharSetId=original.md.CodedCharSetId,
                Format=original.md.Format, PutApplType=MQAT_BROKER, PutApplName=qmgr_name[:28],
                PutDate=put_date, PutTime=put_time)
    md = dataclasses.replace(original.md, Format=MQDLH.FORMAT_NAME)
    return Message(MQMessage(md=md, headers=[dlh, *original.headers], body=original.body))
