"""Execution groups and deployed flows: deploy, redeploy, undeploy and list at run time,
kept under the data directory so they come back after a restart (flows-http.md item 1;
issue 6).

Flow names are unique in the broker (``relaymq flow undeploy NAME`` needs no group); a
deploy of a name already deployed is a redeploy: the new flow starts, its input bindings are
pointed at it, and only then does the old flow drain its queued messages and stop.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relaymq.flows.files import read_text, write_atomically
from relaymq.flows.qmgr_port import BackoutCounts
from relaymq.flows.group import ExecutionGroup
from relaymq.flows.names import NAME
from relaymq.server.listeners import ListenerError

if TYPE_CHECKING:
    from relaymq.flows.bindings import Binding, Target
    from relaymq.flows.context import Ports
    from relaymq.flows.flow import Flow
    from relaymq.flows.node import Node
    from relaymq.flows.pending import PendingReplies
    from relaymq.flows.runtime import FlowRuntime

# The node library, the definitions and the runtime are imported by the first flow deployed
# (restored or deployed through the admin API), not with the manager: flows are on by default
# and a broker without any need not carry them (issue 16, a smaller base process).

log = logging.getLogger("relaymq.flows")


#: Hardened BackoutCounts of MQInput messages (relaymq.flows.qmgr_port), under ``store_dir``.
BACKOUT_COUNTS = "backout-counts.json"


class DeployError(ValueError):
    """A valid flow that cannot run here (port taken, no queue manager...): one line."""


@dataclass
class DeployedFlow:
    """A flow running in the broker: its definition, group, runtime and bindings."""

    flow: Flow
    group: str
    runtime: FlowRuntime
    bindings: list[str]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.flow.name,
            "group": self.group,
            "description": self.flow.settings.description,
            "instances": self.runtime.instances,
            "order_mode": self.flow.settings.order_mode,
            "nodes": {name: node.KIND for name, node in self.flow.nodes.items()},
            "inputs": self.bindings,
            "stats": self.runtime.stats.as_dict(),
        }


class FlowManager:
    """Every deployed flow of the broker, by execution group."""

    def __init__(self, *, config: Any, ports: Callable[[], Ports], pending: PendingReplies,
                 http_server: Any = None, aio: Any = None, store_dir: str | None = None,
                 response_type: Any = None, broker: Any = None) -> None:
        self.config = config
        self.broker = broker
        #: Makes what the flows' nodes reach the broker, queues and HTTP through: called by the
        #: first flow deployed, so a broker without flows imports none of it (issue 16, row 9).
        self._make_ports = ports
        self._ports: Ports | None = None
        self.pending = pending
        self.http_server = http_server
        self.aio = aio
        self.store_dir = store_dir
        self.response_type = response_type
        self.flows: dict[str, DeployedFlow] = {}
        self.groups: dict[str, ExecutionGroup] = {}
        self.backout_counts = BackoutCounts(os.path.join(store_dir, BACKOUT_COUNTS) if store_dir else None)
        self.bindings: dict[str, Binding] = {}
        self._lock = asyncio.Lock()

    @property
    def ports(self) -> Ports:
        if self._ports is None:
            self._ports = self._make_ports()
        return self._ports

    # -- bindings --------------------------------------------------------------------------
    def binding_key(self, node: Node) -> str:
        from relaymq.flows.nodes.http_input import HTTPInput
        from relaymq.flows.nodes.jms_input import JMSInput
        from relaymq.flows.nodes.mq_input import MQInput
        from relaymq.flows.nodes.scada_input import SCADAInput

        if isinstance(node, SCADAInput):
            return f"port:{node.props['port']}"
        if isinstance(node, HTTPInput):
            return f"path:{node.props['path']}"
        if isinstance(node, MQInput):
            return f"queue:{node.props['queue']}"
        if isinstance(node, JMSInput):
            return node.binding_key
        raise DeployError(f"node {node.name}: no transport for a {node.KIND} input")

    def _new_binding(self, node: Node) -> Binding:
        from relaymq.flows.bindings import HttpBinding, QueueBinding, ScadaBinding
        from relaymq.flows.nodes.http_input import HTTPInput
        from relaymq.flows.nodes.jms_input import JMSInput
        from relaymq.flows.nodes.mq_input import MQInput
        from relaymq.flows.nodes.scada_input import SCADAInput

        if isinstance(node, SCADAInput):
            return ScadaBinding(self.config, node.props["host"], node.props["port"], self.broker)
        if isinstance(node, HTTPInput):
            if self.http_server is None:
                raise DeployError(f"node {node.name}: HTTPInput needs the HTTP server ([http] enabled)")
            return HttpBinding(self.http_server, node.props["path"], self.pending, self.response_type)
        if isinstance(node, MQInput):
            if self.aio is None:
                raise DeployError(f"node {node.name}: MQInput needs the queue manager")
            return QueueBinding(self.aio, node.props["queue"], self.backout_counts)
        if isinstance(node, JMSInput):
            from relaymq.flows.jms_binding import JmsBinding

            return JmsBinding(node)
        raise DeployError(f"node {node.name}: no transport for a {node.KIND} input")

    # -- deploy ----------------------------------------------------------------------------
    async def deploy(self, definition: Mapping[str, Any], group: str, source: str = "<flow>",
                     *, persist: bool = True) -> DeployedFlow:
        """Validate, start and bind a flow (replacing one of the same name)."""
        from relaymq.flows.bindings import Target
        from relaymq.flows.definition import build_flow
        from relaymq.flows.runtime import FlowRuntime

        if not NAME.match(group):
            raise DeployError(f"bad execution group name {group!r}")
        flow = build_flow(definition, source)
        async with self._lock:
            old = self.flows.get(flow.name)
            keys = self._input_keys(flow)
            runtime = FlowRuntime(flow, self.ports, self.groups.setdefault(group, ExecutionGroup(group)))
            runtime.start()
            targets = {key: Target(runtime, node.name, getattr(node, "domain", None),
                                   float(node.props.get("timeout", 0.0))) for key, node in keys.items()}
            # New bindings open with their target set, so nothing arrives before the flow is there.
            opened: list[Binding] = []
            try:
                for key, node in keys.items():
                    if key not in self.bindings:
                        opened.append(await self._open_binding(key, node, targets[key]))
            except BaseException:
                for binding in opened:
                    binding.target = None
                    await binding.close()
                await runtime.drain()
                raise
            for binding in opened:
                self.bindings[binding.key] = binding
            for key in keys:
                self.bindings[key].target = targets[key]
            deployed = DeployedFlow(flow, group, runtime, list(keys))
            self.flows[flow.name] = deployed
            if old is not None:
                for key in old.bindings:
                    if key not in keys:
                        await self._close_binding(key)
                await old.runtime.drain()
            if persist:
                await asyncio.to_thread(self._save, deployed, old.group if old is not None else None)
        log.info("flow %s %sdeployed to group %s", flow.name, "re" if old is not None else "", group)
        return deployed

    def _input_keys(self, flow: Flow) -> dict[str, Node]:
        """The binding key of each input node of ``flow``; two of its nodes, or another flow's,
        cannot share one."""
        keys: dict[str, Node] = {}
        for node in flow.input_nodes():
            key = self.binding_key(node)
            if key in keys:
                raise DeployError(f"nodes {keys[key].name} and {node.name} both use {key}")
            owner = self.bindings[key].flow_name if key in self.bindings else None
            if owner not in (None, flow.name):
                raise DeployError(f"node {node.name}: {key} is used by flow {owner!r}")
            keys[key] = node
        return keys

    async def _open_binding(self, key: str, node: Node, target: Target) -> Binding:
        """A new binding for ``node``, open and delivering to ``target``."""
        binding = self._new_binding(node)
        binding.target = target
        try:
            await binding.open()
        except ListenerError as err:
            raise DeployError(str(err)) from None
        except (DeployError, asyncio.CancelledError):
            raise
        except Exception as err:  # an unknown queue, a path another part serves
            raise DeployError(f"node {node.name}: {key}: {err}") from None
        return binding

    async def _close_binding(self, key: str) -> None:
        binding = self.bindings.pop(key, None)
        if binding is not None:
            binding.target = None
            await binding.close()

    async def undeploy(self, name: str, *, forget: bool = True) -> DeployedFlow:
        """Stop a flow after its queued messages ran; ``forget`` also removes it from disk."""
        async with self._lock:
            deployed = self.flows.pop(name, None)
            if deployed is None:
                raise KeyError(name)
            for key in deployed.bindings:
                await self._close_binding(key)
            await deployed.runtime.drain()
            if forget:
                await asyncio.to_thread(self._remove, deployed.group, name)
        log.info("flow %s undeployed", name)
        return deployed

    def list(self) -> list[dict[str, Any]]:
        return [d.describe() for d in sorted(self.flows.values(), key=lambda d: (d.group, d.flow.name))]

    async def stop(self) -> None:
        for name in list(self.flows):
            await self.undeploy(name, forget=False)

    # -- persistence -----------------------------------------------------------------------
    def _path(self, group: str, name: str) -> str | None:
        return os.path.join(self.store_dir, group, f"{name}.yaml") if self.store_dir else None

    def _save(self, deployed: DeployedFlow, old_group: str | None) -> None:
        path = self._path(deployed.group, deployed.flow.name)
        if path is None:
            return
        from relaymq.flows.definition import dump_definition

        write_atomically(path, dump_definition(deployed.flow.definition))
        if old_group is not None and old_group != deployed.group:
            self._remove(old_group, deployed.flow.name)

    def _remove(self, group: str, name: str) -> None:
        path = self._path(group, name)
        if path is not None and os.path.exists(path):
            os.remove(path)

    def stored(self) -> builtins.list[tuple[str, str]]:  # builtins: this class has a method named list
        """(group, path) of every stored flow."""
        if not self.store_dir or not os.path.isdir(self.store_dir):
            return []
        found: builtins.list[tuple[str, str]] = []
        for group in sorted(os.listdir(self.store_dir)):
            folder = os.path.join(self.store_dir, group)
            if os.path.isdir(folder) and NAME.match(group):
                found.extend((group, os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".yaml"))
        return found

    async def restore(self) -> int:
        """Deploy every stored flow; one that no longer deploys is logged and skipped."""
        stored = self.stored()
        if not stored:
            return 0  # nothing of the flow library is imported (tests/server/test_base_process.py)
        from relaymq.flows.definition import parse_yaml

        count = 0
        for group, path in stored:
            try:
                text = await asyncio.to_thread(read_text, path)
                await self.deploy(parse_yaml(text, path), group, path, persist=False)
                count += 1
            except (ValueError, OSError) as err:
                log.error("stored flow %s not deployed: %s", path, err)
        return count

