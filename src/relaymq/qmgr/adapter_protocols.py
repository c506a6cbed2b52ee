"""The plug-in interface of MQ Everyplace adapters (seed 004 l.3806-3900; docs/channels.md
"Adapters" and docs/queues.md "The store"): what a communications adapter and a storage adapter
must provide. The built-in ones (:mod:`relaymq.qmgr.adapters`: ``tcp``, ``tls``, ``http``;
``sqlite``, ``memory``) are written against these, and an adapter of your own is any class
that has these methods, named ``"module:Class"`` in the configuration (imported from
``PYTHONPATH`` or the configuration file's directory, and made with no arguments - the seed's
adapters, too, use the default constructor, l.3880).

No I/O here: only the shapes (a Conversation is relaymq.qmgr.channel_transport's).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from relaymq.qmgr.channel_settings import ConnectionSettings
from relaymq.qmgr.store import QueueStore

if TYPE_CHECKING:  # the protocol is imported by the first channel (relaymq.qmgr.channel_listener)
    from relaymq.qmgr.channel_transport import Conversation  # frames out, frames in: the sender's view


class ChannelContext(Protocol):
    """What a listening adapter serves peers with (a ChannelService has it): the queue
    manager, who may connect and what they may do, the bounds, and the TLS context of
    ``[qmgr] channel_tls_cert`` (None when not configured)."""

    qm: Any
    authenticator: Any
    aliases: tuple[str, ...]
    limits: Any
    authority: Any
    ssl_context: ssl.SSLContext | None


class Listening(Protocol):
    """A listener an adapter started: where it listens, and how it stops (its port then
    refuses connections)."""

    def addresses(self) -> list[str]: ...
    async def stop(self) -> None: ...


@runtime_checkable
class CommunicationsAdapter(Protocol):
    """How queue managers reach each other. The client side (``open``) connects along a
    connection definition (``[[qmgr.connection]]``, already followed through ``via``) and
    returns a conversation; the listening side (``listen``) serves channel peers on a host
    and port with the channel's receivers (authenticating each HELLO with
    ``context.authenticator``) until stopped."""

    async def open(self, connection: ConnectionSettings) -> Conversation: ...
    async def listen(self, context: ChannelContext, host: str, port: int) -> Listening: ...


@runtime_checkable
class StorageAdapter(Protocol):
    """Where a queue manager keeps its queues and messages: ``open`` returns the
    :class:`relaymq.qmgr.store.QueueStore` of queue manager ``qmgr`` (its ``load``,
    ``submit`` -> Ticket, ``unit`` and ``close``). ``data_dir`` is the broker's data directory
    (None: nothing on disk), ``synchronous`` the SQLite synchronous mode asked for, ``engine``
    the broker's storage engine (relaymq.store.engine.Engine) when the queue manager runs in
    the broker (None otherwise); an adapter may ignore what it does not use."""

    def open(self, qmgr: str, data_dir: str | None, *, synchronous: str = "FULL", engine: Any = None) -> QueueStore: ...
