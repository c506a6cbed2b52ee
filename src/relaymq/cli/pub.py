"""``relaymq pub``: publish one message, a file, or one message per line of stdin.

Why it exists: operators and tests need a dependable publisher that speaks every protocol
level the broker serves (MQIsdp v3, 3.1.1, 5.0) with the flags people already know from
mosquitto_pub. It waits for each QoS 1/2 acknowledgement before exiting, so exit status 0
means the broker has the message.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator

from relaymq.cli.client_options import CONNECTION_EPILOG, ClientError, Connection, add_client_arguments

_DESCRIPTION = """\
Publish to an MQTT broker (relaymq or any other). Give exactly one of -m, -f, -n, -l, -s.
With QoS 1 or 2 the command waits for the broker's acknowledgement of every message."""

_EPILOG = f"""\
examples:
  relaymq pub -t sensors/t1 -m 21.5
  relaymq pub -t sensors/t1 -m 21.5 -q 1 -r             # retained, acknowledged
  relaymq pub -t sensors/t1 -n -r                       # clear the retained message
  relaymq pub -t files/report -f report.pdf -q 2
  tail -f app.log | relaymq pub -t logs/app -l          # one message per line
  relaymq pub -h broker.example -p 8883 --cafile ca.pem -u alice -P secret -t a/b -m hi
  relaymq pub -V 31 -t legacy/topic -m hello            # an MQIsdp v3 client
  relaymq pub -V 5 -t plant/p1/temp -m 21.5 --user-property colour blue

{CONNECTION_EPILOG}"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``pub`` sub-command."""
    parser = subparsers.add_parser(
        "pub",
        add_help=False,
        help="publish messages (like mosquitto_pub)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_client_arguments(parser)
    message = parser.add_argument_group("message")
    message.add_argument("-t", "--topic", required=True, help="topic to publish on")
    message.add_argument("-r", "--retain", action="store_true", help="ask the broker to retain the message")
    message.add_argument("--user-property", nargs=2, action="append", metavar=("NAME", "VALUE"),
                         help="an MQTT 5 user property (repeatable; needs -V 5); relaymq makes them the "
                         "message's usr folder (docs/pubsub.md)")
    source = message.add_mutually_exclusive_group(required=True)
    source.add_argument("-m", "--message", help="the message text")
    source.add_argument("-f", "--file", help="send the contents of this file as one message")
    source.add_argument("-n", "--null-message", action="store_true", help="send a zero-length message")
    source.add_argument("-l", "--stdin-line", action="store_true", help="send each line of stdin as a message (blank lines are skipped)")
    source.add_argument("-s", "--stdin-file", action="store_true", help="send all of stdin as one message")
    parser.set_defaults(func=run)


def _stdin_lines() -> Iterator[bytes]:
    for line in sys.stdin.buffer:
        line = line.rstrip(b"\r\n")
        if line:  # a blank line is not a message (and must not clear a retained one with -r)
            yield line


def _payloads(args: argparse.Namespace) -> Iterable[bytes]:
    """The messages to send, as bytes. A single message is read now, before connecting, so a
    missing file fails without touching the broker; -l lines are read as they arrive."""
    if args.stdin_line:
        return _stdin_lines()
    if args.message is not None:
        return [args.message.encode("utf-8")]
    if args.null_message:
        return [b""]
    if args.stdin_file:
        return [sys.stdin.buffer.read()]
    try:
        with open(args.file, "rb") as handle:
            return [handle.read()]
    except OSError as error:
        raise ClientError(f"cannot read {args.file}: {error.strerror or error}") from None


def run(args: argparse.Namespace) -> int:
    """Connect, publish every payload (waiting for acknowledgements), disconnect."""
    connection: Connection | None = None
    try:
        payloads = _payloads(args)
        connection = Connection(args, "pub")
        connection.open()
        for payload in payloads:
            connection.publish(args.topic, payload, args.qos, args.retain,
                               [tuple(pair) for pair in args.user_property or ()])
    except ClientError as error:
        print(f"relaymq pub: {error}", file=sys.stderr)
        return 1
    finally:
        if connection is not None:
            connection.close()
    return 0
