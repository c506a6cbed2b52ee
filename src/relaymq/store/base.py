"""The storage interface the broker writes through, and the records it stores.

Writes are *submitted*, not executed: each ``put_*``/``delete_*`` call appends an operation to
the current batch and returns at once. An engine commits batches in order (SQLite: one
transaction and one fsync per batch, on a writer thread, while the next batch fills up).
``on_durable(fn)`` asks for ``fn()`` to run once every operation submitted before the call is
durable; the broker sends PUBACK/PUBREC/SUBACK from there (decision 4 of the spec digest:
durable before acknowledged). Callbacks run through the ``notify`` callable given to the engine
(the server passes ``loop.call_soon_threadsafe``), so the store never imports asyncio.

All methods must be called from one thread (the broker's). Records are plain data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from collections.abc import Callable

# The per-message records and delivery states (records.py) are re-exported: most of the code
# imports them from here.
from relaymq.store.records import QUEUED, RELEASED, SENT, DeliveryRecord, InboundRecord, StoredMessage

__all__ = [
    "QUEUED", "RELEASED", "SENT", "DeliveryRecord", "InboundRecord", "StoredMessage",
    "NEVER_EXPIRES", "SessionRecord", "SubscriptionRecord", "Snapshot", "StoreError", "StoreUnavailable", "Store",
]

NEVER_EXPIRES = 0xFFFFFFFF


@dataclass(slots=True)
class SessionRecord:
    """A persistent session as stored (times in wall-clock seconds)."""

    client_id: str
    protocol_level: int
    expiry_interval: int  # seconds after disconnect; NEVER_EXPIRES for 3.1.1 clean_session=0
    disconnected_at: float | None = None  # wall-clock time of the disconnect; None while connected
    username: str | None = None
    # An MQTT 5 will waiting for its delay (3.1.3.2): the message (kept in messages) and the
    # wall-clock time it is due. Both None when there is none.
    will_msg_id: int | None = None
    will_at: float | None = None


@dataclass(slots=True)
class SubscriptionRecord:
    """One subscription of a persistent session as stored."""

    client_id: str
    topic_filter: str  # as subscribed, including any "$share/<group>/" prefix
    qos: int
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0
    subscription_id: int | None = None
    content_filter: str | None = None  # the relaymq-filter selector text (docs/pubsub.md), if any


@dataclass(slots=True)
class QueueTail:
    """A session's queued deliveries a paged load (``Store.load(page)``) left unlisted in the
    store: its rows in state QUEUED with ``after < seq <= through``, ``count`` of them, in
    ``chunks`` of about a page each: (the chunk's last seq, the lowest and highest message id
    its rows refer to), in seq order. Issue 16, row 9: listing a backlog's 99,000 (seq, msg_id)
    pairs was a third of a restart's instructions. The broker lists them a page at a time as
    the session drains (``Store.list_queued``; ``broker.unlisted``) and keeps every message in
    a chunk's range of ids until the chunk is listed (``MessageRefs.pin``)."""

    after: int
    through: int
    count: int
    chunks: list[tuple[int, int, int]]
    low: int = 0  # the lowest and highest message id of every chunk
    high: int = -1


@dataclass(slots=True)
class Snapshot:
    """Everything the store holds, read once at start-up."""

    messages: dict[int, StoredMessage] = field(default_factory=dict)
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    subscriptions: list[SubscriptionRecord] = field(default_factory=list)
    deliveries: list[DeliveryRecord] = field(default_factory=list)  # in seq order
    inbound: list[InboundRecord] = field(default_factory=list)
    retained: dict[str, int] = field(default_factory=dict)  # topic -> msg_id
    # A session's queue past its first ``page`` queued deliveries (``Store.load(page)``), left
    # in the store unlisted: client_id -> its QueueTail, all after that client's deliveries in
    # ``deliveries``. Their messages are not in ``messages`` unless something else refers to
    # them; they are listed (``list_queued``) and read (``read_deliveries``) as the session
    # drains. Messages no record refers to (a crash's orphans) are in ``messages`` unless their
    # ids are within a tail chunk's range: those are left to ``message_ids`` once it is listed.
    unlisted: dict[str, QueueTail] = field(default_factory=dict)
    # Numbering continues above every id ever stored (even ones since deleted), so an id is
    # never reused across a restart.
    next_msg_id: int = 1
    next_seq: int = 1


class StoreError(Exception):
    """The storage engine failed (disk full, corrupt database, unusable path)."""


class StoreUnavailable(StoreError):
    """The store cannot write just now (disk full, I/O error): it is retrying, and whatever
    waits for a commit waits until it succeeds; a caller that cannot wait gets this."""


class Store(ABC):
    #: Write operations (every ``put_*``, ``update_*``, ``delete_*``) submitted so far. The
    #: broker reads it before and after handling a publication: when it did not move, nothing
    #: the acknowledgement would promise waits for a commit.
    submitted: int = 0
    @property
    def write_error(self) -> BaseException | None:
        """The write error the store is retrying (disk full...), None while it writes (engine.py)."""
        return None

    @abstractmethod
    def load(self, page: int | None = None) -> Snapshot:
        """Everything stored; with ``page``, a session's queued deliveries past its first
        ``page`` may be left in the store (``Snapshot.unlisted``) instead of read in full
        (issue 16, row 9: a restart with a long backlog reads only what the first drain needs)."""

    # -- messages
    @abstractmethod
    def put_message(self, message: StoredMessage) -> None: ...

    @abstractmethod
    def delete_message(self, msg_id: int) -> None: ...

    # -- sessions (delete_session also deletes the client's subscriptions and deliveries, and
    # clears the inbound QoS 2 state of its messages)
    @abstractmethod
    def put_session(self, record: SessionRecord) -> None: ...

    @abstractmethod
    def delete_session(self, client_id: str) -> None: ...

    # -- subscriptions (put replaces the one with the same client_id and topic_filter)
    @abstractmethod
    def put_subscription(self, record: SubscriptionRecord) -> None: ...

    @abstractmethod
    def delete_subscription(self, client_id: str, topic_filter: str) -> None: ...

    # -- outbound deliveries
    @abstractmethod
    def put_delivery(self, record: DeliveryRecord) -> None: ...

    @abstractmethod
    def update_delivery(self, client_id: str, seq: int, packet_id: int | None, state: int) -> None: ...

    @abstractmethod
    def delete_delivery(self, client_id: str, seq: int) -> None: ...

    def put_message_and_delivery(self, message: StoredMessage, record: DeliveryRecord) -> None:
        """``put_message`` then ``put_delivery`` (two writes): a delivery with the first
        reference to its message. An engine may submit both in one call (issue 16: one store
        call per delivery on the QoS 1/2 path)."""
        self.put_message(message)
        self.put_delivery(record)

    def update_deliveries(self, client_id: str, rows: list[tuple[int, int | None, int]]) -> None:
        """``update_delivery`` for each (seq, packet_id, state) of one session: a window refilled
        at once. An engine may submit them in one call (row 8: a backlog drained)."""
        for seq, packet_id, state in rows:
            self.update_delivery(client_id, seq, packet_id, state)

    @abstractmethod
    def mark_released(self, client_id: str, seqs: list[int]) -> None:
        """The RELEASED state (PUBREC received, PUBREL to send) of each of one session's stored
        QoS 2 deliveries by seq, their packet ids as stored: a read's PUBRECs in one call (the
        same change for every row, so an engine may write them in one statement)."""

    def delete_deliveries(self, client_id: str, rows: list[tuple[int, int | None]]) -> None:
        """For each (seq, msg_id) of one session: ``delete_delivery``, and ``delete_message``
        when ``msg_id`` is not None (the last reference went); as ``update_deliveries``."""
        for seq, msg_id in rows:
            self.delete_delivery(client_id, seq)
            if msg_id is not None:
                self.delete_message(msg_id)

    @abstractmethod
    def read_deliveries(self, client_id: str, after_seq: int,
                        limit: int) -> list[tuple[DeliveryRecord, StoredMessage]]:
        """Up to ``limit`` of the client's deliveries with seq > ``after_seq``, in seq order, each
        with its message: how a backlog kept only in the store (issue 2: limits) comes back."""

    @abstractmethod
    def list_queued(self, client_id: str, after_seq: int, through_seq: int, limit: int) -> list[tuple[int, int]]:
        """(seq, msg_id) of up to ``limit`` of the client's QUEUED deliveries with ``after_seq <
        seq <= through_seq``, in seq order: a ``QueueTail`` listed a page at a time."""

    @abstractmethod
    def message_ids(self, low: int, high: int) -> list[int]:
        """The ids of the messages in ``low..high`` stored once everything submitted is,
        ascending (the sweep of the ids a ``QueueTail`` kept: ``broker.unlisted``)."""

    # -- inbound QoS 2: the state of a stored message (one write to put, one to release)
    @abstractmethod
    def put_message_and_inbound(self, message: StoredMessage, record: InboundRecord) -> None:
        """``put_message`` with ``record`` as its inbound QoS 2 state (``record.msg_id`` is the
        message's): a QoS 2 publication received, awaiting PUBREL."""

    @abstractmethod
    def delete_inbounds(self, rows: list[tuple[int, bool]]) -> None:
        """For each (msg_id, last) of the QoS 2 releases of one read: the message's inbound
        state goes, with the message (``delete_message``) when ``last`` (the release held its
        last reference)."""

    # -- retained publications (topic -> message)
    @abstractmethod
    def put_retained(self, topic: str, msg_id: int) -> None: ...

    @abstractmethod
    def delete_retained(self, topic: str) -> None: ...

    def unit(self) -> AbstractContextManager[None]:
        """A unit of work: what is submitted inside commits in one batch (the SQLite engine;
        the memory engine has nothing to group)."""
        return nullcontext()

    # -- durability
    @abstractmethod
    def on_durable(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` (through ``notify``) once all operations submitted so far are durable."""

    @abstractmethod
    def flush(self) -> None:
        """Block until every submitted operation is durable."""

    @abstractmethod
    def close(self) -> None:
        """Flush and release the engine. Further calls raise StoreError."""
