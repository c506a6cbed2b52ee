"""Object authorities in the manner of IBM MQ's ``setmqaut``: who may do what to which queue,
flow or administrative function (issue 15, seed 000 l.336-371; docs/security.md).

Why a model of its own beside the ACL file: the ACL file (``relaymq.auth.acl``) answers for
topics and stays the topic part of the model; queues, flows and administration need
per-object verbs (put, get, browse...) and generic profiles (``APP.**``), which a topic filter
cannot say. One question is asked at every entrance - REST, channels, psc commands, flows -
with the caller's principal: :meth:`Authorities.allows`.

Principals are names: a user of the password file, a certificate's common name (on a
listener that requires client certificates it is the user name), a peer queue manager as
``qmgr:NAME`` (:func:`qmgr_principal`; the colon keeps it apart from user names, which cannot
hold one), and :data:`ANONYMOUS` for a caller that sent no credentials. Groups are named sets
of principals. ``None`` is the broker's own internal caller and is never asked about: it is
trusted.

Authorities: for ``queue`` profiles ``put``, ``get``, ``browse``, ``inq``, ``set``,
``define``, ``delete``; for ``flow`` profiles ``deploy``; for the ``admin`` object (profile
``*``) ``admin``, which makes its holder an administrator; ``all`` stands for every authority of the type. A principal holds the union
of what every matching profile grants to it and to each of its groups (IBM MQ takes the most
specific profile only; the union is easier to predict and cannot take a grant away by adding
one). Administrators - ``[access] administrators`` and members of the group
``administrators`` - hold everything.

Generic profiles as in MQ: ``?`` one character, ``*`` any characters within one qualifier
(qualifiers are separated by ``.``), ``**`` any number of qualifiers (``APP.**`` matches
``APP`` and ``APP.IN.1``).

When is it enforced (:attr:`Authorities.enforced`)? As soon as the broker has a password file,
refuses anonymous clients or the authorities file grants anything. Otherwise - the loopback
single-user set-up of the README - everything is allowed, as before there were authorities.

The file is JSON (``version``, ``groups``, ``authorities``), written atomically; the broker
re-reads it when it changes (:class:`AuthorityFile`), so ``relaymq auth`` takes effect at
once without a restart.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from relaymq.auth.private_file import write_private

#: The principal of a caller that sent no credentials (no user name can hold a colon).
ANONYMOUS = ":anonymous"
#: Members of this group are administrators, like those of ``[access] administrators``.
ADMIN_GROUP = "administrators"
#: Object types and the authorities each has.
AUTHORITIES: dict[str, tuple[str, ...]] = {
    "queue": ("put", "get", "browse", "inq", "set", "define", "delete"),
    "flow": ("deploy",),
    # the message log's partitions (an archive rule's are <rule>-0, <rule>-1, ...): reading them
    # over the fetch endpoint, since the log holds every archived message
    "archive": ("read",),
    "admin": ("admin",),
}
#: The profile of the one ``admin`` object.
ADMIN_PROFILE = "*"
FILE_NAME = "authorities.json"
_VERSION = 1


class AuthorityError(ValueError):
    """A bad authorities file or request; the text names the file (or field) and the problem."""


def request_principal(request: Any) -> str | None:
    """Who an HTTP caller (an HttpRequest, or anything with ``user`` and ``administrator``) is
    for this model: None - the broker itself, holding every authority - for an administrator
    (relaymq.http.auth.BasicAuth marked the request: the broker's own administrator, or one this
    model makes), else the authenticated user, else anonymous. Every HTTP entrance asks its
    checks with this."""
    if getattr(request, "administrator", False):
        return None
    return getattr(request, "user", None) or ANONYMOUS


def qmgr_principal(name: str) -> str:
    """The principal of a peer queue manager that authenticated its channel as ``name``."""
    return f"qmgr:{name}"


@lru_cache(maxsize=4096)
def _profile_pattern(profile: str) -> re.Pattern[str]:
    """A generic profile as a regular expression (MQ's ``?``, ``*``, ``**``)."""
    out = []
    index = 0
    while index < len(profile):
        if profile.startswith(".**", index):
            out.append(r"(?:\..*)?")
            index += 3
        elif profile.startswith("**", index):
            out.append(r".*")
            index += 2
        elif profile[index] == "*":
            out.append(r"[^.]*")
            index += 1
        elif profile[index] == "?":
            out.append(r"[^.]")
            index += 1
        else:
            out.append(re.escape(profile[index]))
            index += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class Grant:
    """One row: ``authorities`` on objects of ``object_type`` matching ``profile``, held by
    ``principal`` (a name) or by the members of ``group``."""

    object_type: str
    profile: str
    entity: str
    is_group: bool
    authorities: frozenset[str]

    def matches(self, object_type: str, name: str) -> bool:
        return self.object_type == object_type and _profile_pattern(self.profile).match(name) is not None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.object_type, "profile": self.profile,
                ("group" if self.is_group else "principal"): self.entity,
                "authorities": sorted(self.authorities)}


def check_authorities(object_type: str, names: Iterable[str]) -> frozenset[str]:
    """The authorities ``names`` stand for (``all`` expanded); AuthorityError for an unknown
    type or authority."""
    if object_type not in AUTHORITIES:
        raise AuthorityError(f"unknown object type {object_type!r} (known: {', '.join(AUTHORITIES)})")
    known = AUTHORITIES[object_type]
    result: set[str] = set()
    for name in names:
        if name == "all":
            result.update(known)
        elif name in known:
            result.add(name)
        else:
            raise AuthorityError(f"{object_type}: unknown authority {name!r} (known: {', '.join(known)}, all)")
    return frozenset(result)


def check_profile(object_type: str, profile: str) -> None:
    if not isinstance(profile, str) or not profile or any(c.isspace() for c in profile):
        raise AuthorityError(f"{object_type}: the profile {profile!r} is empty or has white space")
    if object_type == "admin" and profile != ADMIN_PROFILE:
        raise AuthorityError(f"admin: the only profile is {ADMIN_PROFILE!r}")


class Authorities:
    """Groups and grants, and the one question: may this principal do this to that object?"""

    def __init__(self, groups: Mapping[str, Iterable[str]] | None = None, grants: Iterable[Grant] = (),
                 *, administrators: Iterable[str] = (), secured: bool = False) -> None:
        self.groups: dict[str, set[str]] = {name: set(members) for name, members in (groups or {}).items()}
        self.grants: list[Grant] = list(grants)
        self.administrators = frozenset(administrators)
        #: The broker checks credentials (password file, or anonymous refused).
        self.secured = secured

    @property
    def enforced(self) -> bool:
        """Authorities are checked once the broker checks credentials or anything is granted."""
        return self.secured or bool(self.grants)

    def groups_of(self, principal: str) -> set[str]:
        return {name for name, members in self.groups.items() if principal in members}

    def is_administrator(self, principal: str | None) -> bool:
        """The broker itself, ``[access] administrators``, the group ``administrators``, and
        whoever holds ``admin`` on the admin object (``relaymq auth set -t admin -p carol +admin``)."""
        return principal is None or principal in self.administrators or \
            principal in self.groups.get(ADMIN_GROUP, ()) or "admin" in self._granted(principal, "admin", ADMIN_PROFILE)

    def held(self, principal: str, object_type: str, name: str) -> frozenset[str]:
        """What ``principal`` may do to object ``name`` of ``object_type``."""
        if self.is_administrator(principal):
            return frozenset(AUTHORITIES[object_type])
        return self._granted(principal, object_type, name)

    def _granted(self, principal: str, object_type: str, name: str) -> frozenset[str]:
        """The union of the rows for ``principal`` and its groups that match the object."""
        groups = self.groups_of(principal)
        result: set[str] = set()
        for grant in self.grants:
            if (grant.entity in groups if grant.is_group else grant.entity == principal) \
                    and grant.matches(object_type, name):
                result |= grant.authorities
        return frozenset(result)

    def allows(self, principal: str | None, object_type: str, name: str, authority: str) -> bool:
        """The question every entrance asks. ``principal`` None is the broker itself."""
        if principal is None or not self.enforced:
            return True
        return authority in self.held(principal, object_type, name)

    # ---------------------------------------------------------------- changes (setmqaut)
    def change(self, object_type: str, profile: str, entity: str, *, group: bool = False,
               grant: Iterable[str] = (), revoke: Iterable[str] = ()) -> Grant | None:
        """Add ``grant`` and remove ``revoke`` for one entity on one profile, as
        ``setmqaut +x -y`` does; the row's new state (None once it holds nothing)."""
        check_profile(object_type, profile)
        if not entity:
            raise AuthorityError("the principal or group name is empty")
        added, removed = check_authorities(object_type, grant), check_authorities(object_type, revoke)
        current = next((g for g in self.grants if (g.object_type, g.profile, g.entity, g.is_group)
                        == (object_type, profile, entity, group)), None)
        held = (current.authorities if current is not None else frozenset()) - removed | added
        if current is not None:
            self.grants.remove(current)
        if not held:
            return None
        row = Grant(object_type, profile, entity, group, held)
        self.grants.append(row)
        return row

    def set_members(self, group: str, members: Iterable[str]) -> None:
        """The group's members from now on; an empty list removes the group."""
        if not group:
            raise AuthorityError("the group name is empty")
        wanted = {m for m in members if m}
        if wanted:
            self.groups[group] = wanted
        else:
            self.groups.pop(group, None)

    # ---------------------------------------------------------------- the file
    def to_json(self) -> dict[str, Any]:
        return {"version": _VERSION, "groups": {name: sorted(members) for name, members in sorted(self.groups.items())},
                "authorities": [g.to_json() for g in self.grants]}

    @classmethod
    def from_json(cls, data: Any, where: str = "authorities", **options: Any) -> Authorities:
        if not isinstance(data, dict):
            raise AuthorityError(f"{where}: expected a JSON object with groups and authorities")
        unknown = set(data) - {"version", "groups", "authorities"}
        if unknown:
            raise AuthorityError(f"{where}: unknown keys {sorted(unknown)} (known: version, groups, authorities)")
        if data.get("version", _VERSION) != _VERSION:
            raise AuthorityError(f"{where}: version {data.get('version')!r} is not {_VERSION}")
        groups = data.get("groups", {})
        if not isinstance(groups, dict) or not all(
                isinstance(members, list) and all(isinstance(m, str) for m in members) for members in groups.values()):
            raise AuthorityError(f"{where}: groups must map a group name to a list of principals")
        result = cls(groups, **options)
        rows = data.get("authorities", [])
        if not isinstance(rows, list):
            raise AuthorityError(f"{where}: authorities must be a list")
        for index, row in enumerate(rows):
            here = f"{where}: authorities[{index}]"
            if not isinstance(row, dict) or ("principal" in row) == ("group" in row):
                raise AuthorityError(f"{here}: an object with type, profile, authorities and principal or group")
            names = row.get("authorities")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise AuthorityError(f"{here}: authorities must be a list of names")
            entity = row.get("group", row.get("principal"))
            if not isinstance(entity, str) or not isinstance(row.get("type"), str):
                raise AuthorityError(f"{here}: type and principal/group must be strings")
            try:
                result.change(row["type"], row.get("profile", ""), entity, group="group" in row, grant=names)
            except AuthorityError as error:
                raise AuthorityError(f"{here}: {error}") from None
        return result

    @classmethod
    def load(cls, path: str, **options: Any) -> Authorities:
        """Read a file; a missing one is empty (nothing granted)."""
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return cls(**options)
        except OSError as error:
            raise AuthorityError(f"{path}: cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError:
            raise AuthorityError(f"{path}: not a UTF-8 text file") from None
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError as error:
            raise AuthorityError(f"{path}: not JSON: {error}") from None
        return cls.from_json(data, path, **options)

    def save(self, path: str) -> None:
        """Write atomically (temporary file, then rename), mode 0600 (relaymq.auth.private_file)."""
        write_private(path, json.dumps(self.to_json(), indent=1) + "\n")


class AuthorityFile:
    """The running broker's authorities, re-read whenever the file changes (its inode, size
    or modification time), so a ``relaymq auth`` in another process applies to the next
    request. A file that became unreadable or invalid keeps the last good authorities."""

    def __init__(self, path: str, *, administrators: Iterable[str] = (), secured: bool = False) -> None:
        self.path = path
        self._options = {"administrators": tuple(administrators), "secured": secured}
        self._stamp = _stamp(path)
        self._current = Authorities.load(path, **self._options)
        #: The last error of a reload that was refused (for the log).
        self.last_error: str | None = None
        self._updating = threading.Lock()  # two admin requests must not lose each other's change

    @property
    def current(self) -> Authorities:
        stamp = _stamp(self.path)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._current = Authorities.load(self.path, **self._options)
                self.last_error = None
            except AuthorityError as error:
                self.last_error = str(error)
        return self._current

    def allows(self, principal: str | None, object_type: str, name: str, authority: str) -> bool:
        return self.current.allows(principal, object_type, name, authority)

    def is_administrator(self, principal: str | None) -> bool:
        return self.current.is_administrator(principal)

    def update(self, change: Any) -> Any:
        """Apply ``change(authorities)`` to a fresh copy of the file and save it: the admin
        API's changes, persisted before they apply."""
        with self._updating:
            fresh = Authorities.load(self.path, **self._options)
            result = change(fresh)
            fresh.save(self.path)
            self._current, self._stamp = fresh, _stamp(self.path)
        return result


def authorities_path(access: Any, data_dir: str) -> str:
    """``[access] authorities_file``, or ``<data_dir>/authorities.json`` when it is not set."""
    return access.authorities_file or os.path.join(data_dir, FILE_NAME)


def open_authorities(config: Any) -> AuthorityFile:
    """The running broker's authorities for a validated configuration."""
    access = config.access
    return AuthorityFile(authorities_path(access, config.broker.data_dir), administrators=access.administrators,
                         secured=bool(access.password_file) or not access.allow_anonymous)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)
