"""Small files the flows service keeps under the data directory (deployed flows, hardened
backout counts): written whole and atomically, so a crash leaves the old file or the new
one, never half of one."""

from __future__ import annotations

import os


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, fsynced, then renamed."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()
