"""Filter: route a message by a selector over its tree to ``true``, ``false`` or ``unknown``
(README decision 3: the one expression language; seed 000 l.2744-2779)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.node import Emission, Node, Prop
from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.resolvers import message_resolver


class Filter(Node):
    KIND = "Filter"
    OUTPUTS = ("true", "false", "unknown", "failure")
    PROPERTIES = {"expression": Prop((str,), doc="a selector: usr.colour = 'blue' AND Body.qty > 3")}

    def configure(self) -> None:
        try:
            self.selector = compile_selector(self.props["expression"])
        except SelectorError as err:
            raise self.error(str(err), "expression") from None

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        result = self.selector.evaluate(message_resolver(assembly.message))
        terminal = "unknown" if result is None else ("true" if result else "false")
        return [(terminal, assembly)]
