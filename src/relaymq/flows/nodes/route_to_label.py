"""RouteToLabel: jump to the Label nodes named in ``LocalEnvironment.Destination.RouteToLabel
.Destination[*].labelname`` (set by a Compute node), as the seed's broker does; ``mode``
``first`` takes only the first name."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.errors import FlowException
from relaymq.flows.flow import LABEL_PREFIX
from relaymq.flows.node import Emission, Node, Prop, choice


class RouteToLabel(Node):
    KIND = "RouteToLabel"
    OUTPUTS = ("failure",)
    PROPERTIES = {"mode": Prop((str,), "all", choice("all", "first"))}

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        folder = assembly.local_environment.find("Destination.RouteToLabel")
        values = [d.get("labelname") for d in (folder.children_named("Destination") if folder else [])]
        names = [n for n in values if isinstance(n, str) and n]
        if not names:
            raise FlowException("LocalEnvironment.Destination.RouteToLabel names no label", node=self.name)
        if self.props["mode"] == "first":
            names = names[:1]
        return [(LABEL_PREFIX + name, assembly) for name in names]
