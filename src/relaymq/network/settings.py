"""``[network]``: this broker's place in a broker network (seed 003 l.115-220, 275-320;
pubsub.md items 40, 43)::

    [network]
    broker = "A"                       # this broker's name in the network

    [[network.neighbor]]
    name = "B"                         # the neighbour's [network] broker name
    host = "127.0.0.1"                 # its MQTT listener
    port = 1884
    relation = "collective"            # collective | parent | child | gateway
    username = ""                      # credentials for its MQTT listener
    password = ""
    tls = false
    tls_ca = ""
    qmgr = ""                          # its queue manager: persistent publications between
                                       # the two go over the queue managers' channel
                                       # (assured.py; a [[qmgr.connection]] of that name)

A collective is a fully connected set: every member lists every other with relation
``collective``. ``parent``/``child`` join a hierarchy, ``gateway`` joins two collectives through
one broker each. What this broker can see of a cycle is refused at start-up (item 40): itself
as a neighbour, a neighbour twice, two parents. Cycles through other brokers are found at run
time (``topology.py``).

Cloned brokers (item 43, ``clone_list.py``) in the seed's list syntax::

    [network]
    broker = "broker1"
    cloned_brokers = "broker2,QM2"     # broker,queue manager pairs: this broker's clones

Each clone is also a neighbour with relation ``collective`` (clones are fully interconnected
and publications go directly between them); its subscription table is replicated here and
this broker's there (``clones.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from relaymq.config import (ConfigError, boolean, build_section, host_check, int_range, key_field, name_check,
                            one_of, text)
from relaymq.network import clone_list
from relaymq.qmgr.names import is_valid_name
from relaymq.net.binding import MAX_PORT

RELATIONS = ("collective", "parent", "child", "gateway")


def _optional_name(value: object) -> str | None:
    return None if value == "" else name_check(value)


def _optional_qmgr(value: object) -> str | None:
    return None if value == "" or is_valid_name(value) else "\"\" or a queue manager name (0-9 a-z A-Z _ . %)"


@dataclass(frozen=True)
class NeighborSettings:
    """One ``[[network.neighbor]]``."""

    name: str = key_field("", name_check)
    host: str = key_field("", host_check)
    port: int = key_field(1883, int_range(1, MAX_PORT))
    relation: str = key_field("collective", one_of(*RELATIONS))
    username: str = key_field("", text)
    password: str = key_field("", text)
    tls: bool = key_field(False, boolean)
    tls_ca: str = key_field("", text, path="file")
    reconnect_initial_ms: int = key_field(200, int_range(1, 3_600_000))
    reconnect_max_ms: int = key_field(5000, int_range(1, 3_600_000))
    #: Its queue manager: persistent publications go over the channel to it (assured.py).
    qmgr: str = key_field("", _optional_qmgr)

    @property
    def in_collective(self) -> bool:
        return self.relation == "collective"

    def __repr__(self) -> str:
        shown = {f: ("***" if f == "password" and v else v) for f, v in self.__dict__.items()}
        return "NeighborSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


@dataclass(frozen=True)
class NetworkSettings:
    """``[network]``; no neighbours: a broker on its own."""

    broker: str = key_field("", _optional_name)
    #: The admin routes (network/admin.py) from other addresses than the loopback interface.
    admin_remote: bool = key_field(False, boolean)
    neighbor: tuple[NeighborSettings, ...] = key_field((), lambda v: None)
    #: Item 43: this broker's clones, ``"broker,qm,broker,qm"`` (seed 003 l.1139-1222).
    cloned_brokers: str = key_field("", text)

    @property
    def clones(self) -> clone_list.Clones:
        return clone_list.parse(self.cloned_brokers, self.broker)


def clone_problem(clones: clone_list.Clones, neighbors: tuple[NeighborSettings, ...]) -> str | None:
    """Why ``clones`` cannot be this broker's clones with these neighbours, or None."""
    relations = {n.name: n.relation for n in neighbors}
    qmgrs = {n.name: n.qmgr for n in neighbors}
    for broker, qmgr in clones.items():
        if broker not in relations:
            return f"{broker!r} is no [[network.neighbor]]: a clone is reached as a neighbour"
        if relations[broker] != "collective":
            return (f"{broker!r} is a {relations[broker]} neighbour: a clone must be one with relation"
                    " \"collective\" (clones are fully interconnected)")
        if qmgrs[broker] and qmgrs[broker] != qmgr:
            return f"{broker!r}'s queue manager is {qmgr!r} here but {qmgrs[broker]!r} in its [[network.neighbor]] qmgr"
    return None


def build(raw: object, key: str, base_dir: str | None) -> NetworkSettings:
    if raw is None:
        return NetworkSettings()
    if not isinstance(raw, dict):
        raise ConfigError(key, "expected a table")
    table = dict(raw)
    neighbors_raw = table.pop("neighbor", [])
    settings = build_section(NetworkSettings, table, key, base_dir)
    if not isinstance(neighbors_raw, list):
        raise ConfigError(f"{key}.neighbor", "expected [[network.neighbor]] tables")
    neighbors: list[NeighborSettings] = []
    for index, item in enumerate(neighbors_raw):
        neighbors.append(_neighbor(item, f"{key}.neighbor[{index}]", base_dir, settings.broker, neighbors))
    if neighbors and not settings.broker:
        raise ConfigError(f"{key}.broker", "needed with neighbours: this broker's name in the network")
    settings = dataclasses.replace(settings, neighbor=tuple(neighbors))
    _check_clones(settings, key)
    return settings


def _neighbor(item: object, item_key: str, base_dir: str | None, broker: str,
              earlier: list[NeighborSettings]) -> NeighborSettings:
    """One [[network.neighbor]], checked against this broker and the neighbours before it."""
    for required in ("name", "host", "port"):
        if isinstance(item, dict) and required not in item:
            raise ConfigError(f"{item_key}.{required}", "missing: every neighbour needs name, host and port")
    neighbor = build_section(NeighborSettings, item, item_key, base_dir)
    if neighbor.name == broker:
        raise ConfigError(f"{item_key}.name", f"{neighbor.name!r} is this broker (network.broker): a broker is"
                                              " not its own neighbour")
    if any(n.name == neighbor.name for n in earlier):
        raise ConfigError(f"{item_key}.name", f"{neighbor.name!r} is listed twice: two connections to one"
                                              " broker make publications cycle (item 40)")
    if neighbor.password and not neighbor.username:
        raise ConfigError(f"{item_key}.username", "password is set but username is not (both are needed)")
    if neighbor.relation == "parent" and any(n.relation == "parent" for n in earlier):
        raise ConfigError(f"{item_key}.relation", "a second parent: a hierarchy is a tree, two parents make"
                                                  " publications cycle (item 40)")
    return neighbor


def _check_clones(settings: NetworkSettings, key: str) -> None:
    """``cloned_brokers`` parses, and each clone is a collective neighbour (item 43)."""
    try:
        clones = settings.clones
    except ValueError as err:
        raise ConfigError(f"{key}.cloned_brokers", str(err)) from None
    if clones and not settings.broker:
        raise ConfigError(f"{key}.broker", "needed with cloned_brokers: this broker's name in the network")
    why = clone_problem(clones, settings.neighbor)
    if why is not None:
        raise ConfigError(f"{key}.cloned_brokers", why)
