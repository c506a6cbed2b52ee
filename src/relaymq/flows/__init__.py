"""Message flows: definitions, the node library and the runtime (flows-http.md).

Pure parts (no I/O) that the Spark pipeline reuses: :class:`Flow` (``run_sync``),
:func:`evaluate_node`, :func:`build_flow`/:func:`load_flow`, the nodes in
:mod:`relaymq.flows.nodes`; :func:`run_messages` runs messages through a flow with the
broker runtime's failure handling (reruns, failure terminal, backout queue) and collects what
each run would commit. The broker side: :mod:`relaymq.flows.service`.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.flows.assembly import Assembly
    from relaymq.flows.context import CollectingPorts, RunContext
    from relaymq.flows.definition import build_flow, load_definition, load_flow, parse_yaml
    from relaymq.flows.errors import FlowDefinitionError, FlowException, UserException
    from relaymq.flows.flow import Connection, Flow, FlowSettings, evaluate_node
    from relaymq.flows.node import Node
    from relaymq.flows.registry import NODE_TYPES
    from relaymq.flows.runtime import RunResult, run_messages

__getattr__ = exports(__name__, {
    "assembly": ("Assembly",),
    "context": ("CollectingPorts", "RunContext",),
    "definition": ("build_flow", "load_definition", "load_flow", "parse_yaml",),
    "errors": ("FlowDefinitionError", "FlowException", "UserException",),
    "flow": ("Connection", "Flow", "FlowSettings", "evaluate_node",),
    "node": ("Node",),
    "registry": ("NODE_TYPES",),
    "runtime": ("RunResult", "run_messages",),
})

__all__ = [
    "Assembly", "CollectingPorts", "Connection", "Flow", "FlowDefinitionError", "FlowException",
    "FlowSettings", "NODE_TYPES", "Node", "RunContext", "RunResult", "UserException", "build_flow",
    "evaluate_node", "load_definition", "load_flow", "parse_yaml", "run_messages",
]
