"""The node contract: named output terminals, declared properties, one ``evaluate``.

A node is configured once (its properties are checked when the flow is built, so a bad
definition fails at deploy time, not on the first message) and then evaluated per message:
``evaluate(assembly, context)`` returns the ``(terminal, assembly)`` pairs it propagates, in
order. Nodes that only transform (Compute, Filter, Route, transforms, ResetContentDescriptor,
Trace, Throw) never touch ``context`` for I/O, so the Spark pipeline can run the same classes
over rows of messages. Output nodes record their effects in ``context`` (the unit of work)
and ``NEEDS_LOOP`` nodes (HTTPRequest) are coroutines.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from relaymq.flows.assembly import Assembly
from relaymq.flows.errors import FlowDefinitionError

if TYPE_CHECKING:
    from relaymq.flows.context import RunContext

Emission = tuple[str, Assembly]
#: What ``evaluate`` returns: the emissions, or for a NEEDS_LOOP node a coroutine of them.
Emissions = list[Emission] | Coroutine[Any, Any, list[Emission]]

_MISSING = object()


@dataclass(frozen=True)
class Prop:
    """One node property: its type(s), default (``required`` when there is none) and an
    extra check returning what was expected, or None."""

    types: tuple[type, ...]
    default: Any = _MISSING
    check: Callable[[Any], str | None] | None = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is _MISSING


def positive(value: Any) -> str | None:
    return None if value > 0 else "a number > 0"


def non_negative(value: Any) -> str | None:
    return None if value >= 0 else "a number >= 0"


def choice(*options: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in options else "one of " + ", ".join(options)
    return check


def _type_names(types: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "a mapping"}
    return " or ".join(names.get(t, t.__name__) for t in types)


class Node:
    """Base of every node type. Subclasses set KIND, OUTPUTS, PROPERTIES."""

    KIND: ClassVar[str] = ""
    OUTPUTS: ClassVar[tuple[str, ...]] = ("out", "failure")
    PROPERTIES: ClassVar[Mapping[str, Prop]] = {}
    #: An input node starts a flow (nothing may connect to it).
    IS_INPUT: ClassVar[bool] = False
    #: evaluate is a coroutine function (the node waits for I/O).
    NEEDS_LOOP: ClassVar[bool] = False

    def __init__(self, name: str, properties: Mapping[str, Any] | None = None, *,
                 source: str | None = None) -> None:
        self.name = name
        self.source = source
        self.props = self._check_properties(dict(properties or {}))
        self.configure()

    # -- configuration ---------------------------------------------------------------------
    def _check_properties(self, raw: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in raw:
            if key not in self.PROPERTIES:
                known = ", ".join(sorted(self.PROPERTIES)) or "none"
                raise self.error(f"unknown property for a {self.KIND} node (known: {known})", key)
        for key, spec in self.PROPERTIES.items():
            if key not in raw:
                if spec.required:
                    raise self.error("required property is missing", key)
                out[key] = spec.default
                continue
            value = raw[key]
            ok = isinstance(value, spec.types) and not (isinstance(value, bool) and bool not in spec.types)
            if float in spec.types and isinstance(value, int) and not isinstance(value, bool):
                ok, value = True, float(value)
            if not ok:
                raise self.error(f"expected {_type_names(spec.types)}, got {value!r}", key)
            if spec.check is not None and (expected := spec.check(value)) is not None:
                raise self.error(f"expected {expected}, got {value!r}", key)
            out[key] = value
        return out

    def configure(self) -> None:
        """Compile what the properties describe (selectors, code); raise ``self.error``."""

    def error(self, message: str, key: str | None = None) -> FlowDefinitionError:
        return FlowDefinitionError(message, source=self.source, node=self.name, key=key)

    @property
    def outputs(self) -> tuple[str, ...]:
        """Output terminal names (Route adds its own)."""
        return self.OUTPUTS

    # -- per message -----------------------------------------------------------------------
    def evaluate(self, assembly: Assembly, context: RunContext) -> Emissions:
        """Propagate ``assembly``: the terminals and assemblies, in order."""
        return [("out", assembly)]

    def __repr__(self) -> str:
        return f"<{self.KIND} {self.name!r}>"
