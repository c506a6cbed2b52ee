"""The message assembly that travels between nodes: the message plus the two scratch trees
and the exception list, as the seed's broker passes them (Root, LocalEnvironment,
Environment, ExceptionList).

* ``local_environment`` is copied when a node propagates a new message, so a branch cannot
  change what a sibling branch sees; ``Destination.HTTP.RequestIdentifier`` and
  ``Destination.RouteToLabel`` live there.
* ``environment`` is shared by the whole run of one input message.
* ``exceptions`` is what failure and catch paths are given.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from relaymq.flows.errors import FlowException
from relaymq.message.message import Message
from relaymq.message.tree import Element


def copy_message(message: Message) -> Message:
    """A deep copy: MQMD, headers, body (bytes and, when parsed, the tree) and transport folders."""
    parsed = message._body  # noqa: SLF001 - copying the parsed tree avoids a re-parse
    out = Message(copy.deepcopy(message.mq), configured_domain=message.configured_domain,
                  transport=[folder.copy() for folder in message.transport])
    if parsed is not None:
        out.set_body(parsed.copy())
    return out


def transport_folder(message: Message, name: str) -> Element | None:
    """A transport header folder (``HTTPInputHeader``, ``JMSTransport``...) by name."""
    for folder in message.transport:
        if folder.name == name:
            return folder
    return None


def replace_transport_folder(message: Message, folder: Element) -> None:
    message.transport = [f for f in message.transport if f.name != folder.name] + [folder]


@dataclass
class Assembly:
    """What a node receives and propagates."""

    message: Message
    local_environment: Element = field(default_factory=lambda: Element("LocalEnvironment"))
    environment: Element = field(default_factory=lambda: Element("Environment"))
    exceptions: list[FlowException] = field(default_factory=list)

    def with_message(self, message: Message) -> Assembly:
        """A new assembly for a message a node built (local environment copied)."""
        return Assembly(message, self.local_environment.copy(), self.environment, list(self.exceptions))

    def with_exception(self, error: FlowException) -> Assembly:
        return Assembly(self.message, self.local_environment, self.environment, self.exceptions + [error])

    def exception_list(self) -> Element:
        """The ExceptionList tree (what a Trace node or a Compute on a catch path reads)."""
        root = Element("ExceptionList")
        for error in self.exceptions:
            item = root.add(error.kind)
            for key, value in error.describe().items():
                item.add(key, value)
        return root
