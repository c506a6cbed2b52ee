"""HTTP basic authentication against the broker's password file.

Why the same file as MQTT: an operator manages one set of users (``relaymq passwd``), and a
script that can publish over MQTT can use the REST interface with the same name and password.
bcrypt is slow on purpose, so the check runs on a worker thread (the PasswordFile caches a
successful check, so only the first request of a user pays for it).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

from relaymq.http.server import Handler, HttpRequest, HttpResponse

REALM = "relaymq"


def parse_basic(value: str | None) -> tuple[str, bytes] | None:
    """(user, password) from an ``Authorization: Basic ...`` value, None when absent/invalid."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None


class BasicAuth:
    """Who may call protected routes: users of ``passwords`` (a PasswordFile), the broker's
    administrator ``admin`` (relaymq.auth.admin_credential.AdminCredential) when given, and
    anybody when ``passwords`` is None or ``allow_anonymous`` is true and no credentials are
    sent. ``authorities`` (relaymq.auth.authorities) names more administrators: a user of
    ``passwords`` it makes one (group ``administrators``, or holding ``admin``) is one here."""

    def __init__(self, passwords: Any | None, allow_anonymous: bool, admin: Any | None = None,
                 authorities: Any | None = None) -> None:
        self.passwords = passwords
        self.allow_anonymous = allow_anonymous or passwords is None
        self.admin = admin
        self.authorities = authorities

    async def authenticate(self, request: HttpRequest) -> tuple[bool, str | None]:
        """(allowed, user). Credentials that are sent must be right even when anonymous
        access is allowed: a typo in a password should fail loudly, not run anonymously.
        Sets ``request.administrator`` when they are the broker's administrator's."""
        credentials = parse_basic(request.header("authorization"))
        if credentials is None:
            return self.allow_anonymous, None
        user, password = credentials
        if self.admin is not None and user == self.admin.user:
            if self.admin.check(user, password):
                request.administrator = True
                return True, user
            if self.passwords is None or user not in self.passwords:
                return False, None
        if self.passwords is None:
            return True, user  # nobody to check: a claimed name, which no admin route trusts
        ok = await asyncio.to_thread(self.passwords.check, user, password)
        if ok and self.authorities is not None and self.authorities.is_administrator(user):
            request.administrator = True  # a proven name the authorisation model makes an administrator
        return ok, user if ok else None

    def protect(self, handler: Handler, unauthorized: Any = None) -> Handler:
        """Wrap ``handler`` so it runs only for allowed callers; others get 401 with a
        WWW-Authenticate challenge (``unauthorized(request)`` builds the body when given)."""

        async def guarded(request: HttpRequest) -> HttpResponse:
            allowed, user = await self.authenticate(request)
            if not allowed:
                response = (unauthorized(request) if unauthorized is not None
                            else HttpResponse(401, [("content-type", "text/plain")], b"unauthorized\n"))
                response.headers.append(("www-authenticate", f'Basic realm="{REALM}"'))
                return response
            request.user = user
            return await handler(request)

        return guarded
