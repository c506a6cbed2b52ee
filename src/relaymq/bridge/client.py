"""The client end of one MQTT connection, sans I/O: packets to bytes, bytes to packets, packet
identifiers and the peer's Receive Maximum. A bridge has two of them, one towards the remote
broker (over a socket) and one towards this broker (in process, ``local_link.py``)."""

from __future__ import annotations

from collections.abc import Container

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.mqtt.reader import PacketReader
from relaymq.mqtt.wire import MAX_PACKET_SIZE  # the largest packet a bridge accepts from either broker

#: Protocol level bit announcing a bridge (Mosquitto's try_private): the remote then does not
#: send a bridge's own publications back to it.
BRIDGE_FLAG = 0x80


class ClientEnd:
    """Encoder, decoder and identifier allocator of one client connection at ``level`` (4 or 5)."""

    __slots__ = ("_next_id", "in_use", "level", "reader", "send_quota")

    def __init__(self, level: int) -> None:
        self.level = level
        self.reader = PacketReader(MAX_PACKET_SIZE, from_client=False)
        self.reader.protocol_level = level
        self._next_id = 0
        self.in_use: set[int] = set()
        #: QoS 1/2 publications the server accepts in flight (its CONNACK Receive Maximum).
        self.send_quota = 65535

    def new_connection(self) -> None:
        """A new network connection: nothing of the last one's bytes is kept (identifiers are)."""
        self.reader = PacketReader(MAX_PACKET_SIZE, from_client=False)
        self.reader.protocol_level = self.level
        self.in_use.clear()  # a SUBSCRIBE of the last connection is answered by nobody

    def encode(self, packet: p.Packet) -> bytes:
        return encode(packet, self.level)

    def receive(self, data: bytes) -> list[p.Packet]:
        """Every complete packet in ``data`` and what came before it; raises MQTTError on a bad one."""
        self.reader.feed(data)
        out: list[p.Packet] = []
        while (packet := self.reader.next_packet()) is not None:
            out.append(packet)
        return out

    def allocate_id(self, busy: Container[int] = ()) -> int:
        """A packet identifier for a SUBSCRIBE or UNSUBSCRIBE: not in use by another of those,
        nor in ``busy`` (the publications in flight that the bridge relays with the
        identifiers their source gave them)."""
        for _ in range(65535):
            self._next_id = self._next_id % 65535 + 1
            if self._next_id not in self.in_use and self._next_id not in busy:
                self.in_use.add(self._next_id)
                return self._next_id
        raise RuntimeError("all 65535 packet identifiers are in use")

    def release_id(self, packet_id: int) -> None:
        self.in_use.discard(packet_id)


def connect_packet(level: int, client_id: str, *, clean_start: bool, keep_alive: int,
                   session_expiry: int, username: str | None, password: bytes | None,
                   bridge_flag: bool, receive_maximum: int) -> p.Connect:
    """The CONNECT a bridge sends: MQTT 5 with its session expiry and Receive Maximum, or
    3.1.1 (with the bridge flag when asked)."""
    properties: p.Properties = {}
    if level == p.MQTT_5:
        properties = {"receive_maximum": receive_maximum}
        if session_expiry:
            properties["session_expiry_interval"] = session_expiry
    wire_level = level | BRIDGE_FLAG if bridge_flag and level != p.MQTT_5 else level
    return p.Connect("MQTT", wire_level, clean_start, keep_alive, client_id, None, username, password,
                     properties)
