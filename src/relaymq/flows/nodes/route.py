"""Route: a table of (selector, terminal) rows; the message goes to the terminal of the
first matching row, or of every matching row, else to ``default``. Terminal names are the
flow author's own (flows-http.md item 2: labels)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.node import Emission, Node, Prop, choice
from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.resolvers import message_resolver


class Route(Node):
    KIND = "Route"
    OUTPUTS = ("default", "failure")
    PROPERTIES = {
        "filters": Prop((list,), doc="[{expression: ..., terminal: ...}, ...]"),
        "distribution": Prop((str,), "all", choice("all", "first")),
    }

    def configure(self) -> None:
        self.rows = []
        for i, row in enumerate(self.props["filters"]):
            key = f"filters[{i}]"
            if not isinstance(row, dict) or set(row) != {"expression", "terminal"}:
                raise self.error("each row is a mapping with expression and terminal", key)
            terminal = row["terminal"]
            if not isinstance(terminal, str) or not terminal or terminal in ("default", "failure"):
                raise self.error("terminal must be a new non-empty name", f"{key}.terminal")
            try:
                selector = compile_selector(str(row["expression"]))
            except SelectorError as err:
                raise self.error(str(err), f"{key}.expression") from None
            self.rows.append((selector, terminal))

    @property
    def outputs(self) -> tuple[str, ...]:
        extra = tuple(dict.fromkeys(t for _, t in self.rows))
        return extra + self.OUTPUTS

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        resolve = message_resolver(assembly.message)
        out: list[Emission] = []
        for selector, terminal in self.rows:
            if selector.matches(resolve):
                out.append((terminal, assembly))
                if self.props["distribution"] == "first":
                    break
        return out or [("default", assembly)]
