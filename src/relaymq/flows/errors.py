"""Errors of message flows (flows-http.md items 1, 4).

Two families: a flow *definition* that cannot be deployed (reported with the file, the node
and the key at fault, so an operator can fix the YAML), and an exception *while a message
runs* through a flow, which the engine routes to failure/catch paths and records in the
message's ExceptionList, as the seed's broker does (seed 000 l.443).
"""

from __future__ import annotations


class FlowDefinitionError(ValueError):
    """A flow definition is invalid. ``str()`` is one line: ``FILE: node 'N': key 'K': why``."""

    def __init__(self, message: str, *, source: str | None = None, node: str | None = None,
                 key: str | None = None) -> None:
        self.source = source
        self.node = node
        self.key = key
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source or "<flow>"]
        if self.node is not None:
            parts.append(f"node {self.node!r}")
        if self.key is not None:
            parts.append(f"key {self.key!r}")
        parts.append(self.message)
        return ": ".join(parts)


class FlowException(Exception):
    """An exception raised while a message runs through a node: the node name, a number
    (IBM's BIP numbers for user exceptions thrown by Throw nodes) and a one-line text."""

    kind = "RecoverableException"

    def __init__(self, text: str, *, node: str = "", number: int = 2230) -> None:
        self.text = text
        self.node = node
        self.number = number
        super().__init__(text)

    def describe(self) -> dict[str, object]:
        return {"Type": self.kind, "Node": self.node, "Number": self.number, "Text": self.text}


class UserException(FlowException):
    """Thrown on purpose by a Throw node (seed: user exceptions)."""

    kind = "UserException"


class TimeoutException(FlowException):
    """An HTTP request or reply did not complete in its time-out."""

    kind = "TimeoutException"


class NeedsEventLoop(RuntimeError):
    """A node that does I/O was run by the synchronous driver (Spark, tests of pure nodes)."""
