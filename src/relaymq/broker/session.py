"""A client's session: what survives its connection (mqtt.md items 20, 26; MQTT 5 session expiry).

The session owns its subscriptions, the outbound queue and in-flight window for QoS 1/2, and
the QoS 2 packet ids received but not yet released. Connection-scoped state (topic aliases,
keep-alive, the will) lives on the Connection.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, TypeVar

from relaymq.broker.no_entries import NO_ENTRIES
from relaymq.mqtt.wire import MAX_UINT16
from relaymq.store.base import NEVER_EXPIRES, QUEUED, QueueTail, StoredMessage, SubscriptionRecord

if TYPE_CHECKING:
    from relaymq.broker.ack_watch import AckWatch
    from relaymq.broker.connection import Connection

#: What a queue holds until its first item: an empty deque costs about 760 bytes, and most
#: sessions of idle devices never queue anything (issue 8, scenario 6: 10,000 idle
#: connections). Reading works on it as on an empty deque; ``grown`` makes the deque before an
#: append (``Session.enqueue``/``spill``, ``Connection.acknowledge``).
NOTHING_QUEUED: tuple[()] = ()

_T = TypeVar("_T")


def grown(queue: deque[_T] | tuple[()]) -> deque[_T]:
    """``queue`` as a deque that can be appended to (a new one for :data:`NOTHING_QUEUED`)."""
    return queue if isinstance(queue, deque) else deque()


def made(entries: dict) -> dict:
    """``entries`` as a dict that can be added to (a new one for :data:`NO_ENTRIES`)."""
    return {} if entries is NO_ENTRIES else entries


class Delivery:
    """One outbound QoS 1/2 message for one session (mirrors store.base.DeliveryRecord).

    A plain class, not a dataclass: the compiled group (``relaymq.native_build``) makes it a
    native class, whose dataclass ``__init__`` would stay interpreted."""

    __slots__ = ("seq", "message", "qos", "retain", "subscription_ids", "packet_id", "state", "persisted",
                 "sent_at", "watch", "maybe_sent")

    def __init__(self, seq: int, message: StoredMessage, qos: int, retain: bool,
                 subscription_ids: list[int] | None = None, packet_id: int | None = None,
                 state: int = QUEUED, persisted: bool = False, sent_at: float = 0.0,
                 watch: AckWatch | None = None, maybe_sent: bool = False) -> None:
        self.seq = seq
        self.message = message
        self.qos = qos
        self.retain = retain
        self.subscription_ids: list[int] = [] if subscription_ids is None else subscription_ids
        self.packet_id = packet_id
        self.state = state
        self.persisted = persisted
        self.sent_at = sent_at  # monotonic time of the last (re)transmission
        self.watch = watch  # the publisher's PUBACK waiting for this one (ack_watch.py)
        # restored QUEUED after a crash while its session was connected: it may have been sent
        # (delivery.start writes no SENT state for QoS 1), so its first transmission has DUP=1
        self.maybe_sent = maybe_sent

    def __repr__(self) -> str:
        return (f"Delivery(seq={self.seq}, msg_id={self.message.msg_id}, qos={self.qos}, "
                f"packet_id={self.packet_id}, state={self.state})")


class Session:
    __slots__ = (
        "client_id", "protocol_level", "expiry_interval", "username", "subscriptions",
        "queue", "inflight", "inbound", "connection", "disconnected_at", "_next_packet_id",
        "queued_bytes", "dropped", "dropped_bytes", "disconnect_dropped", "disconnect_dropped_bytes", "persisted", "spilled", "unlisted", "inbound_bytes", "overflow", "blocking",
    )

    def __init__(self, client_id: str, protocol_level: int, expiry_interval: int,
                 username: str | None = None) -> None:
        self.client_id = client_id
        self.protocol_level = protocol_level
        self.expiry_interval = expiry_interval
        self.username = username
        # full topic filter as subscribed (incl. $share/...) -> options
        # (these three: the shared NO_ENTRIES until their first entry, ``made``)
        self.subscriptions: dict[str, SubscriptionRecord] = NO_ENTRIES
        # QoS 1/2 waiting for an in-flight slot (a deque once something waited: ``enqueue``)
        self.queue: deque[Delivery] | tuple[()] = NOTHING_QUEUED
        # Deliveries past the in-memory queue limit, kept only in the store: (seq, msg_id) in
        # seq order, all after every delivery in ``queue`` (persistent sessions only).
        self.spilled: deque[tuple[int, int]] | tuple[()] = NOTHING_QUEUED
        # More kept only in the store, not listed in ``spilled`` yet: a restored backlog's tail
        # (``Snapshot.unlisted``), its seqs between the spilled ones before and after it, listed
        # a page at a time before they are needed (broker/unlisted.py)
        self.unlisted: QueueTail | None = None
        # packet id -> delivery, in the order sent (a dict keeps it: an OrderedDict costs twice
        # the memory of an empty dict on every connection, issue 8 scenario 6)
        self.inflight: dict[int, Delivery] = NO_ENTRIES
        self.inbound: dict[int, StoredMessage | None] = NO_ENTRIES  # QoS 2 received, awaiting PUBREL
        self.inbound_bytes = 0  # payload bytes of the messages in ``inbound``
        self.connection: Connection | None = None
        self.disconnected_at: float | None = None  # monotonic time
        self._next_packet_id = 1
        self.queued_bytes = 0
        # Messages (and their payload bytes) dropped by a full queue; of those, the
        # disconnect_ ones were followed by the broker disconnecting the client (item 44).
        self.dropped = 0
        self.dropped_bytes = 0
        self.disconnect_dropped = 0
        self.disconnect_dropped_bytes = 0
        self.persisted = False  # a SessionRecord is in the store
        # What a full queue does (the listener's ``overflow``: delivery.BLOCK, DROP_NEW,
        # DROP_OLDEST), set when the client connects
        self.overflow = "block"
        # None, or (policy "block", queue full) the connections held back until it drains
        # below its low-water mark (backpressure.py)
        self.blocking: list[Connection] | None = None

    def enqueue(self, d: Delivery) -> None:
        """Append to ``queue`` (made a deque on first use)."""
        self.queue = queue = grown(self.queue)
        queue.append(d)

    def spill(self, seq: int, msg_id: int) -> None:
        """Append to ``spilled`` (made a deque on first use)."""
        self.spilled = spilled = grown(self.spilled)
        spilled.append((seq, msg_id))

    def in_store_only(self) -> int:
        """How many deliveries are kept only in the store (``spilled`` and ``unlisted``)."""
        unlisted = self.unlisted
        return len(self.spilled) + (0 if unlisted is None else unlisted.count)

    def clear_queue(self) -> None:
        """Forget what is queued (the caller released it), back to the shared empty placeholder."""
        self.queue = NOTHING_QUEUED

    @property
    def persistent(self) -> bool:
        """A session outlives its connection when its expiry interval is not 0."""
        return self.expiry_interval != 0

    def expired(self, now: float) -> bool:
        if self.connection is not None or self.disconnected_at is None:
            return False
        if self.expiry_interval == NEVER_EXPIRES:
            return False
        return now - self.disconnected_at >= self.expiry_interval

    def next_packet_id(self) -> int:
        """A free packet id in 1..65535 (mqtt.md item 28: 0 is invalid), skipping ids in use."""
        for _ in range(MAX_UINT16):
            pid = self._next_packet_id
            self._next_packet_id = pid + 1 if pid < MAX_UINT16 else 1
            if pid not in self.inflight:
                return pid
        raise RuntimeError("no free packet identifier")  # impossible: inflight is bounded

    def reset_packet_ids(self) -> None:
        """Clean start resets the message id to 1 (mqtt.md item 20; seed 000 l.957-959)."""
        self._next_packet_id = 1
