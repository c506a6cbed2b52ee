"""Label: a named entry point that a RouteToLabel node jumps to (flows-http.md item 2)."""

from __future__ import annotations

from relaymq.flows.node import Node, Prop


class Label(Node):
    KIND = "Label"
    OUTPUTS = ("out",)
    PROPERTIES = {"label": Prop((str,), doc="the name RouteToLabel uses")}

    def configure(self) -> None:
        self.label: str = self.props["label"]
