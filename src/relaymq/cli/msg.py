"""``relaymq msg``: look inside MQ-format messages and build them.

Why: an operator with a message taken off a queue (or a dead-letter queue) needs to see its
MQMD, its headers and its body the way IBM's browse sample shows them, and tests and scripts
need to build such messages without writing Python. ``decode`` prints JSON; ``encode`` reads
the same JSON back, so the two round-trip byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys

from relaymq.message.errors import FormatError
from relaymq.message.headers import decode_message, encode_message
from relaymq.message.jsonform import from_json, to_json

_EPILOG = """\
examples:
  relaymq msg decode message.bin                    # MQMD, headers and body as JSON
  relaymq msg decode message.bin --domain XMLNSC    # ... and the body parsed as XML
  relaymq msg decode message.bin | relaymq msg encode -o copy.bin
  echo '{"body": {"text": "hello"}}' | relaymq msg encode -o hello.bin

exit status: 0 success, 2 a malformed message or JSON (one line on stderr)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``msg`` command with ``decode`` and ``encode``."""
    parser = subparsers.add_parser(
        "msg",
        help="decode or build MQ-format messages (MQMD, MQRFH2, body)",
        description="Decode an MQ-format message to JSON, or encode one from JSON.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="msg_command", metavar="SUBCOMMAND", required=True)
    dec = sub.add_parser("decode", help="print the headers and body of an MQ-format message as JSON")
    dec.add_argument("file", metavar="FILE", help="the message bytes ('-' for stdin)")
    dec.add_argument("--domain", help="also parse the body in this domain (XMLNSC, JSON, JMSMap, MIME, ...); 'auto' uses mcd.Msd")
    dec.add_argument("--md-encoding", type=int, help="MQ Encoding of the MQMD itself (default: detected)")
    dec.add_argument("--compact", action="store_true", help="one line of JSON instead of indented")
    dec.set_defaults(func=run)
    enc = sub.add_parser("encode", help="build an MQ-format message from JSON (the decode format)")
    enc.add_argument("file", metavar="FILE", nargs="?", default="-", help="the JSON ('-' or absent: stdin)")
    enc.add_argument("-o", "--output", default="-", help="where to write the bytes ('-': stdout)")
    enc.set_defaults(func=run)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return fh.read()


def _fail(command: str, reason: object) -> int:
    print(f"relaymq msg {command}: error: {reason}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    command = args.msg_command
    try:
        if command == "decode":
            data = _read(args.file)
            msg = decode_message(data, md_encoding=args.md_encoding)
            domain = args.domain
            if domain and domain.lower() == "auto":
                from relaymq.message.message import Message

                domain = Message(msg).domain
            doc = to_json(msg, domain)
            text = json.dumps(doc, ensure_ascii=False, indent=None if args.compact else 2)
            sys.stdout.write(text + "\n")
            return 0
        raw = _read(args.file)
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _fail(command, f"input is not JSON: {exc}")
        out = encode_message(from_json(doc))
        if args.output == "-":
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
        else:
            with open(args.output, "wb") as fh:
                fh.write(out)
        return 0
    except FormatError as exc:
        return _fail(command, exc)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return _fail(command, exc)
