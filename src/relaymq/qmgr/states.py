"""Message states on a queue (everyplace.md item 11; seed 004 l.1901-2050).

    put-unconfirmed --confirmPut--> unlocked --browseAndLock--> locked --unlock--> unlocked
    unlocked --get(confirm_id>0)--> get-unconfirmed --confirmGet--> (deleted)
    undo(confirm_id): put-unconfirmed -> deleted; get-unconfirmed -> unlocked; locked -> unlocked

Only ``UNLOCKED`` messages are seen by get and browse; a locked message is reached by its UID
and lock id only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relaymq.message.message import Message

UNLOCKED = 0
PUT_UNCONFIRMED = 1
LOCKED = 2
GET_UNCONFIRMED = 3

STATE_NAMES = {UNLOCKED: "unlocked", PUT_UNCONFIRMED: "put-unconfirmed", LOCKED: "locked-for-browse",
               GET_UNCONFIRMED: "get-unconfirmed"}


@dataclass(slots=True)
class Entry:
    """One message on one queue, with what the index and the store need (slots: a queue may
    hold hundreds of thousands, and every put makes one).

    ``data`` is the message in MQ format (``Message.to_bytes()``), so the entry is what the
    store writes; ``target_qmgr``/``target_queue`` name the final destination of a message
    waiting for transmission (async remote and store-and-forward queues).
    """

    uid: str
    qmgr: str  # owner of the queue it is on (key with ``queue``)
    queue: str
    seq: int
    priority: int
    data: bytes
    msg_id: bytes
    correl_id: bytes
    created_ms: int
    expire_at: int | None = None
    state: int = UNLOCKED
    confirm_id: int = 0
    lock_id: int = 0
    target_qmgr: str = ""
    target_queue: str = ""
    #: What the store writes when it is not ``data``: the message sealed with its queue's
    #: cryptor and compressor (relaymq.qmgr.queue_security); ``data`` stays the clear form.
    sealed: bytes | None = field(default=None, repr=False, compare=False)
    _message: Message | None = field(default=None, repr=False, compare=False)

    def order_key(self) -> tuple[int, int]:
        """Priority descending, then arrival (item 15)."""
        return (-self.priority, self.seq)

    def message(self) -> Message:
        """The message, decoded once, when first looked at (each caller gets the same object:
        treat it as read-only or use ``Message.from_stored(entry.data)`` for a private copy)."""
        if self._message is None:
            self._message = Message.from_stored(self.data)
        return self._message


@dataclass(frozen=True)
class Envelope:
    """What an application receives: the message plus the queue-side facts about it (the
    UID that confirmGet/delete/unlock need, the lock id from browseAndLock)."""

    uid: str
    queue: str
    priority: int
    msg_id: bytes
    correl_id: bytes
    message: Message
    lock_id: int = 0
    target_qmgr: str = ""
    target_queue: str = ""


@dataclass(frozen=True)
class MessageEvent:
    """What a message listener gets (item 16): queue name, UID, MsgID, CorrelID, priority."""

    queue: str
    uid: str
    msg_id: bytes
    correl_id: bytes
    priority: int


@dataclass(frozen=True)
class PutEvent:
    """What a put listener gets: a message that was put (or whose put was confirmed) and is
    durable, with the bytes the queue manager stored (MQ format: MQMD, headers, body), so a
    listener has the message even when a getter takes it off the queue at once."""

    queue: str
    uid: str
    msg_id: bytes
    correl_id: bytes
    priority: int
    data: bytes

    def message(self) -> Message:
        """The message, decoded from ``data`` (a private copy)."""
        return Message.from_bytes(self.data)
