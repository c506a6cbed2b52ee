"""The one rule for administrator routes (relaymq.http.admin_guard), on a real HttpServer with
real basic authentication, from the loopback interface and from another address of this
machine (docs/rest.md "Authentication"; flows-http.md item 3 deploy at run time, pubsub.md
item 19 removal by an administrator, everyplace.md queue definition: each an administrator's
act, guarded the same way)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import threading
from pathlib import Path

import pytest

from harness import outside_address
from relaymq.auth.admin_credential import AdminCredential
from relaymq.auth.passwords import PasswordFile
from relaymq.http import admin_guard
from relaymq.http.admin_guard import AdminPolicy
from relaymq.http.auth import BasicAuth
from relaymq.http.server import HttpRequest, HttpResponse, HttpServer


async def _ok(request: HttpRequest) -> HttpResponse:
    return admin_guard.json_response(200, {"user": request.user})


def _call(host: str, port: int, user: str | None = None, password: str = "") -> tuple[int, dict]:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    conn.request("GET", "/admin/thing", headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, json.loads(body) if body.startswith(b"{") else {}


class GuardedServer:
    """An HttpServer on every interface (so another address of this machine reaches it), in an
    event loop thread, with basic authentication against a password file."""

    def __init__(self) -> None:
        passwords = PasswordFile()
        passwords.set("root", "root-pw", cost=4)
        passwords.set("clerk", "clerk-pw", cost=4)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = HttpServer()
        self.admin = AdminCredential("admin", "admin-pw", "admin.credentials")
        self.server.auth = BasicAuth(passwords, allow_anonymous=False, admin=self.admin)
        self.call(self.server.start("0.0.0.0", 0))
        self.port = self.server.port

    def call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def close(self) -> None:
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def guarded_server(tmp_path: Path):
    server = GuardedServer()
    try:
        yield server
    finally:
        server.close()


def test_authentication_then_administrators(guarded_server):
    """No credentials: 401 (the server's authentication comes first); a user who is not in
    [access] administrators: 403 naming the list; an administrator: through, as themselves."""
    policy = AdminPolicy("thing administration", "[things] admin_remote", False, ("root",))
    admin_guard.install(guarded_server.server, [("GET", "/admin/thing", _ok)], policy)
    port = guarded_server.port
    assert _call("127.0.0.1", port)[0] == 401
    status, body = _call("127.0.0.1", port, "clerk", "clerk-pw")
    assert status == 403 and body["error"] == "thing administration needs a user of [access] administrators"
    assert _call("127.0.0.1", port, "root", "root-pw") == (200, {"user": "root"})


def test_empty_administrators_means_the_brokers_own_administrator_only(guarded_server):
    """issue 15 finding 2 ("a flow deploy from loopback needs no credentials"): with no
    [access] administrators, a user of the password file is no administrator (403 naming the
    credential file); the broker's administrator is, and a wrong password for it is 401."""
    admin_guard.install(guarded_server.server, [("GET", "/admin/thing", _ok)],
                        AdminPolicy("thing administration", "[things] admin_remote"))
    port = guarded_server.port
    status, body = _call("127.0.0.1", port, "clerk", "clerk-pw")
    assert status == 403 and "admin.credentials" in body["error"]
    assert _call("127.0.0.1", port, "admin", "admin-pw") == (200, {"user": "admin"})
    assert _call("127.0.0.1", port, "admin", "guess")[0] == 401


def test_without_a_password_file_loopback_is_no_credential(guarded_server):
    """issue 15 finding 2: the embedded defaults (no password file, anonymous REST): an
    anonymous caller on loopback, and one claiming a user name, may not administer."""
    guarded_server.server.auth = BasicAuth(None, allow_anonymous=True, admin=guarded_server.admin)
    admin_guard.install(guarded_server.server, [("GET", "/admin/thing", _ok)],
                        AdminPolicy("thing administration", "[things] admin_remote"))
    port = guarded_server.port
    assert _call("127.0.0.1", port)[0] == 403
    assert _call("127.0.0.1", port, "root", "anything")[0] == 403
    assert _call("127.0.0.1", port, "admin", "anything")[0] == 401
    assert _call("127.0.0.1", port, "admin", "admin-pw") == (200, {"user": "admin"})


def test_loopback_only_unless_admin_remote(guarded_server):
    """From another address of this machine an administrator gets 403 naming the setting,
    until the policy (asked per request) allows remote callers; loopback is always served."""
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    remote = {"allowed": False}
    admin_guard.install(guarded_server.server, [("GET", "/admin/thing", _ok)],
                        lambda: AdminPolicy("thing administration", "[things] admin_remote", remote["allowed"],
                                            ("root",)),
                        refuse=lambda reason: HttpResponse(403, [], reason.encode()))
    port = guarded_server.port
    assert _call("127.0.0.1", port, "root", "root-pw")[0] == 200
    conn = http.client.HTTPConnection(address, port, timeout=10)
    token = base64.b64encode(b"root:root-pw").decode()
    conn.request("GET", "/admin/thing", headers={"Authorization": f"Basic {token}"})
    response = conn.getresponse()
    assert response.status == 403
    assert response.read() == (b"thing administration is only allowed from the loopback interface "
                               b"([things] admin_remote = true allows other addresses)")
    conn.close()
    remote["allowed"] = True
    assert _call(address, port, "root", "root-pw") == (200, {"user": "root"})


def test_uninstall_removes_the_routes(guarded_server):
    routes = [("GET", "/admin/thing", _ok)]
    policy = AdminPolicy("thing administration", "[things] admin_remote")
    admin_guard.install(guarded_server.server, routes, policy)
    admin_guard.uninstall(guarded_server.server, routes)
    admin_guard.uninstall(guarded_server.server, routes)  # twice: nothing left to remove
    assert _call("127.0.0.1", guarded_server.port, "root", "root-pw")[0] == 404
