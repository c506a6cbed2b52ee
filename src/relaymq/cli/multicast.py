"""``relaymq multicast listen``: receive a topic filter's publications by multicast.

Why it exists: the receiver end of item 47 for operators and tests. It joins through the
broker's data port, receives (reliable streams repaired by NAK, unreliable ones as they come),
prints each message as it arrives (flushed, so a pipe or a test sees it at once) and reports
every loss on stderr; at the end one JSON summary line on stderr: messages, packets lost,
repairs, NAKs sent, duplicates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from relaymq.multicast.listen import JoinRefused, MulticastListener
from relaymq.multicast.receiver import Event, Loss, Message
from relaymq.pubsub.topics import TopicError, validate_topic_filter

#: Exit status after -W seconds without finishing (as ``relaymq sub``).
EXIT_TIMED_OUT = 27

_EPILOG = """\
examples:
  relaymq multicast listen -t 'prices/#' -v
  relaymq multicast listen --host broker.example -t prices/IBM --json -C 1000 -W 60

-C counts messages delivered and packets reported lost (a lost packet held one message, or a
fragment of one). Exit status: 0, 1 the broker refused the subscription or did not answer,
27 -W passed first."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("multicast", help="receive topics the broker multicasts (item 47)",
                                   description=__doc__, epilog=_EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(title="commands", dest="multicast_command", metavar="COMMAND")
    listen = commands.add_parser("listen", help="join a topic filter's multicast and print what arrives",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    listen.add_argument("-t", "--topic", required=True, help="topic filter")
    listen.add_argument("--host", default="127.0.0.1", help="the broker (default 127.0.0.1)")
    listen.add_argument("-p", "--port", type=int, default=34343, help="its multicast data port (default 34343)")
    listen.add_argument("--interface", default="", help="the local address to receive on (default: any)")
    listen.add_argument("-v", "--verbose", action="store_true", help='print "topic payload"')
    listen.add_argument("--json", action="store_true", help="one JSON object a message: topic, payload, stream, seq")
    listen.add_argument("-C", "--count", type=int, metavar="N", help="exit after N messages delivered or lost")
    listen.add_argument("-W", "--timeout", type=float, metavar="SECONDS", help="exit after this long")
    listen.set_defaults(func=run)
    parser.set_defaults(func=lambda _args: parser.print_help(sys.stderr) or 2)


def run(args: argparse.Namespace) -> int:
    try:
        validate_topic_filter(args.topic)
    except TopicError as error:
        print(f"relaymq multicast listen: -t: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_listen(args))
    except (JoinRefused, TimeoutError, OSError) as error:
        print(f"relaymq multicast listen: {error}", file=sys.stderr)
        return 1


def _print_event(args: argparse.Namespace, event: Event) -> None:
    if isinstance(event, Loss):
        print(json.dumps({"lost": {"stream": event.stream, "ranges": [list(r) for r in event.ranges]}}),
              file=sys.stderr, flush=True)
        return
    assert isinstance(event, Message)
    text = event.payload.decode(errors="replace")
    if args.json:
        line = json.dumps({"topic": event.topic, "payload": text, "stream": event.stream, "seq": event.seq})
    else:
        line = f"{event.topic} {text}" if args.verbose else text
    print(line, flush=True)


async def _listen(args: argparse.Namespace) -> int:
    listener = MulticastListener(args.host, args.port, args.topic, lambda event: _print_event(args, event),
                                 args.interface)
    started = time.monotonic()
    try:
        accept = await listener.join()
        print(json.dumps({"joined": args.topic, "mode": ["multicast", "unicast"][accept.mode],
                          "streams": [{"stream": s.stream, "group": s.group, "port": s.port,
                                       "reliable": bool(s.flags & 1)} for s in accept.streams]}),
              file=sys.stderr, flush=True)
        receiver = listener.receiver
        assert receiver is not None
        timed_out = False

        def done() -> bool:
            nonlocal timed_out
            stats = receiver.stats
            if args.count is not None and stats.messages + stats.lost_packets >= args.count:
                return True
            if args.timeout is not None and time.monotonic() - started > args.timeout:
                timed_out = True
                return True
            return False

        await listener.run(done)
        stats = receiver.stats
        print(json.dumps({"summary": {"messages": stats.messages, "lost_packets": stats.lost_packets,
                                      "lost_messages": stats.lost_messages, "repaired": stats.repaired,
                                      "naks": stats.naks, "duplicates": stats.duplicates,
                                      "heartbeats": stats.heartbeats, "missing": receiver.pending(),
                                      "suspect": receiver.suspect(time.monotonic())}}),
              file=sys.stderr, flush=True)
        return EXIT_TIMED_OUT if timed_out else 0
    finally:
        listener.close()
