"""Which publications a broker takes from a neighbour, and the path they carry (pure).

A publication crossing the network carries the brokers it went through, origin first, in the
MQTT 5 user property ``relaymq-path`` ("B,A"). Broker X, taking publication P from neighbour
M, drops it when:

- X is on P's path: it has been here (a loop);
- M is in X's collective and so is the broker M had P from: X gets P straight from that
  broker (a collective is fully connected, seed 003 l.115-170: "transported directly");
- P was published Local at its origin (item 18: never forwarded), marked ``relaymq-local``.

Otherwise X takes P and adds M to its path. With collectives joined in a tree (item 40),
every subscriber gets one copy.
"""

from __future__ import annotations

from collections.abc import Collection

from relaymq.pubsub.locality import LOCAL_PROPERTY, PATH_PROPERTY


def path_of(user_properties: list[tuple[str, str]]) -> list[str]:
    for key, value in user_properties:
        if key == PATH_PROPERTY:
            return [name for name in value.split(",") if name]
    return []


def is_local(user_properties: list[tuple[str, str]]) -> bool:
    return any(key == LOCAL_PROPERTY for key, _ in user_properties)


def accept(path: list[str], me: str, sender: str, collective: Collection[str]) -> bool:
    """May broker ``me`` take a publication from neighbour ``sender`` that went through
    ``path`` before reaching it? ``collective``: the other members of ``me``'s collective."""
    if me in path or sender in path:
        return False
    return not (path and sender in collective and path[-1] in collective)


def with_hop(user_properties: list[tuple[str, str]], sender: str) -> list[tuple[str, str]]:
    """The user properties with ``sender`` added to the path."""
    path = path_of(user_properties)
    rest = [(k, v) for k, v in user_properties if k != PATH_PROPERTY]
    return [*rest, (PATH_PROPERTY, ",".join([*path, sender]))]
