"""``relaymq sub``: subscribe and print each message's payload on its own line.

Why it exists: the counterpart of ``relaymq pub`` for operators and tests, with
mosquitto_sub's flags. Output is flushed after every message so that a pipe or a test reading
line by line sees each message as it arrives; ``-C`` and ``-W`` make it usable in scripts.
"""

from __future__ import annotations

import argparse
import sys

import paho.mqtt.client as mqtt

from relaymq.pubsub.content_filter import FILTER_PROPERTY
from relaymq.cli.client_options import CONNECTION_EPILOG, ClientError, Connection, add_client_arguments

#: Exit status after -W seconds without finishing (mosquitto_sub's MOSQ_ERR_TIMEOUT).
EXIT_TIMED_OUT = 27

_DESCRIPTION = """\
Subscribe to topic filters on an MQTT broker (relaymq or any other) and print each message's
payload on its own line (with -v: "topic payload"). Runs until interrupted, until -C messages
have arrived, or until -W seconds have passed."""

_EPILOG = f"""\
examples:
  relaymq sub -t 'sensors/#' -v
  relaymq sub -t a/b -t c/+ -q 1
  relaymq sub -t jobs/# -q 1 -c -i worker-1           # keep the session while away
  relaymq sub -t jobs/# -q 1 -c -i worker-1 -V 5 -x 3600
  relaymq sub -t status/door -C 1 -W 10               # wait up to 10 s for one message
  relaymq sub -V 5 -t 'LCUnit/#' -v -U                # with the MQTT 5 user properties
  relaymq sub -V 5 -t 'plant/+/temp' --filter "usr.colour = 'blue'"   # only blue readings

exit status 27: -W seconds passed before -C messages arrived.
{CONNECTION_EPILOG}"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sub`` sub-command."""
    parser = subparsers.add_parser(
        "sub",
        add_help=False,
        help="subscribe and print messages (like mosquitto_sub)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_client_arguments(parser)
    subscription = parser.add_argument_group("subscription")
    subscription.add_argument(
        "-t", "--topic", action="append", required=True, help="topic filter to subscribe to (repeatable)"
    )
    subscription.add_argument(
        "-c", "--disable-clean-session", dest="persistent", action="store_true",
        help="persistent session: the broker keeps subscriptions and QoS 1/2 messages while "
        "this client id is away (needs -i; with -V 5 and no -x the session never expires)",
    )
    subscription.add_argument(
        "--filter", metavar="EXPR",
        help="content filter in the selector language, sent as the SUBSCRIBE user property "
        "relaymq-filter (a relaymq extension; needs -V 5), e.g. \"usr.colour = 'blue'\"",
    )
    subscription.add_argument("-C", "--count", type=int, metavar="N", help="exit after N messages")
    subscription.add_argument("-W", "--timeout", type=float, metavar="SECONDS", help="exit after SECONDS (status 27)")
    subscription.add_argument("-v", "--verbose", action="store_true", help='print "topic payload"')
    subscription.add_argument("-U", "--user-properties", action="store_true",
                              help="after the payload, print the MQTT 5 user properties, tab-separated name=value")
    parser.set_defaults(func=run)


class _Printer:
    """Writes each message to stdout, flushed, and counts down -C."""

    def __init__(self, verbose: bool, count: int | None, user_properties: bool = False) -> None:
        self.verbose = verbose
        self.remaining = count
        self.user_properties = user_properties

    @property
    def done(self) -> bool:
        """True once -C messages have been printed."""
        return self.remaining is not None and self.remaining <= 0

    def print_message(self, message: mqtt.MQTTMessage) -> bool:
        """Print one message; False (not taken, so not acknowledged) once -C is reached."""
        if self.done:
            return False  # raced the DISCONNECT after -C: leave it to the next session
        line = message.topic.encode("utf-8") + b" " + message.payload if self.verbose else message.payload
        if self.user_properties:
            pairs = (getattr(message.properties, "UserProperty", None) or []) if message.properties else []
            line += b"".join(f"\t{name}={value}".encode() for name, value in pairs)
        sys.stdout.buffer.write(line + b"\n")
        sys.stdout.buffer.flush()
        if self.remaining is not None:
            self.remaining -= 1
        return True


def run(args: argparse.Namespace) -> int:
    """Connect, subscribe, print messages until -C, -W, a lost connection or Ctrl-C."""
    if args.count is not None and args.count < 1:
        print("relaymq sub: -C needs a count >= 1", file=sys.stderr)
        return 2
    printer = _Printer(args.verbose, args.count, args.user_properties)
    connection: Connection | None = None
    try:
        connection = Connection(args, "sub", persistent=args.persistent)
        connection.on_message(printer.print_message)
        connection.open()
        reasons = connection.subscribe(args.topic, args.qos,
                                       [(FILTER_PROPERTY, args.filter)] if args.filter else None)
        refused = [(topic, reason) for topic, reason in zip(args.topic, reasons, strict=False) if reason.is_failure]
        for topic, reason in refused:
            print(f"relaymq sub: subscription to {topic!r} refused: {reason}", file=sys.stderr)
        if len(refused) == len(args.topic):
            raise ClientError("every subscription was refused")
        if not connection.wait_until(lambda: printer.done, args.timeout):
            print(f"relaymq sub: timed out after {args.timeout:g} seconds", file=sys.stderr)
            return EXIT_TIMED_OUT
    except ClientError as error:
        print(f"relaymq sub: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how an interactive subscriber ends
    finally:
        if connection is not None:
            connection.close()
    return 0
