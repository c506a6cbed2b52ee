"""The records the broker stores for every message: the message, a delivery of it, and the
inbound state of a QoS 2 publication (``base.Store`` writes them; ``serialize`` makes rows of
them).

Plain records (``relaymq.plain``), not dataclasses: compiled (``relaymq.native_build``) they are
native classes whose construction and attribute reads are native too (issue 16, bench/compare
row 3: seven records and packets built per QoS 2 message); their declared types are checked
when compiled. A message's ``payload`` is ``bytes``: any other buffer given is copied (it was
copied when the message's row was made).
"""

from __future__ import annotations

from typing import Any

from relaymq.plain import Plain

# Delivery states of an outbound QoS 1/2 message (DeliveryRecord.state).
QUEUED = 0  # not yet sent on the current connection
SENT = 1  # PUBLISH sent, waiting for PUBACK (QoS 1) or PUBREC (QoS 2)
RELEASED = 2  # QoS 2: PUBREC received, PUBREL sent, waiting for PUBCOMP


class StoredMessage(Plain):
    """A publication as the broker keeps it; shared by every delivery that refers to it."""

    FIELDS = ("msg_id", "topic", "payload", "qos", "retain", "properties", "expiry_at", "created_at")
    __slots__ = FIELDS

    def __init__(self, msg_id: int, topic: str, payload: bytes | bytearray, qos: int, retain: bool = False,
                 properties: dict[str, Any] | None = None, expiry_at: float | None = None,
                 created_at: float = 0.0) -> None:
        self.msg_id = msg_id
        self.topic = topic
        # immutable: a buffer a caller may change later (a bytearray) is copied
        self.payload: bytes = payload if type(payload) is bytes else bytes(payload)
        self.qos = qos
        self.retain = retain
        self.properties: dict[str, Any] = {} if properties is None else properties  # MQTT 5 properties to forward
        self.expiry_at = expiry_at  # wall-clock time (time.time()) after which it is dropped
        self.created_at = created_at


class DeliveryRecord(Plain):
    """An outbound QoS 1/2 message queued or in flight for one session."""

    FIELDS = ("client_id", "seq", "msg_id", "qos", "retain", "packet_id", "state", "subscription_ids")
    __slots__ = FIELDS

    def __init__(self, client_id: str, seq: int, msg_id: int, qos: int, retain: bool = False,
                 packet_id: int | None = None, state: int = QUEUED,
                 subscription_ids: list[int] | None = None) -> None:
        self.client_id = client_id
        self.seq = seq  # broker-wide increasing: the order of delivery
        self.msg_id = msg_id
        self.qos = qos  # the QoS it is delivered at: min(published, granted)
        self.retain = retain  # RETAIN flag to send
        self.packet_id = packet_id
        self.state = state
        self.subscription_ids: list[int] = [] if subscription_ids is None else subscription_ids


class InboundRecord(Plain):
    """A QoS 2 PUBLISH received and acknowledged with PUBREC, released on PUBREL: the state
    of its stored message (schema 6: columns of the message's row). A refused publication's
    packet id, which has nothing to release, is not stored: after a restart its PUBREL is
    completed as one already released, and a resent PUBLISH is refused again."""

    FIELDS = ("client_id", "packet_id", "msg_id")
    __slots__ = FIELDS

    def __init__(self, client_id: str, packet_id: int, msg_id: int) -> None:
        self.client_id = client_id
        self.packet_id = packet_id
        self.msg_id = msg_id
