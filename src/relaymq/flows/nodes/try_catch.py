"""TryCatch: run the ``try`` path; when it raises, discard what it put or published and run
the ``catch`` path with the exception in the ExceptionList (flows-http.md item 4). The
engine (relaymq.flows.flow) does the catching; this node only names the terminals."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.node import Emission, Node


class TryCatch(Node):
    KIND = "TryCatch"
    OUTPUTS = ("try", "catch")

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        return [("try", assembly)]
