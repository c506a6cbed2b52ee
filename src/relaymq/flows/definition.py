"""The flow definition format: YAML, validated completely before a flow is deployed, every
error naming the file, the node and the key (flows-http.md item 1).

::

    flow: telemetry                 # name: letters, digits, . _ -
    description: split telemetry batches into publications
    additional_instances: 1         # workers beside the first (seed 000 l.508)
    order_mode: default             # or user_id: per-UserIdentifier order (seed 003 l.4665-4716)
    backout_threshold: 3            # runs before a failing message goes to failure
    backout_queue: ""               # where it goes when failure is not connected
    nodes:
      In:    {type: SCADAInput, port: 1884}
      Split: {type: Compute, file: telemetry_compute.py, function: split_batch}
      Out:   {type: Publication}
    connections:
      - In.out -> Split             # or {from: In, terminal: out, to: Split}
      - Split.out -> Out

A Compute ``file`` is read when the definition is loaded and carried as ``code``, so the
definition sent to a broker and kept under its data directory is self-contained.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from relaymq.flows.errors import FlowDefinitionError
from relaymq.flows.flow import Connection, Flow, FlowSettings
from relaymq.flows.names import NAME
from relaymq.flows.registry import NODE_TYPES

_ARROW = re.compile(r"^\s*([^.\s]+)\.([A-Za-z0-9_:-]+)\s*->\s*(\S+)\s*$")
_TOP_KEYS = {"flow", "description", "additional_instances", "order_mode", "backout_threshold",
             "backout_queue", "nodes", "connections"}


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """The YAML document as a mapping (safe loader: no tags, no objects; a key given twice in
    one mapping - two nodes of the same name - is an error with its line)."""
    import yaml

    from relaymq.flows.yaml_loader import UniqueKeyLoader

    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise FlowDefinitionError(f"not valid YAML{where}: {problem}", source=source) from None
    except RecursionError:  # the composer recurses once per level (issue 15: a typed error, no traceback)
        raise FlowDefinitionError("not valid YAML: nested too deeply", source=source) from None
    if not isinstance(data, dict):
        raise FlowDefinitionError("a flow definition is a YAML mapping with flow, nodes and connections", source=source)
    return data


def inline_files(data: dict[str, Any], base_dir: str, source: str) -> dict[str, Any]:
    """Replace every Compute ``file`` by the file's text in ``code`` (paths relative to the
    definition's directory)."""
    nodes = data.get("nodes")
    if not isinstance(nodes, dict):
        return data
    out = dict(data)
    out["nodes"] = {}
    for name, props in nodes.items():
        if isinstance(props, dict) and props.get("file"):
            path = props["file"]
            if not isinstance(path, str):
                raise FlowDefinitionError("expected a file name", source=source, node=str(name), key="file")
            full = path if os.path.isabs(path) else os.path.join(base_dir, path)
            try:
                with open(full, encoding="utf-8") as fh:
                    code = fh.read()
            except OSError as err:
                raise FlowDefinitionError(f"cannot read {full}: {err.strerror}", source=source, node=str(name), key="file") from None
            props = {k: v for k, v in props.items() if k != "file"}
            props["code"] = code
        out["nodes"][name] = props
    return out


def load_definition(path: str) -> dict[str, Any]:
    """Read a YAML flow file into a self-contained definition (not yet validated)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise FlowDefinitionError(f"cannot read: {err.strerror}", source=path) from None
    return inline_files(parse_yaml(text, path), os.path.dirname(os.path.abspath(path)), path)


def load_flow(path: str) -> Flow:
    """Read and validate a flow file."""
    return build_flow(load_definition(path), path)


def _int(data: Mapping[str, Any], key: str, default: int, low: int, source: str) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise FlowDefinitionError(f"expected an integer >= {low}, got {value!r}", source=source, key=key)
    return value


def _connection(item: Any, index: int, source: str) -> Connection:
    key = f"connections[{index}]"
    if isinstance(item, str):
        m = _ARROW.match(item)
        if not m:
            raise FlowDefinitionError(f"expected 'Node.terminal -> Node', got {item!r}", source=source, key=key)
        return Connection(m.group(1), m.group(2), m.group(3))
    if isinstance(item, dict) and set(item) <= {"from", "terminal", "to"} and {"from", "to"} <= set(item):
        values = [item["from"], item.get("terminal", "out"), item["to"]]
        if all(isinstance(v, str) and v for v in values):
            return Connection(*values)
    raise FlowDefinitionError("expected 'Node.terminal -> Node' or {from, terminal, to}", source=source, key=key)


def build_flow(data: Mapping[str, Any], source: str = "<flow>") -> Flow:
    """Validate a definition mapping and build its Flow; raises FlowDefinitionError."""
    for key in data:
        if key not in _TOP_KEYS:
            raise FlowDefinitionError(f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})", source=source, key=str(key))
    name = data.get("flow")
    if not isinstance(name, str) or not NAME.match(name):
        raise FlowDefinitionError("expected a name of letters, digits, '.', '_', '-' (at most 64)", source=source, key="flow")
    order = data.get("order_mode", "default")
    if order not in ("default", "user_id"):
        raise FlowDefinitionError(f"expected default or user_id, got {order!r}", source=source, key="order_mode")
    description = data.get("description", "")
    backout_queue = data.get("backout_queue", "")
    for key, value in (("description", description), ("backout_queue", backout_queue)):
        if not isinstance(value, str):
            raise FlowDefinitionError(f"expected a string, got {value!r}", source=source, key=key)
    settings = FlowSettings(
        additional_instances=_int(data, "additional_instances", 0, 0, source),
        order_mode=order,
        backout_threshold=_int(data, "backout_threshold", 3, 0, source),
        backout_queue=backout_queue,
        description=description,
    )
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise FlowDefinitionError("expected a mapping of node name -> {type: ..., properties}", source=source, key="nodes")
    nodes = []
    for node_name, props in raw_nodes.items():
        if not isinstance(node_name, str) or not NAME.match(node_name):
            raise FlowDefinitionError("node names are letters, digits, '.', '_', '-'", source=source, node=str(node_name))
        if not isinstance(props, dict):
            raise FlowDefinitionError("expected a mapping with a type", source=source, node=node_name)
        kind = props.get("type")
        cls = NODE_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise FlowDefinitionError(f"unknown node type {kind!r} (known: {', '.join(sorted(NODE_TYPES))})",
                                      source=source, node=node_name, key="type")
        nodes.append(cls(node_name, {k: v for k, v in props.items() if k != "type"}, source=source))
    raw_connections = data.get("connections", [])
    if not isinstance(raw_connections, list):
        raise FlowDefinitionError("expected a list", source=source, key="connections")
    connections = [_connection(item, i, source) for i, item in enumerate(raw_connections)]
    return Flow(name, nodes, connections, settings, source=source, definition=dict(data))


def dump_definition(data: Mapping[str, Any]) -> str:
    """A definition as YAML text (what is stored under the data directory)."""
    import yaml

    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
