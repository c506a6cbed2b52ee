"""Trace: write a line built from a pattern to a destination, then pass the message on
unchanged (flows-http.md item 2). ``${path}`` in the pattern is replaced by the value at a
path, written as in selectors: ``${Root.MQMD.Priority}``, ``${usr.colour}``, ``${Body.a.b}``, ``${LocalEnvironment.x}``,
``${ExceptionList}`` (the exception list as text). Destinations: ``log`` (the broker log),
``file`` (appended to ``file``), ``none``."""

from __future__ import annotations

import re
from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.node import Emission, Node, Prop, choice
from relaymq.selector.resolvers import message_resolver

_FIELD = re.compile(r"\$\{([^}]*)\}")


def render(pattern: str, assembly: Assembly) -> str:
    """The pattern with every ``${path}`` replaced (missing values are empty)."""

    resolve = message_resolver(assembly.message)

    def value(match: re.Match[str]) -> str:
        path = match.group(1).strip()
        if path == "ExceptionList":
            return "; ".join(f"{e.kind} {e.number} in {e.node}: {e.text}" for e in assembly.exceptions)
        head, _, rest = path.partition(".")
        if head == "LocalEnvironment":
            found = assembly.local_environment.get(rest) if rest else None
        elif head == "Environment":
            found = assembly.environment.get(rest) if rest else None
        else:  # the same dotted references as selectors (README decision 3)
            found = resolve(path)
        if isinstance(found, bytes):
            return found.hex()
        return "" if found is None else str(found)

    return _FIELD.sub(value, pattern)


class Trace(Node):
    KIND = "Trace"
    OUTPUTS = ("out",)
    PROPERTIES = {
        "pattern": Prop((str,), "${Root.MQMD.MsgId}"),
        "destination": Prop((str,), "log", choice("log", "file", "none")),
        "file": Prop((str,), ""),
    }

    def configure(self) -> None:
        if self.props["destination"] == "file" and not self.props["file"]:
            raise self.error("destination file needs a file", "file")

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        if self.props["destination"] != "none":
            target = self.props["file"] if self.props["destination"] == "file" else "log"
            context.ports.trace(self.name, render(self.props["pattern"], assembly), target)
        return [("out", assembly)]
