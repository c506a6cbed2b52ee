"""Name rules for queues and queue managers (everyplace.md item 6; seed 004 l.510-521, 825-837).

Characters 0-9 a-z A-Z _ . % only, at least one, no length limit; case sensitive (spec
README decision 5).
"""

from __future__ import annotations

import re

from relaymq.qmgr.errors import BadName

_NAME = re.compile(r"[0-9A-Za-z_.%]+\Z")


def is_valid_name(name: object) -> bool:
    """True when ``name`` is a usable queue or queue manager name."""
    return isinstance(name, str) and _NAME.match(name) is not None


def check_name(name: object, what: str = "queue") -> str:
    """``name`` if valid, else raise BadName saying which character is wrong."""
    if is_valid_name(name):
        return name  # type: ignore[return-value]
    if not isinstance(name, str) or not name:
        raise BadName(f"{what} name must be a non-empty string, got {name!r}")
    bad = next(c for c in name if not _NAME.match(c))
    raise BadName(f"{what} name {name!r} contains {bad!r}; allowed: 0-9 a-z A-Z _ . %")
