"""Writing a file of secrets or rules (the password file, the authorities file): atomically and
readable by its owner only.

A temporary file in the same directory, mode 0600 from its creation, flushed and fsynced, then
renamed over the old one, then the directory fsynced: a reader (the broker re-reading the file)
never sees half a file, a crash leaves the old file or the new one, and no other user can read
the hashes or the grants at any moment.
"""

from __future__ import annotations

import os


def write_private(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8), atomically, mode 0600 (module docstring)."""
    import tempfile  # a write is rare: a broker that writes no file does not import it (issue 16)

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    directory_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)
