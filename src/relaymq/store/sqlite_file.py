"""Opening an SQLite file that belongs to relaymq: the broker's store, a queue manager's store
and the message log all open their file here.

Each kind of file is marked with its own ``PRAGMA application_id`` and versioned with
``PRAGMA user_version``. A file is refused when it belongs to something else, when its schema is
newer than this relaymq knows, or when it has tables but no version (not ours). A new or older
file is brought up to date in ONE transaction: the tables and both marks commit together, so a
process killed while creating the file leaves either nothing or a complete, marked schema, never
a file that the next start would refuse.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import cast

SYNCHRONOUS_MODES = ("FULL", "EXTRA", "NORMAL")

# Bound values of these types are stored as they are (a BLOB, NULL), as without an adapter. Why
# register one: the sqlite3 module binds int, float, str and bytearray directly but looks every
# other value (bytes, None) up for adaptation, and that look-up ends in an AttributeError raised,
# formatted and cleared (``PrepareProtocol.__adapt__``) for each value bound: four per message a
# queue puts (payload, MsgId, CorrelId, no expiry), 10% of the writer thread's instructions
# (callgrind, bench_engine put+get). An adapter found in the registry is called instead, and
# these two are C callables that hand the value back. Process-wide, as the registry is.
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), cast(Callable[[None], None], {}.get))  # {}.get(None) is None


class DatabaseFileError(Exception):
    """The file cannot be used; ``str()`` is one line naming the file and the reason."""


def open_database(
    path: str,
    *,
    application_id: int,
    schema_version: int,
    migrations: Mapping[int, Sequence[str | Callable[[sqlite3.Connection], None]]],
    synchronous: str,
    what: str,
    legacy: Mapping[int, Callable[[sqlite3.Connection], None]] | None = None,
) -> sqlite3.Connection:
    """Connect in autocommit mode with WAL, check the marks, apply the missing migrations.

    ``migrations[n]`` holds the steps that take a file from version n-1 to n (SQL statements,
    or functions of the connection, run in the same transaction); ``what``
    names the kind of file in errors ("relaymq store", ...); ``synchronous`` is one of
    SYNCHRONOUS_MODES (callers check it: a wrong one is a caller's bug). ``legacy`` maps the
    application id of a kind of file an earlier version wrote (at schema version 1) to what
    makes it a file of this kind: it runs in the migration's transaction, then every migration
    does (they must allow tables the adopted file already has).
    """
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise DatabaseFileError(f"cannot open {what} {path!r}: {exc}") from exc
    try:
        found_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        adopt = (legacy or {}).get(found_id)
        if adopt is not None:
            if version > 1:
                raise DatabaseFileError(f"{path!r} was written by a newer relaymq (schema {version}); "
                                        "use a newer relaymq")
        elif found_id not in (0, application_id) or (version == 0 and tables):
            raise DatabaseFileError(f"{path!r} is an SQLite database but not a {what}")
        elif version > schema_version:
            raise DatabaseFileError(
                f"{what} {path!r} has schema version {version}, newer than this relaymq knows"
                f" ({schema_version}); use a newer relaymq")
        conn.execute("PRAGMA busy_timeout = 5000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise DatabaseFileError(f"{what} {path!r}: cannot use write-ahead logging (journal mode stays {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA journal_size_limit = 67108864")  # shrink the WAL back after a burst
        if adopt is not None or version < schema_version:
            conn.execute("BEGIN IMMEDIATE")
            if adopt is not None:
                adopt(conn)
                version = 0
            for step in range(version + 1, schema_version + 1):
                for statement in migrations[step]:
                    if callable(statement):
                        statement(conn)
                    else:
                        conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {application_id}")
            conn.execute(f"PRAGMA user_version = {schema_version}")
            conn.execute("COMMIT")
        return conn
    except DatabaseFileError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise DatabaseFileError(f"cannot open {what} {path!r}: {exc}") from exc
