"""The administrator's routes for queue subscriptions on the broker's HTTP server, used by
``relaymq psc`` (pubsub.md item 19: "removed ... by an administrator", seed 1840-1854,
5487-5501):

=======  ==============================  ==========================================================
GET      /relaymq/pubsub/subscriptions   JSON list of the psc subscriptions that match the query
DELETE   /relaymq/pubsub/subscriptions   remove those that match (at least one criterion, or
                                         ``all=true``); each removal publishes the Removed event
                                         with cause ``administrator`` (item 45)
=======  ==============================  ==========================================================

Query criteria (each optional, exact strings as registered, like DeregSub): ``topic``,
``subPoint``, ``filter``, ``qmgr``, ``queue``, ``correlId`` (hex), ``subName``, ``user``.
Answers are JSON (``{"subscriptions": [...]}``, ``{"removed": [...]}``); errors are
``{"error": "one line"}`` with 400 (bad query), 403 (caller not allowed), 500 (the removal
could not be made durable: nothing was removed).

Removing somebody's subscriptions is an administrator's act, so the routes are guarded as
every admin route is (relaymq.http.admin_guard): the HTTP server's authentication, ``[access]
administrators`` (when empty: the broker's own administrator), and the loopback interface unless ``[pubsub]
admin_remote`` is true.
"""

from __future__ import annotations

from typing import Any

from relaymq.http import admin_guard
from relaymq.http.admin_guard import AdminPolicy, json_response
from relaymq.http.server import HttpRequest, HttpResponse

BASE = "/relaymq/pubsub/subscriptions"
#: Query parameter -> ``PubSubEngine.select`` keyword.
CRITERIA = {"topic": "topic", "subPoint": "sub_point", "filter": "filter_text", "qmgr": "qmgr",
            "queue": "queue", "correlId": "correl_id", "subName": "sub_name", "user": "user"}


class AdminError(ValueError):
    """A query the routes cannot take (400)."""


def criteria_from_query(query: dict[str, list[str]]) -> dict[str, Any]:
    """``select`` keywords from the query string; raises AdminError for an unknown parameter
    or a correlId that is not hex."""
    out: dict[str, Any] = {}
    for name, values in query.items():
        if name == "all":
            continue
        if name not in CRITERIA:
            raise AdminError(f"unknown parameter {name!r} (known: {', '.join(CRITERIA)}, all)")
        value = values[0] if values else ""
        if name == "correlId":
            try:
                out["correl_id"] = bytes.fromhex(value)
            except ValueError:
                raise AdminError(f"correlId {value!r} is not hex") from None
        else:
            out[CRITERIA[name]] = value
    return out


class PscAdmin:
    """The routes, over a running ``PubSubService``."""

    def __init__(self, service: Any, *, admin_remote: bool, administrators: tuple[str, ...]) -> None:
        self.service = service
        self.policy = AdminPolicy("subscription administration", "[pubsub] admin_remote", admin_remote,
                                  tuple(administrators))

    def routes(self) -> list[tuple[str, str, Any]]:
        return [("GET", BASE, self.list), ("DELETE", BASE, self.remove)]

    def install(self, server: Any) -> None:
        admin_guard.install(server, self.routes(), self.policy)

    def uninstall(self, server: Any) -> None:
        admin_guard.uninstall(server, self.routes())

    async def list(self, request: HttpRequest) -> HttpResponse:
        try:
            criteria = criteria_from_query(request.query)
        except AdminError as err:
            return json_response(400, {"error": str(err)})
        return json_response(200, {"subscriptions": [s.describe() for s in self.service.engine.select(**criteria)]})

    async def remove(self, request: HttpRequest) -> HttpResponse:
        try:
            criteria = criteria_from_query(request.query)
        except AdminError as err:
            return json_response(400, {"error": str(err)})
        if not criteria and request.query_value("all") != "true":
            return json_response(400, {"error": "give at least one criterion (topic, queue, subName...) or all=true"})
        try:
            removed = await self.service.remove_subscriptions(criteria, by=request.user)
        except OSError as err:
            return json_response(500, {"error": f"the removal could not be saved, nothing was removed: {err}"})
        return json_response(200, {"removed": removed})
