"""``relaymq``: the top-level parser, which gathers the sub-commands and runs the chosen one.

Why commands are imported defensively: the command modules are written by different people
and some depend on optional parts of the product. A command whose module is not there is
simply not offered; one that is there but fails to import is reported on stderr and left
out, so one broken command never takes ``relaymq passwd`` or ``relaymq serve`` down with it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from relaymq import __version__

#: The command modules under relaymq.cli, in the order they are listed in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "serve", "pub", "sub", "passwd", "msg", "selector", "queue", "acl", "psc", "flow", "pipeline", "bench",
)

_DESCRIPTION = """\
relaymq is an integration message broker: MQTT (MQIsdp v3, 3.1.1 and 5.0) with
publish/subscribe, retained messages, sessions, authentication and ACLs.

Run the broker with `relaymq serve`; talk to any MQTT broker with `relaymq pub` and
`relaymq sub`; manage the password file with `relaymq passwd`.
Every command has its own help: relaymq COMMAND --help."""

_EPILOG = """\
examples:
  relaymq serve                                  # MQTT on 0.0.0.0:1883, data in ./data
  relaymq serve --config relaymq.toml            # see docs/configuration.md
  relaymq sub -t 'sensors/#' -v                  # print every sensor reading
  relaymq pub -t sensors/t1 -m 21.5 -q 1 -r      # publish a retained reading
  relaymq passwd -c passwords alice              # create a password file with one user

exit status: 0 success, 1 failure (one line on stderr), 2 usage or configuration error."""


def _load_commands() -> list[ModuleType]:
    """The command modules, in --help order."""
    return [importlib.import_module(f"{__package__}.{name}") for name in COMMAND_MODULES]


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every available sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="relaymq",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"relaymq {__version__}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for module in _load_commands():
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]), run the command, return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `relaymq sub ... | head -1`: the reader left; that is not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
