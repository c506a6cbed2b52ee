"""Drive the sans-I/O broker core with bytes and a manual clock (design guide: "Tests drive
them with bytes and a fake clock"). A TestClient is one connection: it encodes packets with
the project's codec, feeds them to a real Connection, and decodes what the broker wrote."""

from __future__ import annotations

import dataclasses

from relaymq.broker.broker import Broker
from relaymq.clock import ManualClock
from relaymq.broker.connection import Connection
from relaymq.config import Config, default_config
from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.mqtt.reader import PacketReader
from relaymq.store.memory import MemoryStore
from relaymq.store.sqlite import SQLiteStore


class Link:
    """The byte sink a Connection writes to, standing where the socket stands in the server."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.aborted = False
        self.reading = True  # False while the connection asked not to be fed
        self.buffered = 0  # what a congested socket would still hold

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def get_write_buffer_size(self) -> int:
        return self.buffered


class Callbacks:
    """The ``notify`` of a store used without an event loop: the writer thread queues the
    durable-callbacks here and the test thread runs them (as loop.call_soon_threadsafe would)."""

    def __init__(self) -> None:
        self.queue: list = []

    def __call__(self, fn) -> None:
        self.queue.append(fn)  # list.append is atomic under the GIL

    def run(self) -> None:
        while self.queue:
            self.queue.pop(0)()


def settle(broker: Broker) -> None:
    """Let every submitted write become durable and run the acknowledgements waiting on it,
    and what the broker deferred to a later loop turn (a held publisher resuming), until
    neither leaves anything to do."""
    notify = getattr(broker.store, "notify", None)
    while True:
        if isinstance(notify, Callbacks):
            broker.store.flush()
            notify.run()
        state = getattr(broker, "backpressure", None)
        if state is None or not state.deferred:
            break
        broker.run_deferred()


def make_config(**limits) -> Config:
    """The default configuration with [broker], [limits] and [access] keys replaced, and
    ``overflow`` for the default listener (the one TestClient connections come through)."""
    base = default_config()
    overflow = limits.pop("overflow", None)
    if overflow is not None:
        base = dataclasses.replace(base, listeners=tuple(
            dataclasses.replace(listener, overflow=overflow) for listener in base.listeners))
    broker_keys = {"sys_interval": 0}  # no $SYS traffic unless a test asks for it
    broker_keys.update({k: limits.pop(k) for k in list(limits) if hasattr(base.broker, k)})
    access_keys = {k: limits.pop(k) for k in list(limits) if hasattr(base.access, k)}
    return dataclasses.replace(
        base,
        broker=dataclasses.replace(base.broker, **broker_keys),
        limits=dataclasses.replace(base.limits, **limits),
        access=dataclasses.replace(base.access, **access_keys),
    )


def make_broker(store=None, acl=None, passwords=None, **settings) -> Broker:
    clock = ManualClock()
    return Broker(make_config(**settings), store or MemoryStore(), clock,
                  passwords=passwords, acl=acl)


def sqlite_broker(path: str, page: int | None = None, **settings) -> tuple[Broker, SQLiteStore]:
    """A broker on the SQLite store at ``path`` with what the store holds restored as the
    server does it (``Broker.restore_stored``; ``page``: how much of a long queue it reads):
    nothing for a new file, what a restart finds otherwise. The caller closes the store."""
    store = SQLiteStore(path, notify=Callbacks())
    broker = make_broker(store=store, **settings)
    if page is None:
        broker.restore_stored()
    else:
        broker.restore_stored(page)
    return broker, store


class TestClient:
    __test__ = False  # not a pytest class

    def __init__(self, broker: Broker, level: int = 4) -> None:
        self.broker = broker
        self.level = level
        self.link = Link()
        self.conn = Connection(broker, self.link, peer="test")
        self.reader = PacketReader(from_client=False)
        self.reader.protocol_level = level
        self._read = 0
        self.pending: list = []  # decoded but not yet taken by a test

    def send(self, packet: p.Packet) -> None:
        self.conn.data_received(encode(packet, self.level))

    def send_bytes(self, data: bytes) -> None:
        self.conn.data_received(data)

    def received(self) -> list:
        """Packets the broker wrote since the last call."""
        settle(self.broker)
        new = bytes(self.link.data[self._read:])
        self._read = len(self.link.data)
        self.reader.feed(new)
        out, self.pending = self.pending, []
        while (pkt := self.reader.next_packet()) is not None:
            out.append(pkt)
        return out

    def take_first(self) -> p.Packet:
        """The next packet; the rest stay for the next ``received()``."""
        packets = self.received()
        assert packets, "the broker sent nothing"
        self.pending = packets[1:]
        return packets[0]

    def connect(self, client_id: str, clean: bool = True, keep_alive: int = 60, will=None,
                properties=None, username=None, password=None) -> p.Connack:
        name = "MQIsdp" if self.level == 3 else "MQTT"
        self.send(p.Connect(name, self.level, clean, keep_alive, client_id, will, username,
                            password, properties or {}))
        ack = self.take_first()
        assert isinstance(ack, p.Connack), ack
        return ack

    def subscribe(self, topic_filter: str, qos: int = 0, packet_id: int = 1, **options) -> p.Suback:
        props = {}
        if "subscription_identifier" in options:
            props["subscription_identifier"] = options.pop("subscription_identifier")
        self.send(p.Subscribe(packet_id, [p.Subscription(topic_filter, qos, **options)], props))
        ack = self.take_first()
        assert isinstance(ack, p.Suback), ack
        return ack

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False,
                packet_id: int | None = None, properties=None) -> list:
        if qos and packet_id is None:
            packet_id = 1
        self.send(p.Publish(topic, payload, qos, retain, False, packet_id, properties or {}))
        return self.received()

    def publishes(self) -> list[p.Publish]:
        return [x for x in self.received() if isinstance(x, p.Publish)]

    def drop(self) -> None:
        """The socket fails (no DISCONNECT)."""
        self.conn.connection_lost()
