"""AMQP 1.0 throughput of relaymq's listener (issue 20), 64-byte payloads:

1. at-least-once to a durable queue: one sender, unsettled transfers (durable), as fast as its
   credit allows; the rate counts messages the broker *accepted* (each after its put was
   committed, group commit), then one at-least-once receiver drains the queue (locked, accepted,
   deleted);
2. at-most-once to a topic: one pre-settled sender, one pre-settled subscriber; the rate counts
   messages the subscriber received.

    .venv/bin/python bench/bench_amqp.py [--messages N]

Clients are python-qpid-proton's event-driven Container (its C engine), each in a thread
of this process (so the figures include the generator's share of one GIL). For MQTT on the same machine run bench/bench_throughput.py (QoS 0 and QoS 1 through
the broker) and bench/compare. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import AtMostOnce, Container

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import BrokerProcess, free_port  # noqa: E402

PAYLOAD = "x" * 64


class Sender(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, count: int, settled: bool) -> None:
        super().__init__()
        self.url, self.address, self.count, self.settled = url, address, count, settled
        self.sent = self.confirmed = 0
        self.start = self.end = 0.0

    def on_start(self, event) -> None:  # noqa: ANN001
        conn = event.container.connect(self.url)
        options = AtMostOnce() if self.settled else None
        event.container.create_sender(conn, self.address, options=options)
        self.start = time.perf_counter()

    def on_sendable(self, event) -> None:  # noqa: ANN001
        while event.sender.credit and self.sent < self.count:
            event.sender.send(Message(body=PAYLOAD, durable=not self.settled))
            self.sent += 1
        if self.settled and self.sent >= self.count:
            self.end = time.perf_counter()
            event.connection.close()

    def on_accepted(self, event) -> None:  # noqa: ANN001
        self.confirmed += 1
        if self.confirmed >= self.count:
            self.end = time.perf_counter()
            event.connection.close()


class Receiver(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, count: int, settled: bool, ready: object, idle: float) -> None:
        super().__init__(prefetch=500)
        self.url, self.address, self.count, self.settled, self.ready, self.idle = url, address, count, settled, ready, idle
        self.received = 0
        self.first = self.last = 0.0

    def on_start(self, event) -> None:  # noqa: ANN001
        conn = event.container.connect(self.url)
        event.container.create_receiver(conn, self.address, options=AtMostOnce() if self.settled else None)
        event.container.schedule(self.idle, self)

    def on_link_opened(self, event) -> None:  # noqa: ANN001
        self.ready.set()  # type: ignore[attr-defined]

    def on_message(self, event) -> None:  # noqa: ANN001
        if not self.received:
            self.first = time.perf_counter()
        self.received += 1
        self.last = time.perf_counter()
        if self.received >= self.count:
            event.connection.close()

    def on_timer_task(self, event) -> None:  # noqa: ANN001
        if self.received and time.perf_counter() - self.last > self.idle:
            event.container.stop()  # an at-most-once stream that lost some: stop when it went quiet
        else:
            event.container.schedule(self.idle, self)


def run(handler: MessagingHandler) -> threading.Thread:
    thread = threading.Thread(target=Container(handler).run, daemon=True)
    thread.start()
    return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20000)
    args = parser.parse_args()
    n = args.messages
    port = free_port()
    broker = BrokerProcess("relaymq", config={
        "amqp": {"enabled": True, "host": "127.0.0.1", "port": port, "allow_anonymous": True},
        "qmgr": {"name": "QM1", "queue": [{"name": "BENCH"}]}})
    broker.start()
    url = f"amqp://127.0.0.1:{port}"
    try:
        sender = Sender(url, "queue://BENCH", n, False)
        run(sender).join()
        seconds = sender.end - sender.start
        print(f"1. at-least-once to a durable queue: {sender.confirmed} accepted in {seconds:.2f}s = "
              f"{sender.confirmed / seconds:,.0f} msg/s", flush=True)
        receiver = Receiver(url, "queue://BENCH", n, False, threading.Event(), 3.0)
        run(receiver).join()
        seconds = receiver.last - receiver.first
        print(f"   at-least-once receiver draining it: {receiver.received} in {seconds:.2f}s = "
              f"{receiver.received / seconds:,.0f} msg/s", flush=True)
        ready = threading.Event()
        receiver = Receiver(url, "topic://bench/t", n, True, ready, 3.0)
        listening = run(receiver)
        ready.wait(30)
        sender = Sender(url, "topic://bench/t", n, True)
        run(sender).join()
        listening.join()
        seconds = receiver.last - receiver.first
        print(f"2. at-most-once to a topic: {receiver.received} of {n} received in {seconds:.2f}s = "
              f"{receiver.received / seconds:,.0f} msg/s", flush=True)
    finally:
        broker.stop()
        broker.cleanup()


if __name__ == "__main__":
    main()
