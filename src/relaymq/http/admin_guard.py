"""Who may call the administrator's routes on the broker's HTTP server: one rule for every part.

Deploying a flow (relaymq.flows.admin) runs Python code in the broker, removing queue
subscriptions (relaymq.pubsub.admin) and defining or deleting queues (relaymq.qmgr.rest) act
on other people's messages. A caller of those routes must

1. pass the HTTP server's authentication (``BasicAuth.protect``: 401 otherwise);
2. be an administrator (403 otherwise): one of ``[access] administrators`` when that list is
   not empty, else the broker's own administrator (relaymq.auth.admin_credential); or a user
   the authorisation model makes one (group ``administrators``, or the ``admin`` authority of
   relaymq.auth.authorities: ``BasicAuth`` sets ``request.administrator``). Calling
   from the loopback interface is no credential: before issue 15 (finding 2) an anonymous
   caller on the machine could deploy a flow, which runs its Python in the broker;
3. call from the loopback interface unless the part's ``admin_remote`` setting is true (403).

Each part states its policy (:class:`AdminPolicy`) and how a refusal looks in its own API
(JSON ``{"error": ...}`` by default; the REST interface answers in IBM's error shape).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from relaymq.http.server import Handler, HttpRequest, HttpResponse

#: (method, path pattern, handler), as ``HttpServer.add_route`` takes them.
Route = tuple[str, str, Handler]


def json_response(status: int, value: Any) -> HttpResponse:
    """A JSON answer (``application/json``, indented, ending in a newline)."""
    return HttpResponse(status, [("content-type", "application/json")],
                        (json.dumps(value, indent=1, sort_keys=False) + "\n").encode("utf-8"))


def is_loopback(remote: Any) -> bool:
    """Whether a peer address (``(host, port, ...)``, as ``HttpRequest.remote``) is loopback."""
    try:
        return bool(remote) and ipaddress.ip_address(str(remote[0])).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class AdminPolicy:
    """``what`` is done (``"flow administration"``), by whom: ``administrators`` (empty: the
    broker's own administrator), and from where: anywhere when ``admin_remote``, else the
    loopback interface; ``remote_key`` names the setting in refusals."""

    what: str
    remote_key: str
    admin_remote: bool = False
    administrators: tuple[str, ...] = ()

    def refusal(self, request: HttpRequest) -> str | None:
        """None when ``request``'s caller may go on, else why not (one line)."""
        if not self.admin_remote and not is_loopback(request.remote):
            return (f"{self.what} is only allowed from the loopback interface "
                    f"({self.remote_key} = true allows other addresses)")
        if getattr(request, "administrator", False):
            return None  # the broker's own administrator, or one of the authorisation model
        if self.administrators:
            if getattr(request, "user", None) not in self.administrators:
                return f"{self.what} needs a user of [access] administrators"
        elif not getattr(request, "administrator", False):
            return (f"{self.what} needs the administrator's credentials (HTTP basic "
                    f"authentication as the user in the data directory's admin.credentials)")
        return None


def json_refusal(reason: str) -> HttpResponse:
    return json_response(403, {"error": reason})


def guard(handler: Handler, policy: AdminPolicy | Callable[[], AdminPolicy],
          refuse: Callable[[str], HttpResponse] = json_refusal) -> Handler:
    """``handler`` for callers the policy lets through; ``refuse(reason)`` for the others.
    ``policy`` may be a function, asked per request (settings of a service that starts
    after the routes were added)."""

    async def guarded(request: HttpRequest) -> HttpResponse:
        current = policy() if callable(policy) else policy
        reason = current.refusal(request)
        if reason is not None:
            return refuse(reason)
        return await handler(request)

    return guarded


def install(server: Any, routes: Iterable[Route], policy: AdminPolicy | Callable[[], AdminPolicy],
            refuse: Callable[[str], HttpResponse] = json_refusal) -> None:
    """Add administrator routes to ``server``: its authentication first, then the policy."""
    auth = getattr(server, "auth", None)
    for method, pattern, handler in routes:
        guarded = guard(handler, policy, refuse)
        server.add_route(method, pattern, auth.protect(guarded) if auth is not None else guarded)


def uninstall(server: Any, routes: Iterable[Route]) -> None:
    """Remove routes ``install`` added (those already gone are skipped)."""
    for method, pattern, _ in routes:
        try:
            server.remove_route(method, pattern)
        except KeyError:
            pass
