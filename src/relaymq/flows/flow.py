"""A flow: nodes, connections between their terminals, and the engine that runs one message
through them (flows-http.md items 1, 4).

Propagation is depth first, as in the seed's broker: a node's emissions run downstream one
after the other before the node's next emission. The engine is synchronous - the broker runs
it on a worker thread of the flow's execution group (relaymq.flows.runtime), the Spark
pipeline on its executors - and a node that waits for I/O (HTTPRequest, a coroutine) is handed
to ``context.wait``, which runs it on the broker's event loop (or refuses: NeedsEventLoop).

An exception in a node goes to that node's ``failure`` terminal when it is connected, else back up the path to the nearest TryCatch
(its ``catch`` terminal) or to the input node, where the runtime decides (catch path, backout,
backout queue). Outputs recorded on a path that ends in an exception are discarded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from relaymq.flows.assembly import Assembly
from relaymq.flows.context import CollectingPorts, RunContext, drive
from relaymq.flows.errors import FlowDefinitionError, FlowException, NeedsEventLoop
from relaymq.flows.node import Node
from relaymq.message.message import Message

#: Terminal prefix a RouteToLabel node emits on: ``label:NAME`` jumps to the Label node NAME.
LABEL_PREFIX = "label:"
#: Bound on node evaluations per input message, so a RouteToLabel loop cannot hang a flow.
MAX_STEPS = 100_000


@dataclass(frozen=True)
class Connection:
    """``source.terminal -> target`` (a target's only input terminal is ``in``)."""

    source: str
    terminal: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}.{self.terminal} -> {self.target}"


@dataclass
class FlowSettings:
    """Flow-wide properties: instances and ordering (item 3), backout (item 4)."""

    additional_instances: int = 0
    order_mode: str = "default"  # or "user_id": one UserIdentifier's messages stay in order
    backout_threshold: int = 3
    backout_queue: str = ""
    description: str = ""


class NodeCounts:
    """How often each node of a flow was evaluated and how often it raised (the metrics
    endpoint's per-node counters). Node code runs on the execution group's threads, so the
    counts change under a lock: a metric that loses increments would mislead."""

    __slots__ = ("_lock", "evaluations", "failures")

    def __init__(self, names: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self.evaluations: dict[str, int] = dict.fromkeys(names, 0)
        self.failures: dict[str, int] = dict.fromkeys(self.evaluations, 0)

    def evaluated(self, name: str) -> None:
        with self._lock:
            self.evaluations[name] += 1

    def failed(self, name: str) -> None:
        with self._lock:
            self.failures[name] += 1

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """node -> (evaluations, failures), read together."""
        with self._lock:
            return {name: (count, self.failures[name]) for name, count in self.evaluations.items()}


class Flow:
    """A validated graph of nodes; immutable once built (redeploy builds a new one)."""

    def __init__(self, name: str, nodes: Iterable[Node], connections: Iterable[Connection],
                 settings: FlowSettings | None = None, *, source: str | None = None,
                 definition: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.source = source
        self.settings = settings or FlowSettings()
        self.definition = dict(definition or {})
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            if node.name in self.nodes:
                raise FlowDefinitionError("two nodes have this name", source=source, node=node.name)
            self.nodes[node.name] = node
        self.connections: list[Connection] = list(connections)
        self._wires: dict[tuple[str, str], list[str]] = {}
        for c in self.connections:
            self._check_connection(c)
            self._wires.setdefault((c.source, c.terminal), []).append(c.target)
        #: Evaluations and failures of each node since the flow was built (deployed).
        self.node_counts = NodeCounts(self.nodes)
        self.labels: dict[str, str] = {}
        for node in self.nodes.values():
            label = getattr(node, "label", None)
            if label is not None:
                if label in self.labels:
                    raise FlowDefinitionError(f"label {label!r} is used by two Label nodes", source=source, node=node.name)
                self.labels[label] = node.name
        if not self.input_nodes():
            raise FlowDefinitionError("a flow needs at least one input node", source=source)

    def _check_connection(self, c: Connection) -> None:
        where = f"connection {c}"
        if c.source not in self.nodes:
            raise FlowDefinitionError(f"{where}: no node called {c.source!r}", source=self.source)
        if c.target not in self.nodes:
            raise FlowDefinitionError(f"{where}: no node called {c.target!r}", source=self.source)
        source = self.nodes[c.source]
        if c.terminal not in source.outputs:
            raise FlowDefinitionError(
                f"{where}: a {source.KIND} node has no terminal {c.terminal!r} "
                f"(it has {', '.join(source.outputs)})", source=self.source, node=c.source)
        if self.nodes[c.target].IS_INPUT:
            raise FlowDefinitionError(f"{where}: an input node has no input terminal", source=self.source, node=c.target)

    # -- structure -------------------------------------------------------------------------
    def input_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.IS_INPUT]

    def connected(self, node: str, terminal: str) -> bool:
        return bool(self._wires.get((node, terminal)))

    # -- running ---------------------------------------------------------------------------
    def propagate(self, node: str, terminal: str, assembly: Assembly, context: RunContext) -> None:
        """Run everything wired to ``node.terminal`` with ``assembly`` (nothing when unwired:
        the message is simply dropped there, as on an unconnected terminal in the seed)."""
        if terminal.startswith(LABEL_PREFIX):
            label = terminal[len(LABEL_PREFIX):]
            target = self.labels.get(label)
            if target is None:
                raise FlowException(f"no Label node with label {label!r}", node=node)
            self.run_node(self.nodes[target], assembly, context)
            return
        for target in self._wires.get((node, terminal), ()):
            self.run_node(self.nodes[target], assembly, context)

    def run_node(self, node: Node, assembly: Assembly, context: RunContext) -> None:
        context.steps += 1
        if context.steps > MAX_STEPS:
            raise FlowException(f"more than {MAX_STEPS} node evaluations for one message (a loop?)", node=node.name)
        mark = len(context.pending)
        self.node_counts.evaluated(node.name)
        try:
            result = node.evaluate(assembly, context)
            emissions = result if isinstance(result, list) else context.wait(result)  # a NEEDS_LOOP node's coroutine
        except NeedsEventLoop:
            raise
        except FlowException as err:
            err.node = err.node or node.name
            self.node_counts.failed(node.name)
            self._fail(node, assembly, context, err, mark)
            return
        except Exception as exc:  # a bug or bad data in a node: a flow error, never a crash
            self.node_counts.failed(node.name)
            self._fail(node, assembly, context, as_flow_exception(exc, node.name), mark)
            return
        for terminal, out in emissions:
            if terminal == "try":
                self._try(node, out, context)
            else:
                self.propagate(node.name, terminal, out, context)

    def _fail(self, node: Node, assembly: Assembly, context: RunContext, err: FlowException, mark: int) -> None:
        del context.pending[mark:]
        if self.connected(node.name, "failure"):
            self.propagate(node.name, "failure", assembly.with_exception(err), context)
        else:
            raise err

    def _try(self, node: Node, assembly: Assembly, context: RunContext) -> None:
        """TryCatch: run the try path; on an exception discard its outputs and run catch."""
        mark = len(context.pending)
        try:
            self.propagate(node.name, "try", assembly, context)
        except FlowException as err:
            del context.pending[mark:]
            if not self.connected(node.name, "catch"):
                raise
            self.propagate(node.name, "catch", assembly.with_exception(err), context)

    def process(self, input_node: str, assembly: Assembly, context: RunContext) -> None:
        """Run one input message from ``input_node``: its ``out`` path, and on an exception
        its ``catch`` path when connected (the failed path's outputs discarded). Raises the
        FlowException when neither handled it: the runtime backs the message out."""
        self.node_counts.evaluated(input_node)
        try:
            self.propagate(input_node, "out", assembly, context)
        except FlowException as err:
            context.rollback()
            if not self.connected(input_node, "catch"):
                raise
            self.propagate(input_node, "catch", assembly.with_exception(err), context)

    # -- outside the broker ----------------------------------------------------------------
    def run_sync(self, message: Message, input_node: str | None = None,
                 ports: CollectingPorts | None = None) -> CollectingPorts:
        """Run one message through the flow without an event loop and commit its outputs to
        ``ports`` (a new CollectingPorts by default). Raises FlowException when the flow
        fails, NeedsEventLoop when a node needs I/O (HTTPRequest)."""
        ports = ports if ports is not None else CollectingPorts()
        start = input_node or self.input_nodes()[0].name
        context = RunContext(ports, self.name)
        self.process(start, Assembly(message), context)
        drive(context.commit())
        return ports


def as_flow_exception(exc: BaseException, node: str) -> FlowException:
    return FlowException(f"{type(exc).__name__}: {exc}", node=node)


def evaluate_node(node: Node, message: Message) -> list[tuple[str, Message]]:
    """One node over one message, with no I/O: what the Spark pipeline maps over a DataFrame
    of messages. Returns ``(terminal, message)`` pairs; an exception raises FlowException."""
    try:
        result = node.evaluate(Assembly(message), RunContext(CollectingPorts(), ""))
        emissions = result if isinstance(result, list) else drive(result)  # a NEEDS_LOOP node's coroutine
    except FlowException:
        raise
    except NeedsEventLoop:
        raise
    except Exception as exc:
        raise as_flow_exception(exc, node.name) from exc
    return [(terminal, out.message) for terminal, out in emissions]
