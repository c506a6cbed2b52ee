"""Throw: raise a user exception, so that a failure or catch path takes the message
(flows-http.md items 2 and 4)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.errors import UserException
from relaymq.flows.node import Emission, Node, Prop, non_negative


class Throw(Node):
    KIND = "Throw"
    OUTPUTS = ()
    PROPERTIES = {
        "message": Prop((str,), "thrown by a Throw node"),
        "number": Prop((int,), 3001, non_negative),
    }

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        raise UserException(self.props["message"], node=self.name, number=self.props["number"])
