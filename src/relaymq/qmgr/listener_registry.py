"""Channel listeners as objects: created, started and stopped at run time, persistent
(everyplace.md item 29; seed 004 l.1607-1640; docs/channels.md "Listeners").

The seed: a server queue manager has listeners, each with an adapter (the protocol) and a
port; one created by an administration message "does not then start": it is started by an
explicit start, or when the queue manager starts again, because listeners are kept in the
registry and "listeners that exist at queue manager startup are started automatically". So a
listener here has a ``state``:

* ``created``: defined, not running; it starts at the next start-up (the seed's rule);
* ``started``: running, and started again at every start-up;
* ``stopped``: stopped by the operator; it stays stopped across start-ups until started.

The definitions and states are kept in ``<data_dir>/qmgr-<NAME>.listeners.json`` (written
atomically, owner-only), so they survive restarts; without a data directory (``store =
"memory"``) they live as long as the process. Each running listener is what its adapter's ``listen`` started with the channel service's
authenticator, bounds and authority check - the same peers are welcome as on ``[qmgr]
channel_port``, which stays the configured listener it always was.

Adapters (the listener's protocol, relaymq.qmgr.adapters): ``tcp``, ``tls`` (TLS with
``[qmgr] channel_tls_cert`` / ``channel_tls_key``, requiring client certificates when
``channel_tls_ca`` is set), ``http`` (an HTTP server of its own serving the channel route), or
a communications adapter of your own named ``"module:Class"``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import asdict, dataclass, replace
from typing import Any

from relaymq.auth.private_file import write_private
from relaymq.net.binding import MAX_PORT
from relaymq.qmgr.adapter_protocols import Listening
from relaymq.qmgr.adapters import COMMUNICATIONS, communications_adapter, name_problem
from relaymq.qmgr.errors import BadProperty, NotAllowed, QueueExists, UnknownQueue
from relaymq.qmgr.names import check_name

log = logging.getLogger("relaymq.qmgr.channel")

CREATED, STARTED, STOPPED = "created", "started", "stopped"
#: Seconds an admin message's listener request may take on the event loop.
ADMIN_TIMEOUT = 30.0
STATES = (CREATED, STARTED, STOPPED)


@dataclass(frozen=True)
class ListenerDefinition:
    """A listener: ``name``, ``adapter`` (tcp, tls, http, module:Class), ``host`` and ``port``,
    and its ``state``."""

    name: str
    port: int
    adapter: str = "tcp"
    host: str = "127.0.0.1"
    state: str = CREATED

    @classmethod
    def make(cls, name: Any, port: Any, adapter: Any = "tcp", host: Any = "127.0.0.1",
             state: Any = CREATED) -> ListenerDefinition:
        """Check every field (raises BadName, BadProperty naming the field)."""
        check_name(name, "listener")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= MAX_PORT:
            raise BadProperty(f"listener port must be an integer 1..{MAX_PORT}, got {port!r}")
        problem = name_problem(adapter, COMMUNICATIONS)
        if problem is not None:
            raise BadProperty(f"listener adapter: {problem}")
        if not isinstance(host, str) or not host:
            raise BadProperty(f"listener host must be a host name or address, got {host!r}")
        if state not in STATES:
            raise BadProperty(f"listener state must be one of {', '.join(STATES)}, got {state!r}")
        return cls(name, port, adapter, host, state)


def registry_path(data_dir: str | None, qmgr: str) -> str | None:
    """Where the listeners of ``qmgr`` are kept (None: in memory only)."""
    return None if data_dir is None else os.path.join(data_dir, f"qmgr-{qmgr}.listeners.json")


class ListenerRegistry:
    """The listeners of one queue manager's channel service (``channels``, a ChannelService:
    its queue manager, authenticator, limits, authority and TLS context are the listeners')."""

    def __init__(self, channels: Any, path: str | None) -> None:
        self.channels = channels
        self.path = path
        self.definitions: dict[str, ListenerDefinition] = {}
        self.running: dict[str, Listening] = {}
        self._lock = asyncio.Lock()
        #: The event loop the listeners run on (set by :meth:`restore`): admin messages,
        #: processed on a thread of their own, hand their requests to it (:func:`administer`).
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- persistence --------------------------------------------------------------------
    def load(self) -> None:
        """Read the kept definitions (none when there is no file yet)."""
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                rows = json.load(handle)["listeners"]
            self.definitions = {row["name"]: ListenerDefinition.make(**row) for row in rows}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BadProperty(f"listener registry {self.path}: {exc}") from None

    async def _save(self) -> None:
        """Write the definitions (fsynced, in a worker thread: the event loop goes on)."""
        if self.path is not None:
            rows = [asdict(d) for d in self.definitions.values()]
            await asyncio.to_thread(write_private, self.path, json.dumps({"listeners": rows}, indent=1) + "\n")

    # -- life cycle ---------------------------------------------------------------------
    async def restore(self) -> None:
        """At start-up: start every listener that is not ``stopped`` (seed l.1617). One that
        cannot listen (its port taken) is logged and left stopped for now; start-up goes on."""
        self.loop = asyncio.get_running_loop()
        self.load()
        for definition in list(self.definitions.values()):
            if definition.state == STOPPED:
                continue
            try:
                await self.start(definition.name)
            except (OSError, BadProperty) as exc:
                log.error("listener %s of %s (%s:%d) did not start: %s", definition.name, self.channels.qm.name,
                          definition.host, definition.port, getattr(exc, "strerror", None) or exc)

    async def create(self, name: str, port: int, adapter: str = "tcp", host: str = "127.0.0.1") -> ListenerDefinition:
        """Define a listener, not started (seed l.1617); raises QueueExists for a taken name."""
        definition = ListenerDefinition.make(name, port, adapter, host)
        async with self._lock:
            if name in self.definitions:
                raise QueueExists(f"listener {name!r} already exists")
            self.definitions[name] = definition
            await self._save()
        return definition

    async def start(self, name: str) -> ListenerDefinition:
        """Start listening (a running listener stays as it is); the state becomes ``started``.
        Raises UnknownQueue (no such listener), BadProperty, or OSError (cannot listen)."""
        async with self._lock:
            definition = self._definition(name)
            if name not in self.running:
                adapter = communications_adapter(definition.adapter)
                listener = await adapter.listen(self.channels, definition.host, definition.port)
                self.running[name] = listener
                log.info("listener %s of %s started on %s (%s)", name, self.channels.qm.name,
                         ", ".join(listener.addresses()), definition.adapter)
            return await self._set_state(definition, STARTED)

    async def stop(self, name: str) -> ListenerDefinition:
        """Stop listening (its port refuses connections); the state becomes ``stopped``."""
        async with self._lock:
            definition = self._definition(name)
            listener = self.running.pop(name, None)
            if listener is not None:
                await listener.stop()
                log.info("listener %s of %s stopped", name, self.channels.qm.name)
            return await self._set_state(definition, STOPPED)

    async def delete(self, name: str) -> None:
        """Stop it and forget it."""
        async with self._lock:
            self._definition(name)
            listener = self.running.pop(name, None)
            if listener is not None:
                await listener.stop()
            del self.definitions[name]
            await self._save()

    async def close(self) -> None:
        """Stop every running listener; the states are kept (the next start-up restores them)."""
        async with self._lock:
            listeners, self.running = list(self.running.values()), {}
        await asyncio.gather(*(listener.stop() for listener in listeners), return_exceptions=True)

    # -- reading ------------------------------------------------------------------------
    def describe(self, name: str | None = None) -> list[dict[str, Any]]:
        """The listeners (or the one named) as the admin API shows them: the definition, and
        ``running`` with the addresses it is bound to."""
        chosen = [self._definition(name)] if name is not None else sorted(self.definitions.values(),
                                                                          key=lambda d: d.name)
        out = []
        for definition in chosen:
            listener = self.running.get(definition.name)
            out.append({**asdict(definition), "running": listener is not None,
                        "addresses": listener.addresses() if listener is not None else []})
        return out

    def _definition(self, name: str) -> ListenerDefinition:
        definition = self.definitions.get(name)
        if definition is None:
            raise UnknownQueue(f"no listener {name!r} on queue manager {self.channels.qm.name!r}")
        return definition

    async def _set_state(self, definition: ListenerDefinition, state: str) -> ListenerDefinition:
        changed = replace(definition, state=state)
        if changed != definition:
            self.definitions[definition.name] = changed
            await self._save()
        return changed


async def start_listeners(context: Any, service: Any, channels: Any) -> ListenerRegistry:
    """In the broker (relaymq.qmgr.service): the registry of the queue manager's listeners,
    kept in its data directory (in memory with ``--store memory``), restored (item 29), and
    registered as ``services["qmgr.listeners"]`` for the admin API."""
    broker = context.config.broker
    data_dir = None if broker.store == "memory" else broker.data_dir
    registry = ListenerRegistry(channels, registry_path(data_dir, service.qm.name))
    await registry.restore()
    context.services["qmgr.listeners"] = registry
    service.qm.channel_listeners = registry  # admin messages reach the listeners through the queue manager
    return registry


#: Listener actions of an admin message (relaymq.qmgr.admin, resource "listener").
ADMIN_ACTIONS = ("create", "start", "stop", "delete", "inquire", "inquire_all")


def administer(qm: Any, request: dict[str, Any]) -> Any:
    """An admin message's listener request (seed l.1619-1640: create, then start, by admin
    message), run on the listeners' event loop from the admin processor's thread; its result
    is what the admin API shows. Raises QueueError (NotAllowed when no listeners run here)."""
    registry: ListenerRegistry | None = getattr(qm, "channel_listeners", None)
    if registry is None or registry.loop is None or registry.loop.is_closed():
        raise NotAllowed(f"queue manager {qm.name!r} runs no channel listeners to administer")
    action, name = request.get("action"), request.get("name")
    if action not in ADMIN_ACTIONS:
        raise BadProperty(f"listener action {action!r} is not one of {', '.join(ADMIN_ACTIONS)}")
    if action == "inquire_all":
        return registry.describe()
    if not isinstance(name, str) or not name:
        raise BadProperty(f"listener {action} needs \"name\"")
    params = request.get("params", {})
    if not isinstance(params, dict) or set(params) - {"port", "adapter", "host"}:
        raise BadProperty("listener params must be an object of port, adapter and host")

    async def run() -> Any:
        if action == "create":
            await registry.create(name, **params)
        elif action in ("start", "stop"):
            await (registry.start(name) if action == "start" else registry.stop(name))
        elif action == "delete":
            await registry.delete(name)
            return None
        return registry.describe(name)[0]

    try:
        return asyncio.run_coroutine_threadsafe(run(), registry.loop).result(ADMIN_TIMEOUT)
    except OSError as exc:
        raise NotAllowed(f"listener {name!r} cannot listen: {exc.strerror or exc}") from None
