"""The configured listeners, each startable and stoppable at run time (listener control,
mqtt.md item 5).

Stopping a listener, for ``OFF`` or for the broker's shutdown, goes in this order, which is the
one that works on every Python from 3.11 (since 3.12 ``Server.wait_closed`` waits for every
connection the server accepted, so waiting first would wait for ever):

1. close the listening sockets (no new connections);
2. close the listener's client connections without their wills (MQTT 5: DISCONNECT 0x8B);
3. wait up to ``grace`` seconds for them to go, then abort those still there (a client that
   does not read keeps its unsent bytes, and so its socket, for ever), then wait for the
   server.

A stopped listener starts again with ``ON``: a new server on the same address.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from relaymq.broker.broker import Broker
from relaymq.ratelog import RefusalLog
from relaymq.http.admission import Admission, peer_host
from relaymq.net.binding import Servers, create_servers
from relaymq.server.preflight import port_reason
from relaymq.server.mqtt_protocol import MQTTProtocol
from relaymq.net.tls import server_context

log = logging.getLogger("relaymq.listeners")

#: Seconds closing connections get to go before they are aborted (stop, shutdown).
CLOSE_GRACE = 2.0

#: One log of refused connections for every MQTT listener, so its rate limit holds for all.
REFUSALS = RefusalLog(log)


class ListenerError(Exception):
    """A listener could not be opened (port in use, permission, bad address)."""

    def __init__(self, index: int, config: Any, port: int, reason: str) -> None:
        self.index = index
        self.config = config
        self.port = port
        self.reason = reason
        super().__init__(f"cannot listen on {config.host}:{port} (listener {config.name!r}): {reason}")

    @property
    def key(self) -> str:
        """The configuration key at fault, as config errors name it."""
        return f"listener[{self.index}].port"


class Listener:
    def __init__(self, config: Any, broker: Broker | None, high_water: int, index: int = 0,
                 handshake_timeout: float = 10.0) -> None:
        self.config = config
        self.broker = broker  # set before serving; protocols are made only once it serves
        self.high_water = high_water
        self.index = index
        self.handshake_timeout = handshake_timeout  # TLS handshakes count against connect_timeout
        self.server: Servers | None = None
        self.ssl = server_context(config)
        self.port = config.port  # the bound port once opened (config port 0 = any free port)
        # the connections this listener accepted, still open, and their source addresses
        self.protocols: dict[Any, str] = {}
        self.admission = Admission(f"listener {config.name!r}", config.max_connections,
                                   config.max_connections_per_address, REFUSALS)
        self._idle = asyncio.Event()  # set whenever ``protocols`` is empty
        self._idle.set()

    @property
    def url(self) -> str:
        scheme = {"mqtt": "mqtts" if self.ssl else "mqtt", "websocket": "wss" if self.ssl else "ws"}
        path = self.config.path if self.config.protocol == "websocket" else ""
        return f"{scheme[self.config.protocol]}://{self.config.host}:{self.port}{path}"

    # -- the protocols report here
    def attach(self, protocol: Any, transport: asyncio.Transport) -> bool:
        """Count a new connection; False (and the transport aborted, one rate-limited log
        line) when the listener's caps refuse it (issue 15 finding 8)."""
        address = peer_host(transport.get_extra_info("peername"))
        if not self.admission.admit(address):
            transport.abort()
            return False
        self.protocols[protocol] = address
        self._idle.clear()
        return True

    def detach(self, protocol: Any) -> None:
        address = self.protocols.pop(protocol, None)
        if address is not None:
            self.admission.release(address)
        if not self.protocols:
            self._idle.set()

    def _factory(self) -> Any:
        if self.config.protocol == "websocket":
            # imported by the first WebSocket connection: wsproto costs a broker without a
            # WebSocket listener 0.5 MB (issue 8, scenario 6)
            from relaymq.server.websocket import WebSocketProtocol

            return WebSocketProtocol(self)
        return MQTTProtocol(self)

    # -- start
    async def open(self) -> None:
        """Bind the address without accepting yet (raises ListenerError): start-up binds every
        listener before it opens the store, so a port in use stops it at once."""
        if self.server is not None:
            return
        loop = asyncio.get_running_loop()
        cfg = self.config
        options: dict[str, Any] = {"ssl": self.ssl, "reuse_address": True, "backlog": 1024,
                                   "start_serving": False}
        if self.ssl is not None:
            options["ssl_handshake_timeout"] = self.handshake_timeout
        async def create(host: str, port: int) -> asyncio.base_events.Server:
            return await loop.create_server(self._factory, host, port, **options)

        try:
            self.server = await create_servers(create, cfg.host, self.port)
        except OSError as err:
            raise ListenerError(self.index, cfg, self.port, port_reason(err)) from None
        self.port = self.server.port

    async def start(self) -> None:
        """Open (if not yet) and accept connections."""
        await self.open()
        assert self.server is not None
        if not self.server.is_serving():
            try:
                await self.server.start_serving()
            except OSError as err:  # another process took the port between bind and listen
                self.server.close()
                self.server = None
                raise ListenerError(self.index, self.config, self.port, port_reason(err)) from None
            log.info("listening on %s (%s)", self.url, ", ".join(self.server.addresses()))

    # -- stop, in three steps (see the module docstring)
    def close(self) -> Servers | None:
        """Step 1: stop accepting. Returns the server to wait for (None if it was not open)."""
        server, self.server = self.server, None
        if server is not None:
            server.close()
        return server

    def disconnect_clients(self) -> None:
        """Step 2: close every connection of this listener, without wills."""
        for protocol in list(self.protocols):
            try:
                protocol.shutdown()
            except Exception:
                log.exception("error while closing a connection of %s", self.url)

    async def wait_closed(self, server: Servers | None, grace: float = CLOSE_GRACE) -> None:
        """Step 3: wait for the connections to go, abort the ones that do not, then for the server."""
        if self.protocols:
            try:
                await asyncio.wait_for(self._idle.wait(), grace)
            except TimeoutError:
                log.info("%s: aborting %d connection(s) that did not close within %.1f s",
                         self.url, len(self.protocols), grace)
                for protocol in list(self.protocols):
                    protocol.abort()
        if server is None:
            return
        server.abort_clients()  # Python 3.13: TLS handshakes too
        try:
            await asyncio.wait_for(server.wait_closed(), grace)
        except TimeoutError:
            log.warning("%s: the server did not report closed within %.1f s", self.url, grace)

    async def stop(self, grace: float = CLOSE_GRACE) -> None:
        server = self.close()
        if server is None:
            return
        self.disconnect_clients()
        await self.wait_closed(server, grace)
        log.info("stopped listening on %s", self.url)


class Listeners:
    def __init__(self, configs: list, broker: Broker | None, limits: Any) -> None:
        self.items = [Listener(c, broker, limits.max_outbound_buffer, index, float(limits.connect_timeout))
                      for index, c in enumerate(configs)]

    def attach_broker(self, broker: Broker) -> None:
        for item in self.items:
            item.broker = broker

    async def open_all(self) -> None:
        """Bind every listener (nothing is accepted yet); on a failure close those bound."""
        try:
            for item in self.items:
                await item.open()
        except ListenerError:
            for item in self.items:
                item.close()
            raise

    async def start_all(self) -> None:
        for item in self.items:
            await item.start()

    async def stop_all(self, grace: float = CLOSE_GRACE) -> None:
        """Every listener in the three steps at once: no listener accepts while another's
        clients are being closed."""
        servers = [item.close() for item in self.items]
        for item in self.items:
            item.disconnect_clients()
        await asyncio.gather(*(item.wait_closed(server, grace) for item, server in zip(self.items, servers, strict=False)))

    def control(self, target: str, on: bool) -> bool:
        """Start/stop the listener on port ``target`` or ``all`` (administrators' publication)."""
        chosen = [i for i in self.items if target == "all" or str(i.port) == target
                  or str(i.config.port) == target]
        for item in chosen:
            coro = item.start() if on else item.stop()
            task = asyncio.get_running_loop().create_task(coro)
            task.add_done_callback(_report)
        return bool(chosen)


def _report(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s", task.exception())
