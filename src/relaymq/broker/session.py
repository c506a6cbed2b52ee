"""A client's session: what survives its connection (mqtt.md items 20, 26; MQTT 5 session expiry).

The session owns its subscriptions, the outbound queue and in-flight window for QoS 1/2, and
the QoS 2 packet ids received but not yet released. Connection-scoped state (topic aliases,
keep-alive, the will) lives on the Connection.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from relaymq.mqtt.wire import MAX_UINT16
from relaymq.store.base import NEVER_EXPIRES, QUEUED, StoredMessage, SubscriptionRecord

if TYPE_CHECKING:
    from relaymq.broker.ack_watch import AckWatch
    from relaymq.broker.connection import Connection

#: What a queue holds until its first item: an empty deque costs about 760 bytes, and most
#: sessions of idle devices never queue anything (issue 8, scenario 6: 10,000 idle
#: connections). Reading works on it as on an empty deque; ``grown`` makes the deque before an
#: append (``Session.enqueue``/``spill``, ``Connection.acknowledge``).
NOTHING_QUEUED: tuple = ()


def grown(queue: deque | tuple) -> deque:
    """``queue`` as a deque that can be appended to (a new one for :data:`NOTHING_QUEUED`)."""
    return deque() if queue is NOTHING_QUEUED else queue  # type: ignore[return-value]


class _NoEntries(dict):
    """An empty dict nothing can be added to: reading, ``pop``, ``clear`` and ``del`` work as
    on any empty dict, adding raises (the caller forgot ``made``)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("NO_ENTRIES is shared: made() gives the dict to add to")

    __setitem__ = setdefault = update = __ior__ = _refuse


#: What a per-connection or per-session dict holds until its first entry (an empty dict costs
#: 64 bytes, and an idle client's stay empty: issue 8, scenario 6); ``made`` makes the dict
#: before the first addition.
NO_ENTRIES: dict = _NoEntries()


def made(entries: dict) -> dict:
    """``entries`` as a dict that can be added to (a new one for :data:`NO_ENTRIES`)."""
    return {} if entries is NO_ENTRIES else entries


@dataclass(slots=True)
class Delivery:
    """One outbound QoS 1/2 message for one session (mirrors store.base.DeliveryRecord)."""

    seq: int
    message: StoredMessage
    qos: int
    retain: bool
    subscription_ids: list[int] = field(default_factory=list)
    packet_id: int | None = None
    state: int = QUEUED
    persisted: bool = False
    sent_at: float = 0.0  # monotonic time of the last (re)transmission
    watch: AckWatch | None = None  # the publisher's PUBACK waiting for this one (ack_watch.py)
    # restored QUEUED after a crash while its session was connected: it may have been sent
    # (delivery.start writes no SENT state for QoS 1), so its first transmission has DUP=1
    maybe_sent: bool = False


class Session:
    __slots__ = (
        "client_id", "protocol_level", "expiry_interval", "username", "subscriptions",
        "queue", "inflight", "inbound", "connection", "disconnected_at", "_next_packet_id",
        "queued_bytes", "dropped", "dropped_bytes", "disconnect_dropped", "disconnect_dropped_bytes", "persisted", "spilled", "inbound_bytes", "overflow", "blocking",
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
        self.queue: deque[Delivery] = NOTHING_QUEUED  # type: ignore[assignment]
        # Deliveries past the in-memory queue limit, kept only in the store: (seq, msg_id) in
        # seq order, all after every delivery in ``queue`` (persistent sessions only).
        self.spilled: deque[tuple[int, int]] = NOTHING_QUEUED  # type: ignore[assignment]
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

    def clear_queue(self) -> None:
        """Forget what is queued (the caller released it), back to the shared empty placeholder."""
        self.queue = NOTHING_QUEUED  # type: ignore[assignment]

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
