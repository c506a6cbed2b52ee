"""``relaymq sub``: subscribe and print each message's payload on its own line.

Why it exists: the counterpart of ``relaymq pub`` for operators and tests, with
mosquitto_sub's flags. Output is flushed after every message so that a pipe or a test reading
line by line sees each message as it arrives; ``-C`` and ``-W`` make it usable in scripts.
"""

from __future__ import annotations

import argparse
import sys

import paho.mqtt.client as mqtt

from relaymq.cli import sub_format
from relaymq.cli.client_options import (CONNECTION_EPILOG, ClientError, Connection, add_client_arguments, report,
                                        resolve_target)
from relaymq.pubsub.content_filter import FILTER_PROPERTY
from relaymq.pubsub.topics import TopicError, topic_matches, validate_topic_filter

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
  relaymq sub -t 'sensors/#' -F '%I %t %p' -T 'sensors/debug/#'      # formatted, one branch left out
  relaymq sub -t 'sensors/#' --retained-only -v       # what is retained now, then exit
  relaymq sub -L mqtt://alice:secret@broker.example/sensors/%23 -R   # new messages only

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
        "-t", "--topic", action="append", help="topic filter to subscribe to (repeatable; or in -L's URL)"
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
    subscription.add_argument("-T", "--filter-out", action="append", metavar="FILTER",
                              help="do not print messages whose topic matches FILTER (repeatable)")
    subscription.add_argument("-R", "--no-stale", action="store_true",
                              help="do not print stale messages (those with the retained flag)")
    subscription.add_argument("--retained-only", action="store_true",
                              help="print only retained messages; exit at the first that is not")
    subscription.add_argument("-E", "--exit-after-subscribe", action="store_true",
                              help="exit once the subscriptions are acknowledged (e.g. to set up a -c session)")
    output = parser.add_argument_group("output")
    output.add_argument("-F", "--format", metavar="FORMAT",
                        help="mosquitto_sub's output format: %%t topic, %%p payload, %%q QoS, %%r retained, "
                        "%%l length, %%x hex, %%I ISO time, %%U Unix time, %%P user properties, @H strftime, "
                        "\\n ... (overrides -v)")
    output.add_argument("-N", "--no-newline", action="store_true", help="do not add an end of line after each message")
    parser.set_defaults(func=run)


class _Printer:
    """Writes each message to stdout, flushed, and counts down -C; leaves out what -T, -R and
    --retained-only say, and ends at the first fresh message with --retained-only."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.verbose = args.verbose
        self.remaining = args.count
        self.user_properties = args.user_properties
        self.format: str | None = args.format
        self.end = b"" if args.no_newline else b"\n"
        self.filter_out: list[str] = args.filter_out or []
        self.no_stale = args.no_stale
        self.retained_only = args.retained_only
        self.fresh_seen = False  # --retained-only: a message without the retained flag came

    @property
    def done(self) -> bool:
        """True once -C messages have been printed (or --retained-only met a fresh one)."""
        return self.fresh_seen or (self.remaining is not None and self.remaining <= 0)

    def _line(self, message: mqtt.MQTTMessage) -> bytes:
        if self.format is not None:
            return sub_format.render(self.format, message)
        line = message.topic.encode("utf-8") + b" " + message.payload if self.verbose else bytes(message.payload)
        if self.user_properties:
            pairs = (getattr(message.properties, "UserProperty", None) or []) if message.properties else []
            line += b"".join(f"\t{name}={value}".encode() for name, value in pairs)
        return line

    def print_message(self, message: mqtt.MQTTMessage) -> bool:
        """Print one message; False (not taken, so not acknowledged) once done."""
        if self.done:
            return False  # raced the DISCONNECT after -C: leave it to the next session
        if self.retained_only and not message.retain:
            self.fresh_seen = True
            return False
        if (self.no_stale and message.retain) or any(topic_matches(f, message.topic) for f in self.filter_out):
            return True  # taken (acknowledged), not printed, not counted
        sys.stdout.buffer.write(self._line(message) + self.end)
        sys.stdout.buffer.flush()
        if self.remaining is not None:
            self.remaining -= 1
        return True


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags together (exit 2), or None."""
    if args.count is not None and args.count < 1:
        return "-C needs a count >= 1"
    for topic_filter in args.filter_out or ():
        try:
            validate_topic_filter(topic_filter)
        except TopicError as error:
            return f"-T {topic_filter!r}: {error.reason}"
    if args.format is not None:
        try:
            sub_format.check(args.format)
        except sub_format.FormatError as error:
            return str(error)
    return None


def run(args: argparse.Namespace) -> int:
    """Connect, subscribe, print messages until -C, -W, a lost connection or Ctrl-C."""
    problem = _usage_problem(args)
    if problem is not None:
        report(args, "sub", problem)
        return 2
    printer = _Printer(args)
    connection: Connection | None = None
    try:
        properties = resolve_target(args, "sub")
        connection = Connection(args, "sub", persistent=args.persistent, properties=properties)
        connection.on_message(printer.print_message)
        connection.open()
        reasons = connection.subscribe(args.topic, args.qos,
                                       [(FILTER_PROPERTY, args.filter)] if args.filter else None)
        refused = [(topic, reason) for topic, reason in zip(args.topic, reasons, strict=False) if reason.is_failure]
        why = f" ({connection.suback_reason})" if connection.suback_reason else ""  # MQTT 5 Reason String
        for topic, reason in refused:
            report(args, "sub", f"subscription to {topic!r} refused: {reason}{why}")
        if len(refused) == len(args.topic):
            raise ClientError("every subscription was refused")
        if args.exit_after_subscribe:
            return 0
        if not connection.wait_until(lambda: printer.done, args.timeout):
            report(args, "sub", f"timed out after {args.timeout:g} seconds")
            return EXIT_TIMED_OUT
    except ClientError as error:
        report(args, "sub", str(error))
        return 1
    except KeyboardInterrupt:
        return 0  # Ctrl-C is how an interactive subscriber ends
    finally:
        if connection is not None:
            connection.close()
    return 0
