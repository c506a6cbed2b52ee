"""The small records the publish path hands between the broker's parts, with named fields
instead of lists changed by index (issue 19 "Hidden channels on the publish path").

Plain slotted classes, not dataclasses: the compiled group (``relaymq.native_build``) makes
them native classes, whose dataclass ``__init__`` would stay interpreted."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from relaymq.store.base import StoredMessage

if TYPE_CHECKING:
    from relaymq.broker.session import Delivery, Session


class PendingAck:
    """An acknowledgement in a connection's queue (``Connection.acks``, in the order of the
    packets it answers: 3.1.1 4.6): its bytes, whether it ends a flow counted by the receive
    maximum, and whether what it promises is durable yet (then it may leave once those before
    it went)."""

    __slots__ = ("data", "completes", "ready")

    def __init__(self, data: bytes, completes: bool, ready: bool) -> None:
        self.data = data
        self.completes = completes
        self.ready = ready


class RoutingTarget:
    """One client's delivery of a publication that matched several of its subscriptions
    (routing.route): the highest granted QoS, RETAIN if any subscription keeps it, and every
    subscription identifier (mqtt.md item 12; MQTT 5 3.3.4)."""

    __slots__ = ("session", "qos", "retain", "subscription_ids")

    def __init__(self, session: Session, qos: int, retain: bool, subscription_ids: list[int]) -> None:
        self.session = session
        self.qos = qos
        self.retain = retain
        self.subscription_ids = subscription_ids


class ReadEnd:
    """What the read being handled left for its end, for one session (``Broker.acknowledged``,
    settled by ``delivery.settle_acknowledged``: one store call each, not one per packet):
    ``acked``, in-flight deliveries acknowledged (PUBACK, PUBCOMP), to release; ``released``,
    stored QoS 2 deliveries PUBREC moved to RELEASED, their states to store; ``inbound``, the
    (msg id, last) of stored inbound QoS 2 messages PUBREL released, their states to clear,
    each message deleted when the release held its last reference (``last``)."""

    __slots__ = ("acked", "released", "inbound")

    def __init__(self) -> None:
        self.acked: list[Delivery] = []
        self.released: list[Delivery] = []
        self.inbound: list[tuple[int, bool]] = []

    @staticmethod
    def of(ends: dict[Session, ReadEnd], session: Session) -> ReadEnd:
        """``session``'s entry in ``ends``, made when it has none."""
        end = ends.get(session)
        if end is None:
            ends[session] = end = ReadEnd()
        return end


class PendingWill(NamedTuple):
    """A will waiting for its delay (MQTT 5 Will Delay Interval), with the user it is
    published as: the ACL judges it again when it fires (issue 15, finding 5)."""

    due: float  # monotonic
    message: StoredMessage
    username: str | None
