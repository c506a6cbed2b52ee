"""The administrator's routes for the broker network on the broker's HTTP server (issue 17:
neighbours "changed at run time through the admin API"):

=======  =====================================  ==================================================
GET      /relaymq/network                       this broker, its neighbours and their links' state
PUT      /relaymq/network/neighbors/{name}      connect to a new neighbour now: a JSON object with
                                                the keys of a ``[network] neighbor`` entry
                                                (``host``, ``port``, ``relation``, ...); 201
DELETE   /relaymq/network/neighbors/{name}      disconnect from a neighbour now; 200, 404 (400 for
                                                a clone: remove it from the clones first)
PUT      /relaymq/network/clones                change the clones (item 43): ``{"cloned_brokers":
                                                "+broker4,QM4"}``, the seed's list syntax (a whole
                                                list, ``+b,qm``, ``-b`` or ``""``); 200
=======  =====================================  ==================================================

Changes last until the broker stops: the configuration file is not rewritten. Errors are
``{"error": "one line"}`` with 400 (a bad entry, or one that would break item 40's checks) or
404. Guarded as every admin route (relaymq.http.admin_guard): the administrators, and the
loopback interface unless ``[network] admin_remote``.
"""

from __future__ import annotations

import json
from typing import Any

from relaymq.config import ConfigError, build_section
from relaymq.http import admin_guard
from relaymq.http.admin_guard import AdminPolicy, json_response
from relaymq.http.server import HttpRequest, HttpResponse
from relaymq.network.settings import NeighborSettings

BASE = "/relaymq/network"


class NetworkAdmin:
    def __init__(self, service: Any, *, admin_remote: bool, administrators: tuple[str, ...]) -> None:
        self.service = service
        self.policy = AdminPolicy("network administration", "[network] admin_remote", admin_remote,
                                  tuple(administrators))

    def routes(self) -> list[tuple[str, str, Any]]:
        return [("GET", BASE, self.show), ("PUT", BASE + "/neighbors/{name}", self.add),
                ("DELETE", BASE + "/neighbors/{name}", self.remove), ("PUT", BASE + "/clones", self.clones)]

    def install(self, server: Any) -> None:
        admin_guard.install(server, self.routes(), self.policy)

    def uninstall(self, server: Any) -> None:
        admin_guard.uninstall(server, self.routes())

    async def show(self, request: HttpRequest) -> HttpResponse:
        return json_response(200, self.service.describe())

    async def add(self, request: HttpRequest) -> HttpResponse:
        name = request.path_params["name"]
        try:
            table = json.loads(request.body or b"{}")
        except ValueError as err:
            return json_response(400, {"error": f"the body is not JSON: {err}"})
        if not isinstance(table, dict):
            return json_response(400, {"error": "the body must be a JSON object of neighbour keys"})
        try:
            neighbor = build_section(NeighborSettings, {**table, "name": name}, "neighbor", None)
            if not neighbor.host:
                raise ConfigError("neighbor.host", "missing: a neighbour needs host and port")
            self.service.add_neighbor(neighbor)
        except (ConfigError, ValueError) as err:
            return json_response(400, {"error": str(err)})
        return json_response(201, self.service.describe())

    async def remove(self, request: HttpRequest) -> HttpResponse:
        name = request.path_params["name"]
        try:
            await self.service.remove_neighbor(name)
        except KeyError:
            return json_response(404, {"error": f"{name!r} is not a neighbour"})
        except ValueError as err:
            return json_response(400, {"error": str(err)})
        return json_response(200, self.service.describe())

    async def clones(self, request: HttpRequest) -> HttpResponse:
        try:
            table = json.loads(request.body or b"{}")
        except ValueError as err:
            return json_response(400, {"error": f"the body is not JSON: {err}"})
        change = table.get("cloned_brokers") if isinstance(table, dict) else None
        if not isinstance(change, str):
            return json_response(400, {"error": 'the body must be {"cloned_brokers": "<list syntax>"}'})
        try:
            self.service.change_clones(change)
        except ValueError as err:
            return json_response(400, {"error": f"cloned_brokers: {err}"})
        return json_response(200, self.service.describe())
