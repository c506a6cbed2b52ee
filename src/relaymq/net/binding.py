"""Where a listener binds, and the one host name that means two addresses.

Why (issue 15 finding 2): the MQTT and HTTP listeners bound 0.0.0.0 by default, so a broker
started with no configuration took anonymous clients, REST calls and the archive from the
whole network. Like Mosquitto 2.0, a listener without a configured host now binds the loopback
interface only: ``host = "localhost"`` (the default) is 127.0.0.1 **and** ::1, whatever the
machine's resolver says about the name. ::1 is bound where the machine has it; where it has
not (IPv6 disabled), start-up goes on with 127.0.0.1 and says so in one line.

With port 0 (any free port) the port chosen for 127.0.0.1 is asked of ::1 too, so both
addresses answer on one port.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("relaymq.listeners")

#: The default host of the MQTT and HTTP listeners: the loopback interface, IPv4 and IPv6.
LOOPBACK_HOST = "localhost"
#: The largest TCP port number (0: any free port).
MAX_PORT = 65535
LOOPBACK_ADDRESSES = ("127.0.0.1", "::1")

#: Errors that mean "this machine has no such address" (no IPv6): skipped, not fatal.
_NO_ADDRESS = {errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT}


def bind_addresses(host: str) -> tuple[str, ...]:
    """The addresses ``host`` binds: both loopback addresses for ``"localhost"``."""
    return LOOPBACK_ADDRESSES if host == LOOPBACK_HOST else (host,)


def is_loopback(host: str) -> bool:
    """Whether a configured host reaches this machine only (``localhost``, 127.x, ::1)."""
    if host == LOOPBACK_HOST:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def show(address: str, port: int) -> str:
    """``127.0.0.1:1883`` / ``[::1]:1883``."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


class Servers:
    """The asyncio servers of one listener (one per bound address) used as one."""

    def __init__(self, servers: list[asyncio.base_events.Server]) -> None:
        self.items = servers

    @property
    def sockets(self) -> list[Any]:
        return [sock for server in self.items for sock in server.sockets]

    @property
    def port(self) -> int:
        return self.items[0].sockets[0].getsockname()[1]

    def addresses(self) -> list[str]:
        """``host:port`` of every bound socket, for log lines."""
        return [show(*sock.getsockname()[:2]) for sock in self.sockets]

    def is_serving(self) -> bool:
        return all(server.is_serving() for server in self.items)

    async def start_serving(self) -> None:
        for server in self.items:
            await server.start_serving()

    def close(self) -> None:
        for server in self.items:
            server.close()

    def abort_clients(self) -> None:
        for server in self.items:
            abort = getattr(server, "abort_clients", None)  # Python 3.13
            if abort is not None:
                abort()

    async def wait_closed(self) -> None:
        await asyncio.gather(*(server.wait_closed() for server in self.items))


async def create_servers(create: Callable[[str, int], Awaitable[asyncio.base_events.Server]],
                         host: str, port: int) -> Servers:
    """``create(address, port)`` for every address of ``host``, all on one port. The first
    address's errors propagate (OSError); a later loopback address the machine does not have
    is skipped with one log line."""
    first, *others = bind_addresses(host)
    servers = [await create(first, port)]
    port = servers[0].sockets[0].getsockname()[1]
    for address in others:
        try:
            servers.append(await create(address, port))
        except OSError as error:
            if error.errno not in _NO_ADDRESS:
                for server in servers:
                    server.close()
                raise
            log.info("not listening on %s: this machine has no such address (%s)",
                     show(address, port), error.strerror or error)
    return Servers(servers)
