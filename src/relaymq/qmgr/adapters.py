"""The built-in MQ Everyplace adapters and how an adapter is chosen by name (seed 004
l.3806-3900; the interface: :mod:`relaymq.qmgr.adapter_protocols`).

Communications adapters (a connection's ``adapter``, a listener object's ``adapter``):

* ``tcp``: the channel's framing over TCP (the seed's MQeTcpipLengthAdapter: a length, then
  the data);
* ``tls``: the same over TLS (the connection's ``tls_ca`` / ``tls_cert``; a listener uses
  ``[qmgr] channel_tls_cert`` / ``channel_tls_key`` and requires client certificates when
  ``channel_tls_ca`` is set);
* ``http``: HTTP POSTs to ``/relaymq/channel/v1`` (the seed's MQeTcpipHttpAdapter); a
  listener of this adapter is an HTTP server of its own on its port, serving only that route.

Storage adapters (``[qmgr] store_adapter``): ``sqlite`` (the broker's database, or
``qmgr-<NAME>.db`` outside the broker) and ``memory`` (nothing survives the process).

Any other name is ``"module:Class"``: the class is imported and made with no arguments, and
must have the methods of the Protocol (else BadProperty naming what is missing).
"""

from __future__ import annotations

import importlib
import os
import ssl
from dataclasses import replace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relaymq.qmgr.adapter_protocols import ChannelContext, CommunicationsAdapter, Listening, StorageAdapter
from relaymq.qmgr.channel_listener import HTTP_CHANNEL_PATH, ChannelListener, http_route
from relaymq.qmgr.channel_settings import ConnectionSettings
from relaymq.qmgr.errors import BadProperty
from relaymq.qmgr.store import MemoryQueueStore, QueueStore

if TYPE_CHECKING:
    from relaymq.qmgr.channel_transport import Conversation


async def _open_conversation(connection: ConnectionSettings) -> Conversation:
    """``channel_transport.open_conversation``: the protocol is imported by the first
    connection a queue manager opens (issue 16, bench/compare row 9)."""
    from relaymq.qmgr.channel_transport import open_conversation

    return await open_conversation(connection)


class TcpAdapter:
    """``tcp``: channel frames over a TCP connection."""

    tls = False

    async def open(self, connection: ConnectionSettings) -> Conversation:
        return await _open_conversation(replace(connection, tls=self.tls))

    async def listen(self, context: ChannelContext, host: str, port: int) -> Listening:
        ssl_context = self._server_ssl(context)
        listener = ChannelListener(context.qm, context.authenticator, aliases=context.aliases,
                                   certificates=ssl_context is not None and ssl_context.verify_mode == ssl.CERT_REQUIRED,
                                   limits=context.limits, authority=context.authority)
        await listener.start(host, port, ssl_context)
        return listener

    def _server_ssl(self, context: ChannelContext) -> ssl.SSLContext | None:
        return None


class TlsAdapter(TcpAdapter):
    """``tls``: channel frames over TLS."""

    tls = True

    def _server_ssl(self, context: ChannelContext) -> ssl.SSLContext | None:
        if context.ssl_context is None:
            raise BadProperty("adapter tls needs [qmgr] channel_tls_cert and channel_tls_key to listen")
        return context.ssl_context


class HttpAdapter:
    """``http``: each exchange is a POST of frames to the peer's channel route."""

    async def open(self, connection: ConnectionSettings) -> Conversation:
        if not connection.is_http:
            connection = replace(connection, address=f"http://{connection.address}")
        return await _open_conversation(connection)

    async def listen(self, context: ChannelContext, host: str, port: int) -> Listening:
        from relaymq.http.server import HttpServer

        server = HttpServer()
        server.add_route("POST", HTTP_CHANNEL_PATH, http_route(
            context.qm, context.authenticator, aliases=context.aliases, max_frame=context.limits.max_frame,
            authority=context.authority))
        await server.start(host, port)  # plain HTTP, as the seed's MQeTcpipHttpAdapter
        return server


class SqliteStorage:
    """``sqlite``: the storage engine's SQLite database (group commit, WAL)."""

    def open(self, qmgr: str, data_dir: str | None, *, synchronous: str = "FULL", engine: Any = None) -> QueueStore:
        from relaymq.qmgr.sqlite_store import SqliteQueueStore, store_path

        if engine is not None:
            return SqliteQueueStore(engine=engine, synchronous=synchronous)
        if data_dir is None:
            raise BadProperty("the sqlite storage adapter needs a data directory")
        os.makedirs(data_dir, exist_ok=True)
        return SqliteQueueStore(store_path(data_dir, qmgr), synchronous)


class MemoryStorage:
    """``memory``: nothing survives the process."""

    def open(self, qmgr: str, data_dir: str | None, *, synchronous: str = "FULL", engine: Any = None) -> QueueStore:
        return MemoryQueueStore()


#: The built-in adapters by name.
COMMUNICATIONS: dict[str, type[CommunicationsAdapter]] = {"tcp": TcpAdapter, "tls": TlsAdapter, "http": HttpAdapter}
STORAGE: dict[str, type[StorageAdapter]] = {"sqlite": SqliteStorage, "memory": MemoryStorage}


def name_problem(name: object, builtins: dict[str, type[Any]]) -> str | None:
    """Why ``name`` cannot name an adapter (None: a built-in one, or "module:Class")."""
    if not isinstance(name, str) or not name:
        return f"an adapter must be a name, got {name!r}"
    module_name, _, class_name = name.partition(":")
    if name in builtins or (module_name and class_name):
        return None
    return f"unknown adapter {name!r}: use one of {', '.join(builtins)} or 'module:Class'"


def _load(name: str, builtins: dict[str, type[Any]], protocol: type[Any], what: str) -> Any:
    problem = name_problem(name, builtins)
    if problem is not None:
        raise BadProperty(f"{what}: {problem}")
    if name in builtins:
        adapter: Any = builtins[name]()
    else:
        module_name, _, class_name = name.partition(":")
        try:
            adapter = getattr(importlib.import_module(module_name), class_name)()
        except Exception as exc:  # an import error, a missing class, a constructor that fails
            raise BadProperty(f"cannot load {what} adapter {name!r}: {exc}") from exc
    if not isinstance(adapter, protocol):
        raise BadProperty(f"{what} adapter {name!r} lacks the methods of {protocol.__name__}"
                          " (relaymq.qmgr.adapter_protocols)")
    return adapter


def communications_adapter(name: str) -> CommunicationsAdapter:
    """The communications adapter ``name`` (built-in or ``module:Class``); raises BadProperty."""
    adapter: CommunicationsAdapter = _load(name, COMMUNICATIONS, CommunicationsAdapter, "communications")
    return adapter


def storage_adapter(name: str) -> StorageAdapter:
    """The storage adapter ``name`` (built-in or ``module:Class``); raises BadProperty."""
    adapter: StorageAdapter = _load(name, STORAGE, StorageAdapter, "storage")
    return adapter


def adapter_of(connection: ConnectionSettings) -> str:
    """The adapter a connection uses: its ``adapter``, else what its address says (an
    http(s) URL: http; ``tls = true``: tls; otherwise tcp)."""
    if connection.adapter:
        return connection.adapter
    return "http" if connection.is_http else "tls" if connection.tls else "tcp"


async def open_route(connection: ConnectionSettings) -> Conversation:
    """Connect along ``connection`` with its adapter (links and synchronous requests call this)."""
    return await communications_adapter(adapter_of(connection)).open(connection)


def adapter_problems(config: Any) -> list[str]:
    """``key: message`` for each configured adapter that cannot be loaded (``serve`` and
    ``serve --check`` ask, with the rules: relaymq.qmgr.rule_check)."""
    qmgr = config.section("qmgr")
    wanted: list[tuple[str, str, Callable[[str], object]]] = (
        [("qmgr.store_adapter", qmgr.store_adapter, storage_adapter)] if qmgr.store_adapter else [])
    wanted += [(f"qmgr.connection[{index}].adapter", connection.adapter, communications_adapter)
               for index, connection in enumerate(qmgr.connection) if connection.adapter]
    problems = []
    for key, name, load in wanted:
        try:
            load(name)
        except BadProperty as error:
            problems.append(f"{key}: {error.message}")
    return problems


def open_queue_manager(name: str, data_dir: str | None, *, store_adapter: str = "", store: str = "sqlite",
                       engine: Any = None, synchronous: str = "FULL", **options: Any) -> Any:
    """Open queue manager ``name`` on the storage adapter ``store_adapter`` (``[qmgr]
    store_adapter``); "" keeps QueueManager.open's choice ([broker] store: the broker's
    database, or memory). ``options`` go to the QueueManager."""
    from relaymq.qmgr.manager import QueueManager

    if not store_adapter:
        return QueueManager.open(name, data_dir, store=store, engine=engine, synchronous=synchronous, **options)
    queue_store = storage_adapter(store_adapter).open(name, data_dir, synchronous=synchronous, engine=engine)
    try:
        return QueueManager(name, queue_store, **options)
    except BaseException:
        queue_store.close()
        raise
