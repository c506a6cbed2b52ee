"""Publications per second matched and delivered with 10,000 subscriptions in the tree,
wildcards and content filters mixed (issue 4 "Done when" 2). Prints figures, asserts nothing.

Two runs, both through the real code and without sockets:

* ``mqtt``: the broker core (routing -> delivery -> encoded PUBLISH bytes on each client's
  transport) with 200 MQTT 5 clients holding 50 subscriptions each: 70% literal, 15% ``+``,
  10% ``#`` filters; a share of them carry a ``relaymq-filter`` on a user property or a JSON
  body field.
* ``psc``: the pub/sub engine with 10,000 queue subscriptions of the same shapes: matching,
  filters and the MQ-format publication each subscriber gets (the queue manager's put is
  not included: that is the queue manager's benchmark).

    .venv/bin/python bench/bench_pubsub.py [--subscriptions N] [--filtered 0.2] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from relaymq.broker.broker import Broker
from relaymq.broker.clock import Clock
from relaymq.broker.connection import Connection
from relaymq.config import default_config
from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.pubsub import psc
from relaymq.pubsub.engine import CONTROL_QUEUE, PubSubEngine
from relaymq.pubsub.model import Publication
from relaymq.store.memory import MemoryStore

SITES = 50
FILTERS = ("usr.level > 5", "Body.v > 50")


class NullLink:
    """Stands where the socket stands; counts bytes written."""

    def __init__(self) -> None:
        self.bytes = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        self.bytes += len(data)

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0


def topic_filter(n: int, rng: random.Random) -> str:
    site, device = f"site{n % SITES}", f"dev{n % 5000}"
    shape = rng.random()
    if shape < 0.70:
        return f"plant/{site}/{device}/temperature"
    if shape < 0.85:
        return f"plant/{site}/+/temperature"
    if shape < 0.95:
        return f"plant/{site}/{device}/#"
    return f"+/{site}/#"


def publications(count: int, rng: random.Random) -> list[tuple[str, bytes, list[tuple[str, str]]]]:
    out = []
    for _ in range(count):
        device = rng.randrange(5000)
        value = rng.randrange(100)
        out.append((f"plant/site{device % SITES}/dev{device}/temperature", json.dumps({"v": value}).encode(),
                    [("level", str(value % 10))]))
    return out


def bench_mqtt(subscriptions: int, filtered: float, seconds: float, rng: random.Random) -> None:
    config = default_config()
    broker = Broker(config, MemoryStore(), Clock())
    links = []
    per_client = 50
    for c in range((subscriptions + per_client - 1) // per_client):
        link = NullLink()
        conn = Connection(broker, link, peer="bench")
        conn.data_received(encode(p.Connect("MQTT", 5, True, 0, f"c{c}", None, None, None, {}), 5))
        for i in range(per_client):
            n = c * per_client + i
            props = {"user_property": [("relaymq-filter", FILTERS[n % 2])]} if rng.random() < filtered else {}
            conn.data_received(encode(p.Subscribe(i + 1, [p.Subscription(topic_filter(n, rng), 0)], props), 5))
        links.append(link)
    pubs = publications(4096, rng)
    start_bytes = sum(link.bytes for link in links)
    sent_before = broker.stats.messages_sent
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for topic, payload, usr in pubs[:256]:
            broker.publish(topic, payload, 0, False, {"user_property": usr})
        done += 256
        pubs = pubs[256:] + pubs[:256]
    elapsed = time.perf_counter() - start
    delivered = broker.stats.messages_sent - sent_before
    print(f"mqtt: {len(broker.subscriptions):,} subscriptions ({filtered:.0%} filtered), "
          f"{done / elapsed:,.0f} publications/s matched and delivered, "
          f"{delivered / elapsed:,.0f} deliveries/s, "
          f"{(sum(link.bytes for link in links) - start_bytes) / elapsed / 1e6:,.1f} MB/s written")


def bench_psc(subscriptions: int, filtered: float, seconds: float, rng: random.Random) -> None:
    engine = PubSubEngine("QM1", events=False)
    for n in range(subscriptions):
        params = {"Filter": FILTERS[n % 2]} if rng.random() < filtered else {}
        message = psc.command_message("RegSub", reply_to=f"Q{n}", Topic=topic_filter(n, rng),
                                      RegOpt="NewPubsOnly", **params)
        engine.handle_message(message, CONTROL_QUEUE, 0.0)
    pubs = publications(4096, rng)
    done = delivered = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for topic, payload, usr in pubs[:256]:
            delivered += len(engine.publish(Publication(topic, payload, usr=usr, body_format="MQSTR"), 1.0))
        done += 256
        pubs = pubs[256:] + pubs[:256]
    elapsed = time.perf_counter() - start
    print(f"psc:  {len(engine.subscriptions):,} queue subscriptions ({filtered:.0%} filtered), "
          f"{done / elapsed:,.0f} publications/s matched, {delivered / elapsed:,.0f} MQ messages built/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--filtered", type=float, default=0.2, help="share of subscriptions with a content filter")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    bench_mqtt(args.subscriptions, args.filtered, args.seconds, random.Random(1))
    bench_mqtt(args.subscriptions, 0.0, args.seconds, random.Random(1))
    bench_psc(args.subscriptions, args.filtered, args.seconds, random.Random(1))


if __name__ == "__main__":
    main()
