"""``NO_ENTRIES``: the shared empty dict a session's and a connection's dicts hold until their
first entry (``session.made`` makes the dict before the first addition), which refuses
additions.

A module of its own, not compiled with the broker's hot modules (``relaymq.native_build``): a
mypyc native subclass of ``dict`` ignores the overrides that make it refuse. Compiled callers
store into a dict that is not exactly a ``dict`` through its ``__setitem__``, so the guard
holds for them too.
"""

from __future__ import annotations

from typing import NoReturn


class _NoEntries(dict):
    """An empty dict nothing can be added to: reading, ``pop``, ``clear`` and ``del`` work as
    on any empty dict, adding raises (the caller forgot ``made``)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("NO_ENTRIES is shared: made() gives the dict to add to")

    __setitem__ = setdefault = update = __ior__ = _refuse


#: What a per-connection or per-session dict holds until its first entry (an empty dict costs
#: 64 bytes, and an idle client's stay empty: issue 8, scenario 6); ``made`` makes the dict
#: before the first addition.
NO_ENTRIES: dict = _NoEntries()
