"""``relaymq bench``: an MQTT load generator for any broker (issue 8).

Why a command of its own: throughput claims must be checkable by anyone against any broker
with one tool that is not itself the bottleneck (raw asyncio clients in several processes,
see relaymq.bench). It prints a summary (or JSON) with messages per second, latency
percentiles from timestamps carried in the payloads, and exact losses and duplicates.
"""

from __future__ import annotations

import argparse
import json
import sys

from relaymq.bench import BenchError, BenchSpec, run as run_bench
from relaymq.bench.client import DEFAULT_READ_PAUSE, SMALL_READ

_EPILOG = """\
examples:
  relaymq bench -p 1883                                # 1 -> 1, QoS 0, 10,000 messages
  relaymq bench -q 1 --inflight 100 -n 100000          # QoS 1, window of 100 per publisher
  relaymq bench --subscribers 100 -n 1000              # fan-out 1 -> 100
  relaymq bench --publishers 100 -q 1 -n 1000          # fan-in 100 -> 1
  relaymq bench -V 5 -q 2 --duration 10 --rate 5000    # MQTT 5, QoS 2, paced, 10 seconds
  relaymq bench -q 1 --persistent sub -i load          # QoS 1 queued for a persistent session
  relaymq bench --json - > result.json                 # machine-readable figures

Counts are per publisher; every subscriber subscribes to all the publishers' topics, so each
expects publishers x count messages. Latency is measured from the send time stamped in each
payload (its first 16 bytes) to the arrival of the chunk that carried it.

Persistent sessions (--persistent) start new: a session an earlier run left under the same
client id is discarded first, and each is removed again at the end of the run. With a
persistent subscriber a broker queues QoS 1/2 messages for a session that outlives the
connection, which is where a broker that stores sessions writes them to disk.

exit status: 0 success (losses are reported, not failures), 1 the run failed (one line on
stderr), 2 usage error."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` command."""
    parser = subparsers.add_parser(
        "bench",
        help="MQTT load generator: throughput, latency and losses against any broker",
        description="Publish and subscribe under load against an MQTT broker and report "
                    "messages per second, latency percentiles and losses.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-H", "--host", default="127.0.0.1", help="broker host (default 127.0.0.1)")
    parser.add_argument("-p", "--port", type=int, default=1883, help="broker port (default 1883)")
    parser.add_argument("--publishers", "--pub", type=int, default=1, metavar="N",
                        help="publishing connections (default 1)")
    parser.add_argument("--subscribers", "--sub", type=int, default=1, metavar="N",
                        help="subscribing connections (default 1)")
    parser.add_argument("-q", "--qos", type=int, default=0, choices=(0, 1, 2),
                        help="QoS of the publications (default 0)")
    parser.add_argument("--sub-qos", type=int, choices=(0, 1, 2),
                        help="QoS of the subscriptions (default: same as --qos)")
    parser.add_argument("-V", "--protocol", type=int, default=4, choices=(4, 5),
                        help="MQTT protocol level: 4 = 3.1.1, 5 = 5.0 (default 4)")
    parser.add_argument("-s", "--size", type=int, default=64, metavar="BYTES",
                        help="payload size, at least 16 (default 64)")
    parser.add_argument("--inflight", type=int, default=100, metavar="N",
                        help="QoS 1/2 messages in flight per publisher (default 100)")
    parser.add_argument("--rate", type=float, default=0.0, metavar="MSG/S",
                        help="total publish rate over all publishers (default: as fast as possible)")
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("-n", "--count", type=int, metavar="N",
                        help="messages per publisher (default 10000)")
    amount.add_argument("-d", "--duration", type=float, metavar="SECONDS",
                        help="publish for this long instead of a count")
    parser.add_argument("-t", "--topic", default="", help="topic prefix (default bench/<random>)")
    parser.add_argument("--topics", type=int, default=1, metavar="N",
                        help="publishers cycle over TOPIC/0..N-1 (default 1)")
    parser.add_argument("-r", "--retain", action="store_true", help="publish retained")
    parser.add_argument("-P", "--processes", type=int, default=0, metavar="N",
                        help="worker processes (default: one per core)")
    parser.add_argument("--drain-timeout", type=float, default=5.0, metavar="SECONDS",
                        help="stop waiting for deliveries after this long without one (default 5)")
    parser.add_argument("--read-pause", type=float, default=DEFAULT_READ_PAUSE * 1000,
                        metavar="MS",
                        help=f"QoS 0 subscribers: after a read of less than {SMALL_READ // 1024} "
                             "KiB, wait this long before the next, so one read takes what arrived meanwhile "
                             "(less generator CPU against brokers that write each packet on "
                             "its own; adds up to MS to QoS 0 latencies). 0: read as data "
                             "arrives, for latency runs (default %(default)g)")
    parser.add_argument("--persistent", choices=("sub", "pub", "all"), default="",
                        help="persistent sessions for the subscribers, the publishers or all "
                             "(3.1.1: clean session 0; 5.0: session expiry), so QoS 1/2 "
                             "messages go through the broker's durable path (default: none)")
    parser.add_argument("--session-expiry", type=int, metavar="SECONDS",
                        help="MQTT 5 session expiry of persistent sessions (default 3600)")
    parser.add_argument("-i", "--client-prefix", default="", metavar="PREFIX",
                        help="fixed client ids PREFIX-s0.., PREFIX-p0.. (default bench-<random>)")
    parser.add_argument("-u", "--username")
    parser.add_argument("--password")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON ('-': stdout)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress line on stderr (default: only on a terminal)")
    parser.set_defaults(func=run)


def spec_from_args(args: argparse.Namespace) -> BenchSpec:
    """The load described by the command line."""
    count = args.count if args.count is not None else (None if args.duration else 10_000)
    return BenchSpec(
        host=args.host, port=args.port, publishers=args.publishers, subscribers=args.subscribers,
        qos=args.qos, sub_qos=args.sub_qos, protocol=args.protocol, payload_size=args.size,
        inflight=args.inflight, rate=args.rate, count=count, duration=args.duration,
        topic=args.topic, topics=args.topics, retain=args.retain, processes=args.processes,
        drain_timeout=args.drain_timeout, read_pause=args.read_pause / 1000,
        client_prefix=args.client_prefix,
        persistent=args.persistent, session_expiry=args.session_expiry,
        username=args.username, password=args.password,
    )


def run(args: argparse.Namespace) -> int:
    try:
        spec = spec_from_args(args).resolved()
    except ValueError as error:
        print(f"relaymq bench: error: {error}", file=sys.stderr)
        return 2
    try:
        report = run_bench(spec, progress=args.progress)
    except (BenchError, OSError) as error:
        print(f"relaymq bench: error: {error}", file=sys.stderr)
        return 1
    if args.json:
        text = json.dumps(report.to_dict(), indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(text)
    if args.json != "-":
        print(report.summary())
    return 0
