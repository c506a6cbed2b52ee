"""The key file of the queue cryptors (everyplace.md item 7, cryptor; docs/queues.md "Queue
security").

A queue's ``cryptor`` names a key of this file; the key is AES-GCM's (128, 192 or 256 bits).
The file is TOML, one line per key, the key's bytes in standard base64::

    # relaymq queue keys: name = base64 of 16, 24 or 32 random bytes
    orders = "q3v0J2mOe8w4sQk0Zr2bN1lXoVt6mB8nJq3y0H9aT4E="

Key names follow the queue name rules (0-9 a-z A-Z _ . %). Two queue managers that move a
queue's messages between them encrypted need the same key under the same name. Loading is
the only I/O of queue security; :mod:`relaymq.qmgr.queue_security` gets the keys as bytes.
"""

from __future__ import annotations

import base64
import binascii
import tomllib
from pathlib import Path

from relaymq.qmgr.names import is_valid_name

#: AES key lengths in bytes (AES-128, AES-192, AES-256).
KEY_LENGTHS = (16, 24, 32)


class KeyFileError(ValueError):
    """The key file is missing, unreadable or malformed; the message says where."""


def parse_keys(text: str, where: str = "key file") -> dict[str, bytes]:
    """The keys of a key file's ``text``: name -> key bytes (raises KeyFileError)."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeyFileError(f"{where}: not TOML ({exc}); expected lines name = \"base64 key\"") from None
    keys: dict[str, bytes] = {}
    for name, value in table.items():
        if not is_valid_name(name):
            raise KeyFileError(f"{where}: key name {name!r} must use 0-9 a-z A-Z _ . % only")
        if not isinstance(value, str):
            raise KeyFileError(f"{where}: key {name!r} must be a base64 string, got {type(value).__name__}")
        try:
            key = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise KeyFileError(f"{where}: key {name!r} is not base64") from None
        if len(key) not in KEY_LENGTHS:
            raise KeyFileError(f"{where}: key {name!r} is {len(key)} bytes; AES-GCM needs 16, 24 or 32")
        keys[name] = key
    return keys


def load_keys(path: str) -> dict[str, bytes]:
    """Read and parse the key file at ``path`` (raises KeyFileError naming the file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else "not UTF-8 text"
        raise KeyFileError(f"cannot read key file {path!r}: {why}") from None
    return parse_keys(text, f"key file {path!r}")
