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

from relaymq import __version__, native

#: The command modules under relaymq.cli, in the order they are listed in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "serve", "pub", "sub", "passwd", "auth", "msg", "selector", "queue", "listener", "acl", "psc", "flow", "pipeline",
    "bench", "multicast",
)

_DESCRIPTION = """\
relaymq is an integration message broker: MQTT (MQIsdp v3, 3.1.1 and 5.0), a
publish/subscribe engine with the psc command protocol, MQ-format messages and JMS,
MQ Everyplace queue managers with an IBM-MQ-shaped REST interface and channels,
message flows, and a message log for Spark pipelines.

`relaymq serve` runs it all: MQTT on 1883, HTTP (REST) on 8080, channels on 8081,
queue manager QM1. Every command has its own help: relaymq COMMAND --help."""

_EPILOG = """\
examples:
  relaymq serve                                  # MQTT on localhost:1883, data in ./data
  relaymq serve --config relaymq.toml            # see docs/configuration.md
  relaymq sub -t 'sensors/#' -v                  # print every sensor reading
  relaymq pub -t sensors/t1 -m 21.5 -q 1 -r      # publish a retained reading
  relaymq passwd -c passwords alice              # create a password file with one user
  relaymq queue put ORDERS -m hello --url http://127.0.0.1:8080
  relaymq flow deploy examples/soap/soap.yaml    # into the running broker

exit status: 0 success, 1 failure (one line on stderr), 2 usage or configuration error."""


def _load_commands(only: str | None = None) -> list[ModuleType]:
    """The command modules, in --help order; ``only`` that one."""
    names = (only,) if only in COMMAND_MODULES else COMMAND_MODULES
    return [importlib.import_module(f"{__package__}.{name}") for name in names]


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names when its first word is one (``serve`` in ``relaymq serve
    --config x``), else None. Why: a command's modules are imported only when it runs, so
    ``relaymq serve`` does not carry the MQTT client library, the load generator and every
    other command in its memory (issue 16, row 6: RSS with 10,000 idle connections)."""
    first = argv[0] if argv else None
    return first if first in COMMAND_MODULES else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every available sub-command registered (``only``: just that one, for
    running it; ``relaymq --help`` and an unknown command get them all)."""
    parser = argparse.ArgumentParser(
        prog="relaymq",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"relaymq {__version__} ({native.status.describe()})")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for module in _load_commands(only):
        module.register(subparsers)
    return parser


def innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)sub-command parser ``args`` were parsed by: ``relaymq queue define`` ->
    define's. argparse keeps sub-parsers in its actions; there is no public way to them."""
    while True:
        chosen = None
        for action in parser._actions:  # noqa: SLF001
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return parser
        parser = chosen


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]), run the command, return its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen_command(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the usage of the command it was given to, not the top level's (issue 18)
        innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
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
