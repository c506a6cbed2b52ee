"""The shared empty placeholders of a session's and a connection's queues and dicts, which
most idle clients never replace (issue 8, scenario 6: 10,000 idle connections).

Not compiled with the broker's hot modules (``relaymq.native_build``): ``NO_ENTRIES`` refuses
additions by overriding ``dict``'s methods, which a mypyc native subclass of ``dict`` ignores.
Compiled callers store into a dict that is not exactly a ``dict`` through its ``__setitem__``,
so the guard holds for them too.
"""

from __future__ import annotations

from collections import deque
from typing import NoReturn, TypeVar

#: What a queue holds until its first item: an empty deque costs about 760 bytes, and most
#: sessions of idle devices never queue anything (issue 8, scenario 6: 10,000 idle
#: connections). Reading works on it as on an empty deque; ``grown`` makes the deque before an
#: append (``Session.enqueue``/``spill``, ``Connection.acknowledge``).
NOTHING_QUEUED: tuple[()] = ()

_T = TypeVar("_T")


def grown(queue: deque[_T] | tuple[()]) -> deque[_T]:
    """``queue`` as a deque that can be appended to (a new one for :data:`NOTHING_QUEUED`)."""
    return queue if isinstance(queue, deque) else deque()


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


def made(entries: dict) -> dict:
    """``entries`` as a dict that can be added to (a new one for :data:`NO_ENTRIES`)."""
    return {} if entries is NO_ENTRIES else entries
