"""What every input node shares: the terminals and the domain its messages are parsed in.

An input node does not evaluate: the runtime (relaymq.flows.runtime) takes messages from its
transport and runs them from its ``out`` terminal. ``catch`` takes a message whose run raised
(its outputs discarded); ``failure`` takes a message backed out more than the flow's backout
threshold (flows-http.md item 4).
"""

from __future__ import annotations

from typing import Any

from relaymq.flows.node import Node
from relaymq.message.domains.registry import canonical_domain
from relaymq.message.errors import DomainError


class InputNode(Node):
    IS_INPUT = True
    OUTPUTS = ("out", "failure", "catch")

    def configure(self) -> None:
        domain = self.props.get("domain", "")
        try:
            self.domain = canonical_domain(domain) if domain else None
        except DomainError as err:
            raise self.error(err.reason, "domain") from None

    def evaluate(self, assembly: Any, context: Any) -> Any:  # pragma: no cover - never called
        raise TypeError("input nodes are driven by the runtime")
