"""``relaymq sub -F FORMAT``: mosquitto_sub's output format (issue 18, "the first hour").

``%`` sequences are the message's (``%t`` topic, ``%p`` payload, ``%q`` QoS, ``%r`` retained,
``%l`` payload length, ``%m`` message id, ``%x``/``%X`` payload in hex, ``%I`` ISO-8601 time,
``%U`` Unix time with nanoseconds, ``%P`` user properties as ``name:value``, ``%C`` content
type, ``%R`` response topic, ``%E`` message expiry interval, ``%D`` correlation data, ``%S``
subscription identifiers, ``%A`` topic alias, ``%%``); ``@X`` is strftime's ``%X`` of the
time the message arrived (``@N`` nanoseconds, ``@@`` a literal ``@``); ``\\`` escapes
``\\\\ \\0 \\a \\e \\n \\r \\t \\v``. Mosquitto's field widths are not taken."""

from __future__ import annotations

import time
from typing import Any

ESCAPES = {"\\": b"\\", "0": b"\0", "a": b"\a", "e": b"\x1b", "n": b"\n", "r": b"\r", "t": b"\t", "v": b"\v"}


class FormatError(ValueError):
    """A -F sequence that does not exist: the one line to print."""


def _property(message: Any, name: str) -> Any:
    properties = getattr(message, "properties", None)
    return getattr(properties, name, None) if properties is not None else None


def _text(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, list):
        return b" ".join(_text(item) for item in value)
    return str(value).encode("utf-8")


def _field(letter: str, message: Any, now_ns: int) -> bytes:
    payload: bytes = message.payload
    if letter == "%":
        return b"%"
    if letter == "t":
        return message.topic.encode("utf-8")
    if letter == "p":
        return payload
    if letter == "q":
        return str(message.qos).encode()
    if letter == "r":
        return b"1" if message.retain else b"0"
    if letter == "l":
        return str(len(payload)).encode()
    if letter == "m":
        return str(message.mid).encode()
    if letter == "x":
        return payload.hex().encode()
    if letter == "X":
        return payload.hex().upper().encode()
    if letter == "I":
        return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now_ns // 1_000_000_000)).encode()
    if letter == "U":
        return f"{now_ns // 1_000_000_000}.{now_ns % 1_000_000_000:09d}".encode()
    if letter == "P":
        pairs = _property(message, "UserProperty") or []
        return b" ".join(f"{name}:{value}".encode() for name, value in pairs)
    names = {"C": "ContentType", "R": "ResponseTopic", "E": "MessageExpiryInterval", "D": "CorrelationData",
             "S": "SubscriptionIdentifier", "A": "TopicAlias"}
    if letter in names:
        return _text(_property(message, names[letter]))
    raise FormatError(f"-F: unknown sequence %{letter}")


def check(fmt: str) -> None:
    """Raise FormatError for a sequence ``render`` would not know (before connecting)."""
    probe = type("Probe", (), {"payload": b"", "topic": "", "qos": 0, "retain": False, "mid": 0, "properties": None})
    render(fmt, probe(), 0)


def render(fmt: str, message: Any, now_ns: int | None = None) -> bytes:
    """The bytes ``fmt`` makes of ``message`` (without a newline: the caller adds one unless -N)."""
    stamp = time.time_ns() if now_ns is None else now_ns
    out = bytearray()
    i = 0
    while i < len(fmt):
        char = fmt[i]
        following = fmt[i + 1] if i + 1 < len(fmt) else ""
        if char == "%" and following:
            out += _field(following, message, stamp)
            i += 2
        elif char == "@" and following:
            if following == "@":
                out += b"@"
            elif following == "N":
                out += f"{stamp % 1_000_000_000:09d}".encode()
            else:
                out += time.strftime("%" + following, time.localtime(stamp // 1_000_000_000)).encode()
            i += 2
        elif char == "\\" and following in ESCAPES:
            out += ESCAPES[following]
            i += 2
        else:
            out += char.encode("utf-8")
            i += 1
    return bytes(out)
