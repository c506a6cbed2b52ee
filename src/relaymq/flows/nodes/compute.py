"""Compute: a Python function over the message tree that builds and propagates messages,
the product's ESQL Compute/JavaCompute (seed 000 l.479-504; flows-http.md item 2).

The function is ``main(compute)`` where ``compute`` is a :class:`ComputeContext`: it reads
``compute.input`` (a Message) and the environments, builds messages (``new_message`` copies
the MQMD as ``SET OutputRoot.MQMD = InputRoot.MQMD`` does) and calls ``propagate(message,
terminal)`` any number of times, like ESQL's PROPAGATE. Returning a Message (or a list of
them) propagates those to ``out``; returning None or False propagates nothing more.

Where the code comes from: ``module`` (an importable ``package.module``) or ``code`` (Python
source, which the definition loader also fills from a ``file`` next to the YAML, so a
deployed flow carries its code with it). ``function`` names the callable (default ``main``).
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import Any

from relaymq.flows.assembly import Assembly, copy_message
from relaymq.flows.node import Emission, Node, Prop
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.tree import Element


class ComputeContext:
    """What a compute function sees and does."""

    def __init__(self, assembly: Assembly, outputs: tuple[str, ...]) -> None:
        self.assembly = assembly
        self.input: Message = assembly.message
        self.local_environment: Element = assembly.local_environment
        self.environment: Element = assembly.environment
        self.exception_list: Element = assembly.exception_list()
        self._outputs = outputs
        self.emitted: list[Emission] = []

    def new_message(self, *, copy_mqmd: bool = True, domain: str | None = None) -> Message:
        """An empty message; with ``copy_mqmd`` its MQMD is a copy of the input's."""
        mq = MQMessage(md=copy.deepcopy(self.input.mq.md) if copy_mqmd else MQMessage().md)
        return Message(mq, configured_domain=domain)

    def copy_input(self) -> Message:
        """A deep copy of the input message (``SET OutputRoot = InputRoot``)."""
        return copy_message(self.input)

    def propagate(self, message: Message, terminal: str = "out") -> None:
        if terminal not in self._outputs:
            raise ValueError(f"no terminal {terminal!r} (have {', '.join(self._outputs)})")
        self.emitted.append((terminal, self.assembly.with_message(message)))


def load_function(module: str, code: str, function: str, where: str) -> Callable[..., Any]:
    """The compute callable from a module or from source; raises ValueError with the reason."""
    if module:
        namespace = vars(importlib.import_module(module))
    else:
        namespace = {"__name__": f"relaymq_flow_code_{abs(hash(where))}"}
        exec(compile(code, where, "exec"), namespace)  # noqa: S102 - deployed flow code, like ESQL
    fn = namespace.get(function)
    if not callable(fn):
        raise ValueError(f"the code defines no function {function!r}")
    return fn


class Compute(Node):
    KIND = "Compute"
    OUTPUTS = ("out", "out1", "out2", "out3", "out4", "failure")
    PROPERTIES = {
        "module": Prop((str,), "", doc="importable module holding the function"),
        "code": Prop((str,), "", doc="Python source defining the function"),
        "file": Prop((str,), "", doc="a .py file, read into code by the loader"),
        "function": Prop((str,), "main"),
    }

    def configure(self) -> None:
        module, code = self.props["module"], self.props["code"]
        if bool(module) == bool(code):
            raise self.error("give exactly one of module, code or file", "module" if module else "code")
        try:
            self.function = load_function(module, code, self.props["function"],
                                          f"<flow node {self.name}>")
        except Exception as exc:  # import or syntax errors are definition errors
            raise self.error(f"{type(exc).__name__}: {exc}", "module" if module else "code") from None

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        compute = ComputeContext(assembly, self.outputs)
        result = self.function(compute)
        if isinstance(result, Message):
            compute.propagate(result)
        elif isinstance(result, (list, tuple)):
            for message in result:
                compute.propagate(message)
        return compute.emitted
