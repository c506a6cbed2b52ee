"""``relaymq passwd``: create and edit the password file, like mosquitto_passwd.

Why a command of its own: the file holds bcrypt hashes, which nobody can write by hand, and
it must be replaced atomically with owner-only permissions (``PasswordFile.save`` does both).
Passwords are read from a prompt by default so they stay out of shell history and ``ps``;
``-b`` takes one from the command line for scripts, and with no terminal one line is read
from stdin (``echo secret | relaymq passwd passwords alice``).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from relaymq.auth.passwords import DEFAULT_COST, PasswordFile, PasswordFileError

_DESCRIPTION = """\
Add a user to, change a user's password in, or delete a user from a relaymq password file
(one "user:bcrypt-hash" line per user). Point [access] password_file at it in the broker's
configuration. The file is rewritten atomically with mode 0600."""

_EPILOG = f"""\
examples:
  relaymq passwd -c passwords alice           # create (or overwrite) with one user; prompts
  relaymq passwd passwords bob                # add bob, or change his password
  relaymq passwd -b passwords carol s3cret    # password on the command line (scripts)
  echo s3cret | relaymq passwd passwords dave # no terminal: one line from stdin
  relaymq passwd -D passwords bob             # delete bob

The bcrypt cost defaults to {DEFAULT_COST} (about a quarter of a second per check).
exit status: 0 done, 1 failure (one line on stderr), 2 bad command line."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``passwd`` sub-command."""
    parser = subparsers.add_parser(
        "passwd",
        help="manage the password file (like mosquitto_passwd)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-c", dest="create", action="store_true", help="create the file, overwriting an existing one")
    parser.add_argument("-b", dest="batch", action="store_true", help="take PASSWORD from the command line")
    parser.add_argument("-D", dest="delete", action="store_true", help="delete USER from the file")
    parser.add_argument(
        "--cost", type=int, default=DEFAULT_COST, metavar="N", help=f"bcrypt cost, 4..31 (default {DEFAULT_COST})"
    )
    parser.add_argument("file", metavar="FILE", help="the password file")
    parser.add_argument("user", metavar="USER", help="the user name")
    parser.add_argument("password", metavar="PASSWORD", nargs="?", help="the password (with -b only)")
    parser.set_defaults(func=run)


class _Failure(Exception):
    """A problem to print as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def _check_usage(args: argparse.Namespace) -> None:
    if args.create and args.delete:
        raise _Failure("-c and -D cannot be used together", 2)
    if args.delete and (args.batch or args.password is not None):
        raise _Failure("-D takes no password", 2)
    if args.batch and args.password is None:
        raise _Failure("-b needs PASSWORD after USER", 2)
    if not args.batch and args.password is not None:
        raise _Failure("give -b to pass PASSWORD on the command line (or leave it out to be prompted)", 2)


def _read_password() -> str:
    """Prompt twice on a terminal; otherwise read one line from stdin."""
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if getpass.getpass("Reenter password: ") != first:
            raise _Failure("the passwords do not match")
        return first
    line = sys.stdin.readline()
    if not line:
        raise _Failure("no password: stdin is empty")
    return line.rstrip("\r\n")


def _edit(args: argparse.Namespace) -> None:
    _check_usage(args)
    if not args.create and not os.path.exists(args.file):
        raise _Failure(f"{args.file} does not exist (use -c to create it)")
    try:
        passwords = PasswordFile() if args.create else PasswordFile.load(args.file)
    except PasswordFileError as error:
        raise _Failure(str(error)) from None
    if args.delete:
        if args.user not in passwords:
            raise _Failure(f"user {args.user!r} is not in {args.file}")
        passwords.delete(args.user)
    else:
        password = args.password if args.batch else _read_password()
        try:
            passwords.set(args.user, password, cost=args.cost)
        except ValueError as error:
            raise _Failure(str(error)) from None
    try:
        passwords.save(args.file)
    except OSError as error:
        raise _Failure(f"cannot write {args.file}: {error.strerror or error}") from None


def run(args: argparse.Namespace) -> int:
    """Apply the change to the file; print one line and return non-zero on failure."""
    try:
        _edit(args)
    except _Failure as failure:
        print(f"relaymq passwd: {failure}", file=sys.stderr)
        return failure.status
    return 0
