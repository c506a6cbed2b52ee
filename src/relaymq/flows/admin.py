"""The flow administration routes on the broker's HTTP server, used by ``relaymq flow``:

=======  =========================  ================================================
GET      /relaymq/flows             JSON list of deployed flows (group, nodes, stats)
GET      /relaymq/flows/{name}      one flow
POST     /relaymq/flows?group=EG    deploy or redeploy; the body is the flow's YAML
                                    (self-contained: Compute files inlined as code)
DELETE   /relaymq/flows/{name}      undeploy
=======  =========================  ================================================

Answers are JSON; errors are ``{"error": "one line"}`` with 400 (invalid definition), 404
(unknown flow), 409 (cannot run here: port in use, no queue manager), 403 (caller not
allowed). A deployed flow runs Python code in the broker, so these routes are for
administrators only (relaymq.http.admin_guard): callers must pass the HTTP server's
authentication, be listed in ``[access] administrators`` (when it is empty: the broker's own
administrator, relaymq.auth.admin_credential), and call from the loopback interface unless ``[flows] admin_remote`` is true.
"""

from __future__ import annotations

from typing import Any

from relaymq.flows.errors import FlowDefinitionError
from relaymq.flows.manager import DeployError, FlowManager
from relaymq.http import admin_guard
from relaymq.http.admin_guard import AdminPolicy, json_response
from relaymq.http.server import HttpRequest, HttpResponse

BASE = "/relaymq/flows"


class FlowAdmin:
    def __init__(self, manager: FlowManager, *, default_group: str, admin_remote: bool,
                 administrators: tuple[str, ...]) -> None:
        self.manager = manager
        self.default_group = default_group
        self.policy = AdminPolicy("flow administration", "[flows] admin_remote", admin_remote,
                                  tuple(administrators))

    def routes(self) -> list[tuple[str, str, Any]]:
        return [("GET", BASE, self.list), ("POST", BASE, self.deploy),
                ("GET", BASE + "/{name}", self.show), ("DELETE", BASE + "/{name}", self.undeploy)]

    def install(self, server: Any) -> None:
        admin_guard.install(server, self.routes(), self.policy)

    def uninstall(self, server: Any) -> None:
        admin_guard.uninstall(server, self.routes())

    async def list(self, request: HttpRequest) -> HttpResponse:
        return json_response(200, {"flows": self.manager.list()})

    async def show(self, request: HttpRequest) -> HttpResponse:
        deployed = self.manager.flows.get(request.path_params["name"])
        if deployed is None:
            return json_response(404, {"error": f"no flow {request.path_params['name']!r} is deployed"})
        return json_response(200, deployed.describe())

    async def deploy(self, request: HttpRequest) -> HttpResponse:
        group = request.query_value("group") or self.default_group
        source = request.query_value("source") or "<request>"
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            return json_response(400, {"error": "the flow definition is not UTF-8"})
        try:
            redeploy = False
            from relaymq.flows.definition import parse_yaml

            definition = parse_yaml(text, source)
            redeploy = definition.get("flow") in self.manager.flows
            deployed = await self.manager.deploy(definition, group, source)
        except FlowDefinitionError as err:
            return json_response(400, {"error": str(err)})
        except DeployError as err:
            return json_response(409, {"error": str(err)})
        return json_response(200 if redeploy else 201, {**deployed.describe(), "redeployed": redeploy})

    async def undeploy(self, request: HttpRequest) -> HttpResponse:
        name = request.path_params["name"]
        try:
            deployed = await self.manager.undeploy(name)
        except KeyError:
            return json_response(404, {"error": f"no flow {name!r} is deployed"})
        return json_response(200, {"name": name, "group": deployed.group, "undeployed": True})
