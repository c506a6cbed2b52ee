"""The one error type the MQTT codec raises, carrying the MQTT 5 reason code to report."""

from __future__ import annotations


class MQTTError(Exception):
    """A packet violates the protocol. ``reason_code`` is the MQTT 5 reason code that a
    level-5 connection reports in DISCONNECT/CONNACK before closing (0x81 malformed packet,
    0x82 protocol error, 0x95 packet too large, ...). Levels 3 and 4 just close."""

    def __init__(self, reason_code: int, message: str, silent: bool = False):
        super().__init__(message)
        self.reason_code = reason_code
        self.message = message
        # True: close without telling the peer (a DISCONNECT with a reason code it may not
        # carry, a ping with a body): the peer was leaving or probing, a reply serves nobody.
        self.silent = silent

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}(0x{self.reason_code:02X}, {self.message!r})"


class MalformedPacket(MQTTError):
    def __init__(self, message: str):
        super().__init__(0x81, message)


class ProtocolError(MQTTError):
    def __init__(self, message: str, reason_code: int = 0x82, silent: bool = False):
        super().__init__(reason_code, message, silent)


class PacketTooLarge(MQTTError):
    def __init__(self, message: str):
        super().__init__(0x95, message)
