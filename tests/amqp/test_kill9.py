"""Kill -9 relaymq in the middle of an at-least-once AMQP stream: every message the broker
settled as accepted is on the queue after the restart (nothing settled is lost).

The sender is python-qpid-proton's event-driven Container (MessagingHandler), in a thread,
sending as fast as its credit allows; the broker is SIGKILLed once a few hundred transfers
were accepted; after the restart a BlockingConnection drains the queue.

Spec: issue 20 ("at-least-once with the disposition after the durable commit"; "kill -9
relaymq in the middle of an at-least-once AMQP stream: nothing settled is lost").
"""

from __future__ import annotations

import threading

import pytest
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container
from proton.utils import BlockingConnection

from .broker import amqp_broker, url

pytestmark = pytest.mark.slow
WAIT = 30.0
KILL_AFTER = 300


class StreamSender(MessagingHandler):  # type: ignore[misc]
    def __init__(self, address: str) -> None:
        super().__init__(auto_settle=True)
        self.address = address
        self.sent = 0
        self.accepted: set[str] = set()
        self.lock = threading.Lock()
        self.enough = threading.Event()
        self.container: Container | None = None

    def on_start(self, event) -> None:  # noqa: ANN001
        self.container = event.container
        conn = event.container.connect(self.address.rsplit("/", 1)[0], reconnect=False)
        event.container.create_sender(conn, "queue://ORDERS")

    def on_sendable(self, event) -> None:  # noqa: ANN001
        while event.sender.credit > 0 and self.sent < 100_000:
            body = f"m{self.sent}"
            event.sender.send(Message(body=body, durable=True), tag=body)
            self.sent += 1

    def on_accepted(self, event) -> None:  # noqa: ANN001
        with self.lock:
            self.accepted.add(event.delivery.tag)
            if len(self.accepted) >= KILL_AFTER:
                self.enough.set()

    def on_transport_error(self, event) -> None:  # noqa: ANN001
        event.container.stop()

    def on_disconnected(self, event) -> None:  # noqa: ANN001
        event.container.stop()


def test_nothing_settled_is_lost_after_kill_9() -> None:
    with amqp_broker() as (broker, port):
        handler = StreamSender(url(port) + "/queue://ORDERS")
        thread = threading.Thread(target=Container(handler).run, daemon=True)
        thread.start()
        assert handler.enough.wait(WAIT), f"only {len(handler.accepted)} accepted in {WAIT}s"
        broker.kill()
        thread.join(WAIT)
        with handler.lock:
            settled = set(handler.accepted)
        assert len(settled) >= KILL_AFTER
        broker.start()
        conn = BlockingConnection(url(port), timeout=WAIT)
        try:
            receiver = conn.create_receiver("queue://ORDERS", credit=500)
            found: set[str] = set()
            while True:
                try:
                    message = receiver.receive(timeout=3.0)
                except Exception:  # proton.Timeout: the queue is drained
                    break
                found.add(message.body)
                receiver.accept()
        finally:
            conn.close()
        lost = settled - found
        assert not lost, f"{len(lost)} of {len(settled)} accepted messages lost, e.g. {sorted(lost)[:5]}"
        assert handler.sent > len(settled) or found >= settled  # the stream was cut mid-way


def test_unsettled_delivery_comes_again_after_kill_9() -> None:
    """A message sent to an at-least-once receiver but not yet accepted when the broker is
    killed is delivered again after the restart (it was locked, not removed: issue 20
    settlement; seed 004 item 13 browseAndLock)."""
    with amqp_broker() as (broker, port):
        conn = BlockingConnection(url(port), timeout=WAIT)
        try:
            conn.create_sender("queue://REPLIES").send(Message(body="in flight", durable=True))
            receiver = conn.create_receiver("queue://REPLIES", credit=1)
            assert receiver.receive(timeout=WAIT).body == "in flight"  # received, not settled
            broker.kill()
        finally:
            conn.timeout = 1.0  # the broker is gone: do not wait for its close
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - the broker is gone
                pass
        broker.start()
        conn = BlockingConnection(url(port), timeout=WAIT)
        try:
            receiver = conn.create_receiver("queue://REPLIES")
            again = receiver.receive(timeout=WAIT)
            receiver.accept()
        finally:
            conn.close()
        assert again.body == "in flight"
