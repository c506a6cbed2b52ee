"""Framing: cut a byte stream into MQTT packets (seed 000 l.764-898, fixed header).

The connection feeds whatever the transport delivered and then takes packets until none is
complete. Bytes are appended to one bytearray and consumed by moving an offset; consumed bytes
are dropped only when the reader runs out of complete packets, so a feed holding many packets
costs no quadratic copying. The decoder reads each body where it lies (``decode_in``).
"""

from __future__ import annotations

from relaymq.mqtt.decoder import decode_in
from relaymq.mqtt.errors import PacketTooLarge
from relaymq.mqtt.packets import CONNECT, Connect, Packet
from relaymq.mqtt.wire import MAX_PACKET_SIZE, decode_remaining_length


#: ``_buf`` while every byte received was consumed: shared empty bytes, made a bytearray by the
#: next ``feed`` (an empty bytearray costs 56 bytes on every idle connection).
NOTHING_BUFFERED = b""


class PacketReader:
    """Incremental decoder for one connection.

    ``protocol_level`` is 0 until CONNECT: packets before it decode by the level-4 rules (the
    broker rejects them anyway). The reader sets it from the first CONNECT it decodes, and
    the broker may set it too. ``from_client`` is True on the broker side; a client-side
    reader (bridges, tests) passes False, which flips the direction checks.

    After an error, ``last_first_byte`` still holds the first byte of the packet that caused
    it, so the broker can tell e.g. a bad DISCONNECT (close quietly) from a bad PUBLISH
    (answer with DISCONNECT and the reason code)."""

    __slots__ = ("max_packet_size", "max_connect_size", "protocol_level", "from_client",
                 "last_first_byte", "_buf", "_pos")

    def __init__(self, max_packet_size: int = MAX_PACKET_SIZE, *, from_client: bool = True,
                 max_connect_size: int | None = None):
        self.max_packet_size = max_packet_size
        # Until a CONNECT is decoded, packets may be at most this large (issue 15 finding 8).
        self.max_connect_size = max_packet_size if max_connect_size is None else min(
            max_connect_size, max_packet_size)
        self.protocol_level = 0
        self.from_client = from_client
        self.last_first_byte: int | None = None
        self._buf: bytes | bytearray = NOTHING_BUFFERED  # a bytearray once fed
        self._pos = 0

    def feed(self, data: bytes) -> None:
        """Append bytes received from the transport."""
        if self._buf is NOTHING_BUFFERED:
            self._buf = bytearray(data)
        else:
            self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as packets (for back-pressure accounting)."""
        return len(self._buf) - self._pos

    def next_packet(self) -> Packet | None:
        """The next complete packet, or None when more bytes are needed.

        Raises :class:`PacketTooLarge` as soon as a fixed header announces a packet bigger
        than ``max_packet_size`` (``max_connect_size`` until a CONNECT was decoded), before
        its body arrives, and the decoder's
        :class:`MQTTError` subclasses for a bad packet. The connection must be closed after
        an error: the stream position is then undefined."""
        buf = self._buf
        pos = self._pos
        available = len(buf)
        if available - pos < 2:
            self._compact()
            return None
        first_byte = buf[pos]
        self.last_first_byte = first_byte
        length = buf[pos + 1]
        if length < 0x80:  # a body under 128 bytes (acknowledgements, small publications)
            body_start = pos + 2
        else:
            header = decode_remaining_length(buf, pos + 1)
            if header is None:
                self._compact()
                return None
            length, body_start = header
        limit = self.max_packet_size if self.protocol_level else self.max_connect_size
        if body_start - pos + length > limit:
            raise PacketTooLarge(
                f"packet of {body_start - pos + length} bytes exceeds the maximum "
                f"of {limit}{'' if self.protocol_level else ' before CONNECT'}")
        body_end = body_start + length
        if body_end > available:
            self._compact()
            return None
        self._pos = body_end
        packet = decode_in(first_byte, buf, body_start, body_end, self.protocol_level,
                           from_client=self.from_client)
        if first_byte >> 4 == CONNECT and not self.protocol_level:
            assert isinstance(packet, Connect)
            self.protocol_level = packet.protocol_level
        return packet

    def _compact(self) -> None:
        """Drop consumed bytes; called only when no complete packet is left."""
        if self._pos:
            buf = self._buf
            if self._pos == len(buf):
                self._buf = NOTHING_BUFFERED
            else:
                assert isinstance(buf, bytearray)  # bytes only while nothing is buffered
                del buf[:self._pos]
            self._pos = 0
