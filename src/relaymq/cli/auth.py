"""``relaymq auth``: users, groups and authorities, in the manner of IBM MQ's ``setmqaut`` and
``dspmqaut`` (issue 15; docs/security.md "The authorisation model").

Why it edits files rather than talking to the broker: the authorities file is re-read by the
running broker as soon as it changes, so a change here applies to the next request without a
restart, and the command works the same whether the broker runs or not. Users live in the
password file, which the broker re-reads on SIGHUP (``--reload PID`` sends it); the admin API
(``/relaymq/auth/...``, docs/rest.md) does the same over HTTP.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import TypeVar

from relaymq.auth.authorities import ANONYMOUS, AUTHORITIES, FILE_NAME, Authorities, AuthorityError, authorities_path

_DESCRIPTION = """\
Grant and revoke authorities on queues, flows and administration, manage groups and users.
The authorities file is [access] authorities_file (default <data_dir>/authorities.json); a
running broker takes a change at once. Principals: user names (a certificate's common name
is the user name), qmgr:NAME for a peer queue manager, anonymous for callers without
credentials."""

_EPILOG = """\
examples:
  relaymq auth --config relaymq.toml set -t queue -n 'APP.**' -p bob +put +get +browse
  relaymq auth set -t queue -n SYSTEM.DEAD.LETTER.QUEUE -g operators +all
  relaymq auth set -t queue -n 'APP.**' -p bob -- -get     # revoke: after "--"
  relaymq auth set -t flow -n '**' -p carol +deploy
  relaymq auth group operators alice carol                 # members from now on
  relaymq auth group administrators carol                  # carol holds everything
  relaymq auth show [-p bob]
  relaymq auth user alice --reload "$(pidof -s relaymq)"   # password file, then SIGHUP

authorities: queue put get browse inq set define delete; flow deploy; admin admin; all.
exit status: 0 done, 1 failure (one line on stderr), 2 bad command line."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("auth", help="users, groups and authorities (like setmqaut)",
                                   description=_DESCRIPTION, epilog=_EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", metavar="FILE", help="the broker's configuration (finds the files)")
    parser.add_argument("--file", metavar="PATH", help=f"the authorities file (default <data_dir>/{FILE_NAME})")
    commands = parser.add_subparsers(dest="auth_command", metavar="ACTION")
    change = commands.add_parser("set", help="grant (+x) and revoke (-x) authorities, as setmqaut")
    change.add_argument("-t", dest="object_type", required=True, choices=tuple(AUTHORITIES))
    change.add_argument("-n", dest="profile", default="*", help="the profile: a name or generic (APP.**)")
    who = change.add_mutually_exclusive_group(required=True)
    who.add_argument("-p", dest="principal", help="a principal (user, qmgr:NAME, anonymous)")
    who.add_argument("-g", dest="group", help="a group")
    change.add_argument("changes", nargs=argparse.REMAINDER, metavar="+AUTH|-AUTH",
                        help='authorities to grant (+put) or revoke (-get, after "--")')
    show = commands.add_parser("show", help="the groups and authorities, as JSON")
    show.add_argument("-p", dest="principal", help="only what applies to this principal")
    group = commands.add_parser("group", help="set a group's members (none: remove it)")
    group.add_argument("name")
    group.add_argument("members", nargs="*")
    user = commands.add_parser("user", help="add a user or change its password in the password file")
    user.add_argument("name")
    user.add_argument("--password", help="the password (default: prompt, or one line from stdin)")
    user.add_argument("--delete", action="store_true", help="remove the user")
    user.add_argument("--password-file", help="default: [access] password_file of --config")
    user.add_argument("--reload", type=int, metavar="PID", help="send SIGHUP to the broker afterwards")
    parser.set_defaults(func=run)


class _Failure(Exception):
    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def _config(args: argparse.Namespace):
    from relaymq.config import ConfigError, load_config

    try:
        return load_config(args.config)
    except ConfigError as error:
        raise _Failure(f"config error: {error}", 2) from None


def _path(args: argparse.Namespace) -> str:
    if args.file:
        return str(args.file)
    config = _config(args)
    return authorities_path(config.access, config.broker.data_dir)


def _principal(name: str) -> str:
    return ANONYMOUS if name == "anonymous" else name


def _changes(tokens: list[str]) -> tuple[list[str], list[str]]:
    grant: list[str] = []
    revoke: list[str] = []
    for token in tokens:
        if token == "--":
            continue
        if len(token) < 2 or token[0] not in "+-":
            raise _Failure(f"{token!r}: write +AUTH to grant or -AUTH to revoke", 2)
        (grant if token[0] == "+" else revoke).append(token[1:])
    if not grant and not revoke:
        raise _Failure("nothing to change: give +AUTH or -AUTH", 2)
    return grant, revoke


_T = TypeVar("_T")


def _edit(path: str, edit: Callable[[Authorities], _T]) -> _T:
    authorities = Authorities.load(path)
    result = edit(authorities)
    authorities.save(path)
    return result


def _user(args: argparse.Namespace) -> None:
    from relaymq.auth.passwords import PasswordFile, PasswordFileError

    path = args.password_file or _config(args).access.password_file
    if not path:
        raise _Failure("no password file: give --password-file or a --config with [access] password_file", 2)
    try:
        passwords = PasswordFile.load(path) if os.path.exists(path) else PasswordFile()
        if args.delete:
            if args.name not in passwords:
                raise _Failure(f"{path}: no user {args.name!r}")
            passwords.delete(args.name)
        else:
            password = args.password
            if password is None:
                password = getpass.getpass() if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
            passwords.set(args.name, password)
        passwords.save(path)
    except (PasswordFileError, ValueError) as error:
        raise _Failure(str(error)) from None
    if args.reload is not None:
        try:
            os.kill(args.reload, signal.SIGHUP)
        except OSError as error:
            raise _Failure(f"{path} saved, but SIGHUP to {args.reload} failed: {error.strerror}") from None
    else:
        print(f"{path} saved; a running broker takes it on SIGHUP (kill -HUP PID, or --reload PID)",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        if args.auth_command is None:
            raise _Failure("give an action: set, show, group or user (relaymq auth --help)", 2)
        if args.auth_command == "user":
            _user(args)
            return 0
        path = _path(args)
        if args.auth_command == "set":
            grant, revoke = _changes(args.changes)
            entity = args.group if args.group is not None else _principal(args.principal)
            row = _edit(path, lambda a: a.change(args.object_type, args.profile, entity,
                                                 group=args.group is not None, grant=grant, revoke=revoke))
            print(json.dumps(row.to_json() if row is not None else None))
        elif args.auth_command == "group":
            _edit(path, lambda a: a.set_members(args.name, [_principal(m) for m in args.members]))
        else:
            data = Authorities.load(path).to_json()
            if args.principal is not None:
                principal = _principal(args.principal)
                groups = {g for g, members in data["groups"].items() if principal in members}
                data["authorities"] = [row for row in data["authorities"]
                                       if row.get("principal") == principal or row.get("group") in groups]
                data["groups"] = {g: data["groups"][g] for g in sorted(groups)}
            print(json.dumps(data, indent=1))
        return 0
    except AuthorityError as error:
        print(f"relaymq auth: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"relaymq auth: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
        return 1
    except _Failure as failure:
        print(f"relaymq auth: {failure}", file=sys.stderr)
        return failure.status
