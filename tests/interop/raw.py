"""Raw MQTT bytes for interop tests that must send what no client library would (a reader
that stops, a packet sent before its commit is visible, a malformed length)."""

from __future__ import annotations

import socket


def packet(first: int, body: bytes) -> bytes:
    """One MQTT packet: the first byte, the Remaining Length, then ``body``."""
    n, length = len(body), bytearray()
    while True:
        digit, n = n % 128, n // 128
        length.append(digit | (0x80 if n else 0))
        if not n:
            return bytes([first]) + bytes(length) + body


def string(text: str | bytes) -> bytes:
    """An MQTT UTF-8 string: two length bytes, then the bytes."""
    data = text.encode() if isinstance(text, str) else text
    return len(data).to_bytes(2, "big") + data


def closed_by_peer(sock: socket.socket, within: float) -> bool:
    """True when the broker closes ``sock`` within ``within`` seconds (recv returns b"" or the
    connection is reset)."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
