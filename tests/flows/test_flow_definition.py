"""The flow definition format: YAML validated with errors that name the file, the node and
the key (flows-http.md item 1; issue 6 "a definition format validated with clear errors")."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_helpers import SOAP, TELEMETRY
from relaymq.flows import FlowDefinitionError, build_flow, load_definition, load_flow, parse_yaml


def flow(nodes: dict, connections: list | None = None, **top) -> dict:
    return {"flow": "f", "nodes": nodes, "connections": connections or [], **top}


PASS = {"In": {"type": "MQInput", "queue": "Q"}, "Out": {"type": "MQOutput", "queue": "R"}}


def error_of(definition: dict) -> FlowDefinitionError:
    with pytest.raises(FlowDefinitionError) as info:
        build_flow(definition, "my.yaml")
    return info.value


def test_examples_load_and_inline_their_compute_files():
    """flows-http.md items 10, 9: both shipped examples are valid; a Compute ``file`` is
    carried as ``code`` so the deployed definition is self-contained."""
    telemetry = load_flow(str(TELEMETRY / "telemetry.yaml"))
    assert [n.name for n in telemetry.input_nodes()] == ["SCADAInput1", "SCADAInput2"]
    definition = load_definition(str(SOAP / "soap.yaml"))
    assert "file" not in definition["nodes"]["LookUp"]
    assert "def get_user_name" in definition["nodes"]["LookUp"]["code"]


@pytest.mark.parametrize("definition, node, key, words", [
    (flow({"In": {"type": "MQInput"}}), "In", "queue", "required"),
    (flow({"In": {"type": "MQInput", "queue": 5}}), "In", "queue", "expected a string"),
    (flow({"In": {"type": "MQInput", "queue": "Q", "colour": 1}}), "In", "colour", "unknown property"),
    (flow({"In": {"type": "Nope"}}), "In", "type", "unknown node type"),
    (flow({**PASS, "F": {"type": "Filter", "expression": "a = = 1"}}), "F", "expression", ""),
    (flow({**PASS, "C": {"type": "Compute", "code": "def main(:"}}), "C", "code", "SyntaxError"),
    (flow({**PASS, "C": {"type": "Compute", "code": "x = 1"}}), "C", "code", "no function 'main'"),
    (flow({**PASS, "S": {"type": "SCADAInput", "port": 70000}}), "S", "port", "0..65535"),
    (flow({**PASS, "H": {"type": "HTTPInput", "path": "nope"}}), "H", "path", "starting with"),
    (flow({**PASS, "R": {"type": "Route", "filters": [{"expression": "a=1"}]}}), "R", "filters[0]", "terminal"),
    (flow({**PASS, "D": {"type": "ResetContentDescriptor", "domain": "XMLZ"}}), "D", "domain", "unknown message domain"),
])
def test_node_errors_name_the_file_node_and_key(definition, node, key, words):
    """flows-http.md item 1: an invalid node property is reported with file, node and key."""
    err = error_of(definition)
    assert (err.source, err.node, err.key) == ("my.yaml", node, key)
    assert words in err.message
    assert str(err).startswith(f"my.yaml: node {node!r}: key {key!r}: ")


@pytest.mark.parametrize("connections, words", [
    (["In.out -> Nowhere"], "no node called 'Nowhere'"),
    (["In.sideways -> Out"], "has no terminal 'sideways'"),
    (["Out.out -> In"], "an input node has no input terminal"),
    (["In out Out"], "expected 'Node.terminal -> Node'"),
])
def test_connection_errors(connections, words):
    """flows-http.md item 1: connections join existing terminals of existing nodes."""
    assert words in str(error_of(flow(PASS, connections)))


def test_top_level_errors():
    """flows-http.md items 1, 3, 4: flow name, instances, order mode, unknown keys."""
    assert error_of(flow(PASS, flow="bad name")).key == "flow"
    assert error_of(flow(PASS, additional_instances=-1)).key == "additional_instances"
    assert error_of(flow(PASS, order_mode="random")).key == "order_mode"
    assert error_of(flow(PASS, colour="blue")).key == "colour"
    assert "at least one input node" in str(error_of(flow({"Out": {"type": "MQOutput", "queue": "R"}})))


def test_bad_yaml_reports_line(tmp_path: Path):
    """flows-http.md item 1: a YAML syntax error names the file and line."""
    path = tmp_path / "broken.yaml"
    path.write_text("flow: x\nnodes: [unclosed\n")
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(str(path))
    assert str(path) in str(info.value) and "line" in str(info.value)


def test_a_node_name_given_twice_is_an_error_with_its_line(tmp_path: Path):
    """flows-http.md item 1 (validated with clear errors): two nodes of one name in the YAML
    mapping used to keep the second silently; now the file is refused at the duplicate, also
    by `relaymq flow check`."""
    import subprocess
    import sys

    path = tmp_path / "twice.yaml"
    path.write_text("flow: twice\nnodes:\n  In: {type: MQInput, queue: Q}\n  Out: {type: MQOutput, queue: A}\n"
                    "  Out: {type: MQOutput, queue: B}\nconnections:\n  - In.out -> Out\n")
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(str(path))
    assert str(info.value) == f"{path}: not valid YAML (line 5, column 3): duplicate key 'Out' (first at line 4)"
    done = subprocess.run([sys.executable, "-m", "relaymq", "flow", "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and "duplicate key 'Out'" in done.stderr


def test_missing_compute_file(tmp_path: Path):
    """A Compute ``file`` that cannot be read is an error on that node's ``file`` key."""
    path = tmp_path / "f.yaml"
    path.write_text("flow: f\nnodes:\n  In: {type: MQInput, queue: Q}\n  C: {type: Compute, file: missing.py}\n")
    with pytest.raises(FlowDefinitionError) as info:
        load_flow(str(path))
    assert (info.value.node, info.value.key) == ("C", "file")


def test_connection_mapping_form_and_settings():
    """Connections may be written as mappings; flow settings are read (items 3-4)."""
    built = build_flow(flow(PASS, [{"from": "In", "terminal": "out", "to": "Out"}],
                            additional_instances=2, order_mode="user_id", backout_threshold=5,
                            backout_queue="BO.Q"))
    assert built.connected("In", "out")
    s = built.settings
    assert (s.additional_instances, s.order_mode, s.backout_threshold, s.backout_queue) == (2, "user_id", 5, "BO.Q")


def test_yaml_must_be_a_mapping():
    with pytest.raises(FlowDefinitionError):
        parse_yaml("- a\n- b\n", "list.yaml")
