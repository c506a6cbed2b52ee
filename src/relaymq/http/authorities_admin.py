"""The administrator's routes for users, groups and authorities (issue 15; docs/rest.md):

=======  ===============================  =====================================================
GET      /relaymq/auth/authorities        ``{"enforced", "groups", "authorities"}``
POST     /relaymq/auth/authorities        ``{"type", "profile", "principal"|"group", "grant":
                                          [...], "revoke": [...]}``: setmqaut +x -y; 200 with
                                          the row (``null`` once it holds nothing)
PUT      /relaymq/auth/groups/{group}     ``{"members": [...]}`` (empty: the group is removed)
PUT      /relaymq/auth/users/{user}       ``{"password": "..."}``: add the user or change it
DELETE   /relaymq/auth/users/{user}       remove the user (204)
=======  ===============================  =====================================================

Every change is saved to its file (the authorities file, ``[access] password_file``) before it
applies, and applies at once: the authorities are re-read from their file on change, and a
change of users re-reads every access file as SIGHUP does (relaymq.services.reload), so the MQTT
password checker sees it too.

Who may call them: an administrator of the authority model - ``[access] administrators`` or a
member of the group ``administrators`` - authenticated by the HTTP server. While nothing is
enforced (no password file, anonymous allowed, nothing granted: the open single-user set-up)
any caller on the loopback interface may, as every admin route there. Answers are JSON;
errors ``{"error": "one line"}`` with 400, 403, 404 or 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from relaymq.auth.authorities import ANONYMOUS, AuthorityError, request_principal
from relaymq.http.admin_guard import is_loopback, json_response
from relaymq.http.server import HttpRequest, HttpResponse

BASE = "/relaymq/auth"


def _require(condition: bool, message: str) -> None:
    """A request the routes cannot take: 400 with ``message``."""
    if not condition:
        raise ValueError(message)


class AuthorityAdmin:
    """The routes over the running broker's AuthorityFile and password file."""

    def __init__(self, authorities: Any, *, password_path: str = "", reload: Callable[[], object] | None = None) -> None:
        self.authorities = authorities
        self.password_path = password_path
        #: Re-reads every access file (relaymq.services.reload), so each holder takes the change.
        self.reload = reload

    def routes(self) -> list[tuple[str, str, Any]]:
        return [("GET", f"{BASE}/authorities", self.show), ("POST", f"{BASE}/authorities", self.change),
                ("PUT", f"{BASE}/groups/{{group}}", self.group), ("PUT", f"{BASE}/users/{{user}}", self.set_user),
                ("DELETE", f"{BASE}/users/{{user}}", self.delete_user)]

    def install(self, server: Any) -> None:
        auth = getattr(server, "auth", None)
        for method, pattern, handler in self.routes():
            guarded = self._guard(handler)
            server.add_route(method, pattern, auth.protect(guarded) if auth is not None else guarded)

    def refusal(self, request: HttpRequest) -> str | None:
        """None when the caller administers authorities, else why not."""
        if request_principal(request) is None:  # an administrator (request_principal)
            return None
        user = getattr(request, "user", None)
        if user and self.authorities.is_administrator(user):
            return None
        if not self.authorities.current.enforced and is_loopback(request.remote):
            return None
        return ("authority administration needs an administrator ([access] administrators or the group"
                " 'administrators')")

    def _guard(self, handler: Any) -> Any:
        async def guarded(request: HttpRequest) -> HttpResponse:
            reason = self.refusal(request)
            if reason is not None:
                return json_response(403, {"error": reason})
            try:
                return await handler(request)
            except (AuthorityError, ValueError) as error:
                return json_response(400, {"error": str(error)})
        return guarded

    @staticmethod
    def _body(request: HttpRequest) -> dict[str, Any]:
        try:
            document = json.loads(request.body.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: nested too deep
            raise ValueError(f"the body is not JSON: {error}") from None
        _require(isinstance(document, dict), "the body must be a JSON object")
        return document

    async def show(self, request: HttpRequest) -> HttpResponse:
        current = self.authorities.current
        return json_response(200, {"enforced": current.enforced, **current.to_json()})

    async def change(self, request: HttpRequest) -> HttpResponse:
        body = self._body(request)
        if ("principal" in body) == ("group" in body):
            raise ValueError("give one of principal or group")
        lists = [body.get("grant", []), body.get("revoke", [])]
        _require(all(isinstance(x, list) and all(isinstance(n, str) for n in x) for x in lists),
                 "grant and revoke must be lists of authority names")
        entity = body.get("group", body.get("principal"))
        _require(isinstance(entity, str) and isinstance(body.get("type"), str),
                 "type and principal/group must be strings")
        if entity == "anonymous":  # the spelling a person types
            entity = ANONYMOUS
        row = await asyncio.to_thread(self.authorities.update, lambda a: a.change(
            body["type"], body.get("profile", ""), entity, group="group" in body, grant=lists[0], revoke=lists[1]))
        return json_response(200, {"authority": row.to_json() if row is not None else None})

    async def group(self, request: HttpRequest) -> HttpResponse:
        members = self._body(request).get("members")
        _require(isinstance(members, list) and all(isinstance(m, str) for m in members),
                 "members must be a list of principals")
        name = request.path_params["group"]
        await asyncio.to_thread(self.authorities.update, lambda a: a.set_members(name, members))
        return json_response(200, {"group": name, "members": sorted(set(members or ()))})

    async def _edit_users(self, edit: Callable[[Any], bool]) -> bool:
        """Read the password file, ``edit`` it, save it, and have every holder re-read it.
        False (nothing saved) when ``edit`` says there was nothing to do."""
        if not self.password_path:
            raise ValueError("the broker has no password file ([access] password_file)")
        from relaymq.auth.passwords import PasswordFile

        def run() -> bool:
            passwords = PasswordFile.load(self.password_path)
            if not edit(passwords):
                return False
            passwords.save(self.password_path)
            return True

        done = await asyncio.to_thread(run)
        if done and self.reload is not None:
            self.reload()
        return done

    async def set_user(self, request: HttpRequest) -> HttpResponse:
        password = self._body(request).get("password")
        _require(isinstance(password, str), "password must be a string")
        user = request.path_params["user"]
        await self._edit_users(lambda passwords: passwords.set(user, password) or True)
        return json_response(200, {"user": user})

    async def delete_user(self, request: HttpRequest) -> HttpResponse:
        user = request.path_params["user"]

        def delete(passwords: Any) -> bool:
            if user not in passwords:
                return False
            passwords.delete(user)
            return True

        if not await self._edit_users(delete):
            return json_response(404, {"error": f"no user {user!r}"})
        return HttpResponse(204, [])
