"""Publications per second matched and delivered with 10,000 subscriptions in the tree,
wildcards and content filters mixed, MQTT sessions and queue subscribers together (issue 4
"Done when" 2). Prints figures, asserts nothing.

Everything is the real code of a broker process, without sockets: the broker core with MQTT 5
sessions (each PUBLISH encoded and written to the client's transport), a real queue manager
and the pub/sub service started as ``relaymq serve`` starts them: with ``--store sqlite`` (the
default) the broker's SQLite store and the queue manager share one storage engine, so the
copies for queue subscribers commit with the publication (``synchronous=FULL``, an fsync per
commit), as in the broker; ``--store memory`` keeps everything in memory. The queue
subscribers share the broker's subscription tree. Once the subscriptions are in place (the
queue subscriptions committed, as their commands would be once handled) the
garbage collector is set as ``relaymq serve`` sets it once started (``app.settle_heap``: what
start-up built frozen, the serving thresholds), as in a broker restarted with them. A publication counts once it has been
matched against all 10,000 subscriptions, filtered, written to every matching MQTT client and
put on every matching subscriber queue, and that put is committed.

Subscriptions: ``--mqtt-share`` of them (default 60%) in 120+ MQTT sessions of 50, the rest
queue subscriptions (psc RegSub) on 200 queues; shapes 70% literal, 15% ``+``, 10% ``#``, 5%
``+/site/#``; ``--filtered`` of each (default 20%) carry a content filter, half
``usr.level > 5`` (an untyped MQTT user property compared as a number: 4 of 10 levels pass)
and half ``Body.v > 50`` (a JSON body field: about half pass).

Four runs: MQTT publications (through the broker, its tap feeding queue subscribers), psc
Publish commands handed to the service one at a time, each awaited until durable (through the
engine, then the broker), the same commands put on the control queue in runs of 64 and taken
off it by the service's own drain (``psc-queue``: a run of commands shares a commit), and MQTT
with no filters.

    .venv/bin/python bench/bench_pubsub.py [--subscriptions N] [--filtered 0.2] [--seconds S]
                                           [--mqtt-share 0.6] [--store sqlite|memory]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import tempfile
import time

from relaymq.broker.broker import Broker
from relaymq.clock import Clock
from relaymq.broker.connection import Connection
from relaymq.config import default_config
from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.pubsub import psc
from relaymq.pubsub import service as pubsub_service
from relaymq.pubsub.engine import CONTROL_QUEUE
from relaymq.pubsub.settings import build
from relaymq.qmgr import QueueManager
from relaymq.qmgr.aio import AsyncQueueManager
from relaymq.server.app import settle_heap
from relaymq.services.contract import ServiceContext
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore

SITES = 50
DEVICES = 5000
QUEUES = 200
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

    def abort(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def topic_filter(n: int, rng: random.Random) -> str:
    site, device = f"site{n % SITES}", f"dev{n % DEVICES}"
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
        device = rng.randrange(DEVICES)
        value = rng.randrange(100)
        out.append((f"plant/site{device % SITES}/dev{device}/temperature", json.dumps({"v": value}).encode(),
                    [("level", str(value % 10))]))
    return out


class Setup:
    """Broker + queue manager + pub/sub service with the subscriptions in place."""

    def __init__(self, args: argparse.Namespace, filtered: float) -> None:
        self.args = args
        self.filtered = filtered
        self.rng = random.Random(1)
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-pubsub-")

    async def start(self) -> Setup:
        base = default_config()
        store_kind = self.args.store
        config = dataclasses.replace(base, broker=dataclasses.replace(base.broker, data_dir=self.tmp.name, store=store_kind),
                                     extra={"pubsub": build({"events": False}, "pubsub", self.tmp.name)})
        if store_kind == "sqlite":
            self.store = SQLiteStore(f"{self.tmp.name}/relaymq.db", asyncio.get_running_loop().call_soon_threadsafe)
            self.qm = QueueManager.open("QM1", self.tmp.name, engine=self.store.engine)
        else:
            self.store = MemoryStore()
            self.qm = QueueManager.open("QM1", None)
        self.broker = Broker(config, self.store, Clock())
        for q in range(QUEUES):
            self.qm.define_queue(f"SUBS.{q}")
        self.service = await pubsub_service.start(
            ServiceContext(config, self.broker, {"qmgr": self.qm, "qmgr.aio": AsyncQueueManager(self.qm)}))
        total = self.args.subscriptions
        mqtt_count = int(total * self.args.mqtt_share)
        self.links = []
        per_client = 50
        for c in range((mqtt_count + per_client - 1) // per_client):
            link = NullLink()
            conn = Connection(self.broker, link, peer="bench")
            conn.data_received(encode(p.Connect("MQTT", 5, True, 0, f"c{c}", None, None, None, {}), 5))
            for i in range(min(per_client, mqtt_count - c * per_client)):
                n = c * per_client + i
                props = {"user_property": [("relaymq-filter", FILTERS[n % 2])]} if self.rng.random() < self.filtered else {}
                conn.data_received(encode(p.Subscribe(i + 1, [p.Subscription(topic_filter(n, self.rng), 0)], props), 5))
            self.links.append(link)
        engine = self.service.engine
        for n in range(mqtt_count, total):
            params = {"Filter": FILTERS[n % 2]} if self.rng.random() < self.filtered else {}
            message = psc.command_message("RegSub", Topic=topic_filter(n, self.rng), QName=f"SUBS.{(n // 20) % QUEUES}",
                                          RegOpt="NewPubsOnly", **params)
            engine.handle_message(message, CONTROL_QUEUE, 0.0)
        # the registrations made durable before the clock starts, as their commands are once
        # handled (else the first publication's unit of work wrote all of them: about 0.3 s)
        self.service.submit([])
        await self.service.durable()
        self.mqtt_subscriptions = sum(len(s.subscriptions) for s in self.broker.sessions.values())
        self.queue_subscriptions = len(engine.subscriptions)
        settle_heap()  # as serve does once started (a broker restarted with these subscriptions)
        return self

    def depth(self) -> int:
        return sum(self.qm.depth(f"SUBS.{q}") for q in range(QUEUES))

    async def drained(self) -> None:
        """Every put made so far is committed (the copies are made at once, in the routing)."""
        await self.service.durable()

    async def stop(self) -> None:
        await self.service.stop()
        self.qm.close()
        self.store.close()
        self.tmp.cleanup()


async def run(args: argparse.Namespace, kind: str, filtered: float) -> None:
    setup = await Setup(args, filtered).start()
    pubs = publications(4096, random.Random(2))
    rng = random.Random(3)
    written_before = sum(link.bytes for link in setup.links)
    sent_before = setup.broker.stats.messages_sent
    depth_before = setup.depth()
    done = 0
    start = time.perf_counter()
    deadline = start + args.seconds
    while time.perf_counter() < deadline:
        for topic, payload, usr in (pubs[rng.randrange(len(pubs))] for _ in range(64)):
            if kind == "psc":
                command = psc.command_message("Publish", msg_type=8, Topic=topic, body=payload, usr=dict(usr))
                await setup.service.handle(command, psc.DEFAULT_STREAM)
            elif kind == "psc-queue":
                command = psc.command_message("Publish", msg_type=8, Topic=topic, body=payload, usr=dict(usr))
                setup.qm.put(psc.DEFAULT_STREAM, command, wait=False)  # an application's puts, not awaited
            else:
                setup.broker.publish(topic, payload, 0, False, {"user_property": usr})
        done += 64
        while kind == "psc-queue" and setup.qm.depth(psc.DEFAULT_STREAM):
            await asyncio.sleep(0.001)  # the service drains the stream queue meanwhile (a busy
            # wait would hold the GIL that the store's writer thread needs)
        await setup.drained()
    elapsed = time.perf_counter() - start
    mqtt = setup.broker.stats.messages_sent - sent_before
    queued = setup.depth() - depth_before
    print(f"{kind:9} {args.subscriptions:,} subscriptions ({setup.mqtt_subscriptions:,} MQTT, "
          f"{setup.queue_subscriptions:,} queue; {filtered:.0%} filtered; store {args.store}): "
          f"{done / elapsed:,.0f} publications/s matched and delivered; "
          f"{(mqtt + queued) / elapsed:,.0f} deliveries/s ({mqtt / elapsed:,.0f} MQTT, {queued / elapsed:,.0f} into queues; "
          f"{(mqtt + queued) / done:.1f} per publication), "
          f"{(sum(link.bytes for link in setup.links) - written_before) / elapsed / 1e6:,.1f} MB/s written to clients")
    await setup.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--filtered", type=float, default=0.2, help="share of subscriptions with a content filter")
    parser.add_argument("--mqtt-share", type=float, default=0.6, help="share of subscriptions held by MQTT sessions")
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite",
                        help="the broker's store, shared by the queue manager (default sqlite, FULL)")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(run(args, "mqtt", args.filtered))
    asyncio.run(run(args, "psc", args.filtered))
    asyncio.run(run(args, "psc-queue", args.filtered))
    asyncio.run(run(args, "mqtt", 0.0))


if __name__ == "__main__":
    main()
