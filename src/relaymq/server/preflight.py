"""What start-up checks before anything starts (issue 18, "the first hour"): the HTTP and
channel ports are free (the rules: relaymq.qmgr.rule_check), so
a port in use is one line and exit status 2 for every listener alike, as ``serve --help``
promises, instead of an ERROR after the store opened, one port per attempt.

The MQTT listeners are not probed here: start-up binds them for good before anything else
(relaymq.server.listeners). The HTTP and channel listeners are bound by their services later;
a probe cannot hold the port until then, so a port taken in between still fails there."""

from __future__ import annotations

import errno
import os
import socket
import sys
from typing import Any

from relaymq.net.binding import bind_addresses

#: Errors that mean "this machine has no such address" (no IPv6): not a busy port.
_NO_ADDRESS = {errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT}


def port_reason(err: OSError) -> str:
    """"address already in use", without the wrapping of the message."""
    return (os.strerror(err.errno) if err.errno else str(err)).lower()


def probe(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on now, or None. Binds as asyncio's servers do
    (SO_REUSEADDR), then lets go."""
    if port == 0:
        return None
    for address in bind_addresses(host):
        try:
            infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except socket.gaierror as err:
            return str(err)
        for family, kind, proto, _, sockaddr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(sockaddr)
            except OSError as err:
                if err.errno in _NO_ADDRESS and address != host:
                    continue  # "localhost" on a machine without ::1
                return port_reason(err)
            finally:
                sock.close()
    return None


def busy_side_ports(config: Any) -> list[str]:
    """``key: message`` for each of the HTTP and channel listeners that cannot listen."""
    problems = []
    http = config.section("http")
    if http.enabled:
        reason = probe(http.host, http.port)
        if reason is not None:
            problems.append(f"http.port: cannot listen on {http.host}:{http.port} (HTTP server): {reason}")
    qmgr = config.section("qmgr")
    reason = probe(qmgr.channel_host, qmgr.channel_port)
    if reason is not None:
        problems.append(f"qmgr.channel_port: cannot listen on {qmgr.channel_host}:{qmgr.channel_port}"
                        f" (channel listener): {reason}")
    return problems


def rules_beside_config(config: Any) -> None:
    """Let ``rule = "module:Class"`` name a module in the configuration file's directory (after
    the modules on PYTHONPATH), so a rule kept beside its relaymq.toml needs no PYTHONPATH."""
    source = getattr(config, "source", None)
    if source:
        directory = os.path.dirname(os.path.abspath(source))
        if directory not in sys.path:
            sys.path.append(directory)
