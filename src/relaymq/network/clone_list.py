"""The list of a broker's clones in the seed's syntax (seed 003 l.275-320, 1139-1222;
pubsub.md item 43), pure.

The value of ``clonedPubSubBrokerList`` (``[network] cloned_brokers`` here) is pairs of a
broker's name and its queue manager's name, all separated by commas::

    "broker2,QM2,broker3,QM3"    the clones are exactly these
    "+broker4,QM4"               broker4 (queue manager QM4) is a clone too
    "-broker3"                   broker3 is no clone any more
    ""                           no clones

The file gives the whole list; the admin API takes any of the four forms as a change.
"""

from __future__ import annotations

from relaymq.config import name_check
from relaymq.qmgr.names import is_valid_name

#: Clones: broker name -> its queue manager's name, in the order given.
Clones = dict[str, str]


def _items(value: str) -> list[str]:
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ValueError(f"{value!r}: an empty name between commas")
    return items


def _pairs(value: str, me: str) -> Clones:
    items = _items(value)
    if len(items) % 2:
        raise ValueError(f"{value!r}: pairs of broker,queue manager are expected (an odd number of names)")
    clones: Clones = {}
    for broker, qmgr in zip(items[::2], items[1::2], strict=True):
        why = name_check(broker)
        if why is not None:
            raise ValueError(f"{broker!r} is not a broker name: {why}")
        if not is_valid_name(qmgr):
            raise ValueError(f"{qmgr!r} is not a queue manager name (0-9 a-z A-Z _ . %)")
        if broker == me:
            raise ValueError(f"{broker!r} is this broker: a broker is not its own clone")
        if broker in clones:
            raise ValueError(f"{broker!r} is listed twice")
        clones[broker] = qmgr
    return clones


def parse(value: str, me: str) -> Clones:
    """The whole list (``""``: none). Raises ValueError saying what is wrong."""
    if value.startswith(("+", "-")):
        raise ValueError(f"{value!r}: '+' and '-' change a running broker's list; give the whole list here")
    return _pairs(value, me) if value else {}


def apply(current: Clones, change: str, me: str) -> Clones:
    """``current`` after the change ``change`` in any of the four forms. Raises ValueError."""
    if change.startswith("+"):
        added = _pairs(change[1:], me)
        again = [broker for broker in added if broker in current]
        if again:
            raise ValueError(f"{', '.join(again)} already a clone")
        return {**current, **added}
    if change.startswith("-"):
        removed = _items(change[1:])
        unknown = [broker for broker in removed if broker not in current]
        if unknown:
            raise ValueError(f"{', '.join(unknown)} not a clone")
        return {broker: qmgr for broker, qmgr in current.items() if broker not in removed}
    return parse(change, me)


def render(clones: Clones) -> str:
    """The list in the seed's syntax."""
    return ",".join(f"{broker},{qmgr}" for broker, qmgr in clones.items())
