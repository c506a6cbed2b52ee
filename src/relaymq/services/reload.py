"""SIGHUP: read the access files again without a restart (issue 15).

Why in place: the password file is held by the MQTT password checker and by the HTTP server's
basic authentication, the ACL by the broker (inside the topic ACLs' ``CombinedAcl`` when pub/sub
topic security is on); replacing their contents keeps every holder current. A file that no
longer parses is refused with one log line and the running state stays as it was. The
authorities file needs no signal (relaymq.auth.authorities re-reads it when it changes); it is
re-read here too so a SIGHUP logs a broken one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("relaymq.reload")

Reloader = tuple[str, Callable[[], None]]


def password_reloader(path: str, passwords: Any) -> Reloader:
    """Re-read ``path`` into ``passwords`` (a PasswordFile) in place."""
    from relaymq.auth.passwords import PasswordFile

    return f"password file {path}", lambda: passwords.replace_with(PasswordFile.load(path))


def acl_reloader(path: str, broker: Any) -> Reloader:
    """Re-read the ACL file into ``broker.acl`` (or the simple part of a CombinedAcl)."""
    from relaymq.auth.acl import Acl

    def reload() -> None:
        fresh = Acl.load(path)
        if hasattr(broker.acl, "simple"):
            broker.acl.simple = fresh
        else:
            broker.acl = fresh

    return f"ACL file {path}", reload


def authorities_reloader(authorities: Any) -> Reloader:
    def reload() -> None:
        authorities.current  # noqa: B018 - reads the file when it changed
        if authorities.last_error is not None:
            raise ValueError(authorities.last_error)

    return f"authorities file {authorities.path}", reload


def reload_all(reloaders: list[Reloader]) -> int:
    """Run every reloader; log each result. Returns how many failed."""
    failed = 0
    for what, reload in reloaders:
        try:
            reload()
        except (OSError, ValueError) as error:  # the files' errors are ValueErrors naming file and line
            failed += 1
            log.error("SIGHUP: %s not taken, the previous one stays: %s", what, error)
        else:
            log.info("SIGHUP: %s reloaded", what)
    return failed
