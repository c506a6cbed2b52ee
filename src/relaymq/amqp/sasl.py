"""The SASL layer of an AMQP 1.0 connection, server side, sans-I/O (AMQP 1.0 part 5.3).

Why our own: python-qpid-proton's engine authenticates a server connection only through Cyrus
SASL (absent from its wheel and from this machine); without it the engine offers ANONYMOUS
alone. relaymq's users are its own password file (bcrypt, ``relaymq passwd``), checked on the
broker's pool (``Broker.authenticate``), the same check as MQTT's CONNECT and REST's basic
authentication. So this module runs the SASL exchange (mechanisms, init, outcome) and hands
the bytes after it to the proton engine, which then sees a plain AMQP connection.

Mechanisms: PLAIN (``authzid NUL authcid NUL passwd``; the authzid must be empty or the
authcid) and, when allowed, ANONYMOUS. A frame that is not SASL's, or a second sasl-init,
is a protocol error: the connection closes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from proton import UNDESCRIBED, Array, Data, Described, symbol, ubyte, ulong

SASL_HEADER = b"AMQP\x03\x01\x00\x00"
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
SASL_FRAME = 0x01
SASL_MECHANISMS, SASL_INIT, SASL_OUTCOME = 0x40, 0x41, 0x44
OK, AUTH = 0, 1
PLAIN, ANONYMOUS = "PLAIN", "ANONYMOUS"
#: Largest SASL frame accepted (the spec's minimum max-frame-size).
MAX_SASL_FRAME = 512


class SaslError(ValueError):
    """A peer that broke the SASL exchange: the connection closes."""


@dataclass(frozen=True)
class Credentials:
    mechanism: str
    user: str | None
    password: bytes | None


def encode_frame(descriptor: int, fields: list[Any]) -> bytes:
    data = Data()
    data.put_object(Described(ulong(descriptor), fields))
    body = data.encode()
    return struct.pack(">IBBH", 8 + len(body), 2, SASL_FRAME, 0) + body


def parse_plain(response: bytes) -> tuple[str, bytes]:
    """``authzid NUL authcid NUL passwd`` (RFC 4616) -> (user, password)."""
    parts = response.split(b"\x00")
    if len(parts) != 3:
        raise SaslError("PLAIN response is not authzid NUL authcid NUL passwd")
    authzid, authcid, password = parts
    try:
        user = authcid.decode("utf-8")
        if authzid and authzid.decode("utf-8") != user:
            raise SaslError("PLAIN authzid other than the authcid is not supported")
    except UnicodeDecodeError:
        raise SaslError("PLAIN user name is not UTF-8") from None
    if not user:
        raise SaslError("PLAIN without a user name")
    return user, password


class SaslServer:
    """Feed it bytes (``receive``); take what to send from ``outgoing``. ``credentials`` is
    set once the client chose a mechanism; answer with :meth:`outcome`. ``passthrough`` is
    True when the client skipped SASL (sent the AMQP header), allowed only with ANONYMOUS.
    After the exchange, ``remainder`` holds bytes that belong to the AMQP layer."""

    def __init__(self, allow_anonymous: bool) -> None:
        self.mechanisms = (PLAIN, ANONYMOUS) if allow_anonymous else (PLAIN,)
        self.outgoing = bytearray()
        self.credentials: Credentials | None = None
        self.done = False
        self.passthrough = False
        self.remainder = b""
        self._buf = bytearray()
        self._header_seen = False

    def receive(self, data: bytes) -> None:
        if self.done:
            self.remainder += data
            return
        self._buf += data
        if not self._header_seen:
            if len(self._buf) < 8:
                if not (SASL_HEADER.startswith(bytes(self._buf)) or AMQP_HEADER.startswith(bytes(self._buf))):
                    raise SaslError("not an AMQP 1.0 protocol header")
                return
            header, self._buf = bytes(self._buf[:8]), self._buf[8:]
            if header == AMQP_HEADER and ANONYMOUS in self.mechanisms:
                self.passthrough = self.done = True
                self.credentials = Credentials(ANONYMOUS, None, None)
                self.remainder = header + bytes(self._buf)
                return
            if header != SASL_HEADER:
                self.outgoing += SASL_HEADER  # what we speak, then close (part 2.2)
                raise SaslError("authentication is required: the client must use SASL")
            self._header_seen = True
            self.outgoing += SASL_HEADER
            offered: Any = Array(UNDESCRIBED, Data.SYMBOL, *(symbol(m) for m in self.mechanisms))  # type: ignore[arg-type]
            self.outgoing += encode_frame(SASL_MECHANISMS, [offered])
        self._frames()

    def _frames(self) -> None:
        while len(self._buf) >= 8 and self.credentials is None:
            size, doff, kind = struct.unpack_from(">IBB", self._buf)
            if size > MAX_SASL_FRAME or size < 8 or doff < 2 or doff * 4 > size:
                raise SaslError(f"bad SASL frame (size {size}, doff {doff})")
            if kind != SASL_FRAME:
                raise SaslError("a non-SASL frame during the SASL exchange")
            if len(self._buf) < size:
                return
            body, self._buf = bytes(self._buf[doff * 4:size]), self._buf[size:]
            self._init(body)

    def _init(self, body: bytes) -> None:
        data = Data()
        try:
            data.decode(body)
            data.rewind()
            data.next()
            frame = data.get_object()
        except Exception as exc:  # proton raises DataException and others on garbage
            raise SaslError(f"undecodable SASL frame: {exc}") from None
        if not isinstance(frame, Described) or frame.descriptor not in (SASL_INIT, symbol("amqp:sasl-init:list")):
            raise SaslError("expected sasl-init")
        fields = list(frame.value) if isinstance(frame.value, (list, tuple)) else []
        mechanism = str(fields[0]) if fields else ""
        raw: Any = fields[1] if len(fields) > 1 else None
        response = bytes(raw) if raw is not None else b""
        if mechanism not in self.mechanisms:
            self.credentials = Credentials(mechanism, None, None)  # answered AUTH by outcome()
            return
        if mechanism == PLAIN:
            user, password = parse_plain(response)
            self.credentials = Credentials(PLAIN, user, password)
        else:
            self.credentials = Credentials(ANONYMOUS, None, None)

    def outcome(self, ok: bool) -> None:
        """Send sasl-outcome; after ``ok`` the AMQP layer starts (bytes already received
        beyond the exchange move to ``remainder``)."""
        self.outgoing += encode_frame(SASL_OUTCOME, [ubyte(OK if ok else AUTH)])
        if ok:
            self.done = True
            self.remainder = bytes(self._buf)
            self._buf = bytearray()

    def take_outgoing(self) -> bytes:
        out, self.outgoing = bytes(self.outgoing), bytearray()
        return out
