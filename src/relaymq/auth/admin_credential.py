"""The first administrator: a credential the broker makes for itself (issue 15 finding 2).

Why: flow deployment runs the flow's Python in the broker, and the other admin routes act on
everybody's queues and subscriptions, so they always need an administrator's credentials;
loopback is no credential (any local process, or a proxy on the machine, is loopback). Yet the
README's ``bin/relaymq serve`` must work with no configuration, and ``relaymq flow deploy``
on the same machine right after it. So, when ``[access] administrators`` names nobody, the
broker keeps one administrator of its own:

* user ``admin``, with a random password, in ``<data_dir>/admin.credentials`` (one line
  ``admin:<password>``, mode 0600, created with O_EXCL so it is never readable by others,
  even for an instant); made on the first start, kept afterwards (delete it to get a new
  password at the next start);
* the relaymq CLI (``flow``, ``queue``, ``psc``) sends it when given no user and the URL is on
  this machine: it reads ``$RELAYMQ_ADMIN_CREDENTIALS`` or ``./data/admin.credentials``, so
  whoever can read the broker's data directory is its administrator, as with Mosquitto's
  files.

The password is not printed: logs travel further than a 0600 file. Start-up says where the file
is, once, when it creates it.

With ``[access] administrators`` set, this file is neither made nor accepted: those users, as
the password file knows them, are the administrators.
"""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass

#: The user name of the broker's own administrator.
ADMIN_USER = "admin"
#: Its file, in the data directory.
FILE_NAME = "admin.credentials"
#: Where the CLI looks for it when ``$RELAYMQ_ADMIN_CREDENTIALS`` is not set (``bin/relaymq
#: serve``'s data directory, seen from the same working directory).
DEFAULT_PATH = os.path.join("data", FILE_NAME)
ENV_PATH = "RELAYMQ_ADMIN_CREDENTIALS"


class AdminCredentialError(Exception):
    """The file exists but cannot be used (unreadable, malformed, readable by others)."""


@dataclass(frozen=True)
class AdminCredential:
    """The broker's first administrator: user, password, the file they are in."""

    user: str
    password: str
    path: str
    created: bool = False

    def check(self, user: str, password: bytes) -> bool:
        """Constant-time comparison of a caller's credentials with this one."""
        return user == self.user and hmac.compare_digest(password, self.password.encode())


def parse(text: str, path: str) -> tuple[str, str]:
    """``(user, password)`` from the file's one line."""
    user, sep, password = text.strip().partition(":")
    if not sep or not user or not password or "\n" in password:
        raise AdminCredentialError(f"{path}: expected one line user:password")
    return user, password


def read(path: str) -> tuple[str, str]:
    """The credential in ``path`` (OSError when it cannot be read)."""
    with open(path, encoding="utf-8") as handle:
        return parse(handle.read(), path)


def ensure(data_dir: str) -> AdminCredential:
    """The broker's administrator credential, made (mode 0600) when it does not exist yet."""
    path = os.path.join(data_dir, FILE_NAME)
    os.makedirs(data_dir, exist_ok=True)
    password = secrets.token_urlsafe(24)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = os.stat(path).st_mode
        if mode & 0o077:
            raise AdminCredentialError(f"{path} is readable by others (mode {mode & 0o777:o}); "
                                       f"chmod 600 it, or delete it for a new one") from None
        try:
            user, password = read(path)
        except OSError as error:
            raise AdminCredentialError(f"{path}: {error.strerror or error}") from None
        return AdminCredential(user, password, path)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(f"{ADMIN_USER}:{password}\n")
    return AdminCredential(ADMIN_USER, password, path, created=True)
