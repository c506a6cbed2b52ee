"""Queue security: the authenticator, cryptor and compressor queue properties, and the check
made at every hop (everyplace.md items 7 and 26; seed 004 l.506, 531-543, 740-764, 2599,
3578-3584; docs/queues.md "Queue security").

* ``compressor = "zlib"``: the queue's messages are stored compressed, and travel compressed
  when this queue transmits them (seed l.758: "reduce the size of messages while they are
  being transmitted and stored").
* ``cryptor = "KEY"``: the queue's messages are stored encrypted with AES-GCM under the key
  of that name (:mod:`relaymq.qmgr.queue_keys`), and travel encrypted when this queue
  transmits them (an async remote or store-and-forward queue: the characteristics of its
  target, seed l.2599). AES-GCM authenticates as it encrypts: a message altered at rest or in
  transit fails to open and is refused (SecurityError, 2063), never delivered altered.
* ``authenticator = "channel"``: a message that arrives over a channel may be stored here only
  when the channel peer authenticated (a certificate, or a user and password; not an
  anonymous peer of ``channel_allow_anonymous``). Refused: NotAuthenticated (3307, the seed's
  Except_Authenticate, l.4875).

Hop by hop (l.3580-3584): when a message arrives over a channel to be stored here - at its
destination or en route on a store-and-forward or async remote queue - the queue that takes
it states the requirements and the channel must meet them: the authenticator as above, and a
cryptor queue takes only a message that came encrypted under that same key (else RuleVeto,
3304: the seed's queue attribute rule refusing, Except_Rule). A route that does not store the
message here (a synchronous relay) is checked where it is stored; a home-server queue passing
pulled messages to their destination is not checked (l.3582: no channel is involved there).
The compressor is not a security requirement: a receiver expands whatever arrives.

The sealed form is self-describing, so a queue whose properties change keeps reading the
messages it already holds, and a receiver needs no header to open a PUT's body::

    b"RMQS" version(1) flags(1: 1 compressed, 2 encrypted)
    [encrypted: key name length (2, big-endian) + key name (UTF-8) + nonce (12)]
    payload: the message in MQ format, zlib-compressed when flagged, AES-GCM-encrypted when
             flagged (associated data: the header bytes above + the message UID)

An MQ-format message starts with its MQMD ("MD  "), never with ``RMQS``. No I/O here (the
key file is read by :mod:`relaymq.qmgr.queue_keys`).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from relaymq.qmgr.definitions import QueueDefinition
from relaymq.qmgr.errors import BadProperty, NotAuthenticated, QueueError, RuleVeto, SecurityError
from relaymq.qmgr.resolution import SYNCHRONOUS_ROUTES
from relaymq.qmgr.security_properties import COMPRESSOR_ZLIB
from relaymq.qmgr.states import Entry

MAGIC = b"RMQS"
VERSION = 1
_COMPRESSED, _ENCRYPTED = 1, 2
_NONCE = 12


@dataclass(frozen=True)
class Carried:
    """The characteristics a message was sealed with (what a channel carried it with)."""

    cryptor: str = ""
    compressor: str = ""


class Resolver(Protocol):
    """What the hop check needs of a queue manager: where a put would land."""

    def resolve(self, queue: str, qmgr: str | None = None) -> Any: ...


def _ciphers(keys: Mapping[str, bytes]) -> dict[str, Any]:
    """An AES-GCM cipher per key. ``cryptography`` (OpenSSL through cffi, some 9 MB of a
    process) is imported only by a queue manager that has keys."""
    if not keys:
        return {}
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return {name: AESGCM(key) for name, key in keys.items()}


class QueueSecurity:
    """Seals and opens messages of queues with a cryptor or compressor, with the keys of the
    key file (name -> AES key bytes), and checks the hop requirements."""

    def __init__(self, keys: Mapping[str, bytes] | None = None) -> None:
        self._keys = _ciphers(keys or {})

    @property
    def key_names(self) -> list[str]:
        return sorted(self._keys)

    def check(self, definition: QueueDefinition) -> None:
        """Refuse a definition whose cryptor names a key this queue manager does not hold."""
        if definition.cryptor and definition.cryptor not in self._keys:
            known = ", ".join(self.key_names) or "none: [qmgr] key_file is not set"
            raise BadProperty(f"queue {definition.name!r}: cryptor {definition.cryptor!r} is not a key of the"
                              f" key file (keys: {known})")

    # -- sealing ----------------------------------------------------------------------
    def seal(self, definition: QueueDefinition, uid: str, data: bytes) -> bytes | None:
        """``data`` sealed with the queue's characteristics; None when it has none."""
        if not definition.sealed_at_rest:
            return None
        return self.seal_with(Carried(definition.cryptor, definition.compressor), uid, data)

    def seal_with(self, carried: Carried, uid: str, data: bytes) -> bytes:
        flags = (_COMPRESSED if carried.compressor else 0) | (_ENCRYPTED if carried.cryptor else 0)
        payload = zlib.compress(data, 6) if carried.compressor else data
        head = MAGIC + bytes((VERSION, flags))
        if not carried.cryptor:
            return head + payload
        cipher = self._keys.get(carried.cryptor)
        if cipher is None:
            raise SecurityError(f"cryptor {carried.cryptor!r}: no such key in the key file")
        name = carried.cryptor.encode()
        head += len(name).to_bytes(2, "big") + name + os.urandom(_NONCE)
        return head + cipher.encrypt(head[-_NONCE:], payload, head + uid.encode())

    def open(self, uid: str, data: bytes) -> tuple[bytes, Carried]:
        """The MQ-format message inside ``data`` and what it was sealed with; data that is
        not sealed is returned as it is. Raises SecurityError when it cannot be opened
        (altered, a key this side does not hold, a broken envelope)."""
        if not data.startswith(MAGIC):
            return data, Carried()
        if len(data) < 6 or data[4] != VERSION:
            raise SecurityError(f"message {uid}: sealed with an unknown envelope version")
        flags = data[5]
        at, cryptor = 6, ""
        payload = data[at:]
        if flags & _ENCRYPTED:
            size = int.from_bytes(data[at:at + 2], "big")
            cryptor = data[at + 2:at + 2 + size].decode("utf-8", "replace")
            at += 2 + size + _NONCE
            cipher = self._keys.get(cryptor)
            if cipher is None:
                raise SecurityError(f"message {uid}: encrypted under key {cryptor!r}, which this queue manager"
                                    " does not hold")
            from cryptography.exceptions import InvalidTag  # loaded with the cipher already

            try:
                payload = cipher.decrypt(data[at - _NONCE:at], data[at:], data[:at] + uid.encode())
            except (InvalidTag, ValueError):
                raise SecurityError(f"message {uid}: its ciphertext fails authentication under key {cryptor!r}"
                                    " (altered, or encrypted with another key of that name)") from None
        if flags & _COMPRESSED:
            try:
                payload = zlib.decompress(payload)
            except zlib.error as exc:
                raise SecurityError(f"message {uid}: its compressed body is broken ({exc})") from None
        return payload, Carried(cryptor, COMPRESSOR_ZLIB if flags & _COMPRESSED else "")

    # -- the store ------------------------------------------------------------------------
    def seal_entry(self, definition: QueueDefinition, entry: Entry) -> None:
        """Give a new entry its at-rest form (what the store writes) for its queue."""
        entry.sealed = self.seal(definition, entry.uid, entry.data)

    def open_entries(self, entries: Iterable[Entry]) -> tuple[list[Entry], list[tuple[Entry, QueueError]]]:
        """Open the stored entries read at start-up: (the readable ones with their clear data
        and at-rest form, the ones that fail to open and why)."""
        good: list[Entry] = []
        bad: list[tuple[Entry, QueueError]] = []
        for entry in entries:
            if not entry.data.startswith(MAGIC):
                good.append(entry)
                continue
            try:
                clear, _ = self.open(entry.uid, entry.data)
            except SecurityError as exc:
                bad.append((entry, exc))
                continue
            entry.sealed, entry.data = entry.data, clear
            good.append(entry)
        return good, bad

    # -- the channel (hop by hop) -----------------------------------------------------------
    def accept(self, qm: Resolver, *, uid: str, qmgr: str, queue: str, body: bytes, principal: str | None,
               check: bool = True) -> bytes:
        """A PUT's body opened, once the queue it will be stored on here accepts the channel
        it came over (module docstring); raises SecurityError, NotAuthenticated or RuleVeto."""
        clear, carried = self.open(uid, body)
        if check:
            self.check_hop(qm, qmgr, queue, carried, principal)
        return clear

    @staticmethod
    def check_hop(qm: Resolver, qmgr: str, queue: str, carried: Carried, principal: str | None) -> None:
        try:
            resolved = qm.resolve(queue, qmgr)
        except QueueError:
            return  # the put itself reports where it cannot go
        definition = resolved.definition
        if definition is None or resolved.kind in SYNCHRONOUS_ROUTES:
            return  # not stored here: the hop that stores it checks
        if definition.authenticator and not principal:
            raise NotAuthenticated(f"queue {definition.name!r} has authenticator {definition.authenticator!r}: a"
                                   " message for it must come from a channel peer that authenticated")
        if definition.cryptor and carried.cryptor != definition.cryptor:
            how = f"under key {carried.cryptor!r}" if carried.cryptor else "unencrypted"
            raise RuleVeto(f"queue {definition.name!r} has cryptor {definition.cryptor!r}: the channel carried"
                           f" the message {how}, which does not meet the queue's requirements")
