"""The ``Authorization`` header the CLI's HTTP commands (``flow``, ``queue``, ``psc``) send.

One rule for the three: with a user (``-u``/``--user``), HTTP basic authentication with the
password from ``-P`` or ``$RELAYMQ_PASSWORD``; without one, and only for a URL on this machine,
the broker's own administrator (relaymq.auth.admin_credential) from
``$RELAYMQ_ADMIN_CREDENTIALS`` or ``./data/admin.credentials`` when that file can be read. So
``bin/relaymq serve`` followed by ``bin/relaymq flow deploy`` in the same directory works, and
the administrator's password is never sent to another host.
"""

from __future__ import annotations

import base64
import os
import urllib.parse

from relaymq.auth.admin_credential import DEFAULT_PATH, ENV_PATH, AdminCredentialError, read
from relaymq.net.binding import is_loopback


def basic(user: str, password: str) -> tuple[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return ("authorization", f"Basic {token}")


def _local(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return is_loopback(host)


def authorization(url: str, user: str | None, password: str | None = None, *,
                  admin: bool = True) -> list[tuple[str, str]]:
    """The header for a call to ``url`` (an empty list: none); the administrator's credential
    only for an ``admin`` call (a queue put needs no such power, and a stale file of another
    broker would turn an anonymous call into a refused one)."""
    if user:
        return [basic(user, password if password is not None else os.environ.get("RELAYMQ_PASSWORD", ""))]
    if not admin or not _local(url):
        return []
    try:
        admin_user, admin_password = read(os.environ.get(ENV_PATH) or DEFAULT_PATH)
    except (OSError, AdminCredentialError):
        return []
    return [basic(admin_user, admin_password)]
