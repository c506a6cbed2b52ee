"""An in-process broker stack for the pub/sub service tests: the real sans-I/O broker core
with MQTT test clients, a real (in-memory) queue manager, and the real pub/sub service started
as the broker process starts it (``relaymq.pubsub.service.start``)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from relaymq.broker.broker import Broker
from relaymq.message.message import Message
from relaymq.pubsub import psc
from relaymq.pubsub import service as pubsub_service
from relaymq.pubsub.settings import build
from relaymq.qmgr import QueueManager
from relaymq.qmgr.aio import AsyncQueueManager
from relaymq.services.contract import ServiceContext
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore

from broker.driver import TestClient, make_config

CONTROL = "SYSTEM.BROKER.CONTROL.QUEUE"
STREAM = psc.DEFAULT_STREAM


class Stack:
    def __init__(self, data_dir: Path, pubsub: dict | None = None, *, store: str = "memory",
                 qm: QueueManager | None = None, broker_store: MemoryStore | None = None) -> None:
        """``store`` is the broker's store setting: ``sqlite`` gives the broker a real SQLite
        store in ``data_dir`` with the queue manager and the pub/sub state on its engine (as
        ``relaymq serve`` has them), so a new Stack on the same directory is a restart;
        ``broker_store``, the previous stack's memory store, restores its retained messages and
        sessions as a restarted broker would."""
        base = make_config()
        self.config = dataclasses.replace(
            base, broker=dataclasses.replace(base.broker, data_dir=str(data_dir), store=store),
            extra={"pubsub": build(pubsub, "pubsub", str(data_dir))})
        self.store: SQLiteStore | None = None
        if store == "sqlite":
            self.store = SQLiteStore(str(Path(data_dir) / "relaymq.db"), asyncio.get_running_loop().call_soon_threadsafe)
            self.broker = Broker(self.config, self.store)
            self.broker.restore(self.store.load())
            self.qm = qm or QueueManager.open("QM1", str(data_dir), engine=self.store.engine)
        else:
            self.broker = Broker(self.config, broker_store or MemoryStore())
            if broker_store is not None:
                self.broker.restore(broker_store.load())
            self.qm = qm or QueueManager.open("QM1", None)
        self.aio = AsyncQueueManager(self.qm)
        self.service: pubsub_service.PubSubService | None = None

    async def start(self) -> Stack:
        context = ServiceContext(self.config, self.broker, {"qmgr": self.qm, "qmgr.aio": self.aio})
        self.service = await pubsub_service.start(context)
        assert context.services["pubsub"] is self.service
        return self

    async def stop(self) -> None:
        try:
            if self.service is not None:
                await self.service.stop()
        finally:
            if self.store is not None:
                try:
                    self.broker.shutdown()
                    await asyncio.to_thread(self.qm.close)
                finally:
                    await asyncio.to_thread(self.store.close)

    def mqtt(self, client_id: str, username: str | None = None) -> TestClient:
        client = TestClient(self.broker, level=5)
        client.connect(client_id, username=username)
        return client

    def ensure_queue(self, name: str) -> None:
        if name not in self.qm.queue_names():
            self.qm.define_queue(name)

    async def command(self, name: str, *, reply_to: str = "REPLY.Q", queue: str | None = None,
                      **params) -> tuple[str, list[int]]:
        """Put a psc command as a client application would and wait for the response."""
        self.ensure_queue(reply_to)
        if params.get("QName"):
            self.ensure_queue(params["QName"])  # subscriber queues exist, as in MQ (3076 otherwise)
        if queue is None:
            queue = CONTROL if name in psc.CONTROL_COMMANDS else STREAM
        await self.aio.put(queue, psc.command_message(name, reply_to=reply_to, **params))
        reply = await self.aio.get(reply_to, wait=10.0)
        assert reply is not None, f"no response to {name}"
        return psc.reply_reasons(reply)

    async def messages(self, queue: str, expect: int, wait: float = 10.0) -> list[Message]:
        """The next ``expect`` messages on ``queue`` (waiting for each), then none more
        already there."""
        self.ensure_queue(queue)
        out = []
        for _ in range(expect):
            msg = await self.aio.get(queue, wait=wait)
            assert msg is not None, f"only {len(out)} of {expect} messages on {queue}"
            out.append(msg)
        await asyncio.sleep(0)
        await self.settle()
        extra = await self.aio.get(queue)
        assert extra is None, f"more than {expect} messages on {queue}"
        return out

    async def settle(self) -> None:
        """Let what the engine produced so far commit (its puts are made at once, in the
        publication's unit of work; the store's commit makes them durable)."""
        assert self.service is not None
        await self.service.durable()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def topic_of(message: Message) -> str:
    return str(message.mq.first_rfh2().get("psc.Topic"))
