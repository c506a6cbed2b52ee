"""``relaymq selector check``: validate a selector / content filter, and evaluate it.

Why: a subscription with a bad filter is refused with reason 3150 and a consumer with a bad
selector cannot start; checking the expression first, with the position of the mistake, saves
a round trip. With ``--message`` the expression is evaluated against a real message (an
MQ-format file, or the JSON that ``relaymq msg decode`` prints), exactly as the broker would.
"""

from __future__ import annotations

import argparse
import json
import sys

from relaymq.message.domains.registry import canonical_domain
from relaymq.message.errors import FormatError
from relaymq.message.headers import decode_message
from relaymq.message.jsonform import from_json
from relaymq.message.message import Message
from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.resolvers import message_resolver

_EPILOG = """\
examples:
  relaymq selector check "JMSPriority > 4 AND colour = 'blue'"
  relaymq selector check "Body.Name LIKE 'Smit%'" --message pub.bin --domain XMLNSC
  relaymq selector check "usr.colour IN ('red', 'blue')" --message msg.json

exit status: 0 valid (and TRUE with --message), 1 FALSE or UNKNOWN with --message,
2 an invalid expression or message (one line on stderr)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``selector`` command with ``check``."""
    parser = subparsers.add_parser(
        "selector",
        help="check JMS selectors and content filters",
        description="Validate a selector expression and optionally evaluate it on a message.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="selector_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser("check", help="validate EXPR; with --message, evaluate it")
    check.add_argument("expression", metavar="EXPR", help="the selector, e.g. \"colour = 'blue'\"")
    check.add_argument("--message", metavar="FILE", help="an MQ-format message, or its JSON form ('-' for stdin)")
    check.add_argument("--domain", help="domain to parse the body in when the message does not say")
    check.set_defaults(func=run)


def _load_message(path: str, domain: str | None) -> Message:
    """The message in ``path``; raises FormatError (bad bytes, JSON form or domain), OSError,
    or ValueError for text that is not JSON."""
    if domain:
        domain = canonical_domain(domain)
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as fh:
            data = fh.read()
    if data.lstrip()[:1] == b"{":
        mq = from_json(json.loads(data.decode("utf-8")))
    else:
        mq = decode_message(data)
    return Message(mq, configured_domain=domain)


def run(args: argparse.Namespace) -> int:
    try:
        selector = compile_selector(args.expression)
    except SelectorError as exc:
        print(f"relaymq selector check: error: {exc}", file=sys.stderr)
        return 2
    if not args.message:
        names = ", ".join(sorted(selector.identifiers)) or "none"
        print(f"valid; identifiers: {names}")
        return 0
    try:
        message = _load_message(args.message, args.domain)
    except (FormatError, OSError, ValueError) as exc:
        print(f"relaymq selector check: error: message: {exc}", file=sys.stderr)
        return 2
    result = selector.evaluate(message_resolver(message))
    print({True: "TRUE", False: "FALSE", None: "UNKNOWN"}[result])
    return 0 if result is True else 1
