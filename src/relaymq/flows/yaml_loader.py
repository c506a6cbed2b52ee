"""PyYAML as flow definitions use it: the safe loader, refusing a key given twice.

A module of its own so that PyYAML (0.7 MB of a broker's memory) is imported by the first
definition read, not by every broker that runs no flows (issue 8, scenario 6).
"""

from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping names the same key twice: YAML says keys are unique, and PyYAML would
    silently keep the last one (two nodes of one name, the first one lost)."""


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader (no tags, no objects) that refuses duplicate mapping keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                break
            if first is not None:
                raise DuplicateKeyError(
                    None, None, f"duplicate key {key!r} (first at line {first.start_mark.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep)
