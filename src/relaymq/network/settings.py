"""``[network]``: this broker's place in a broker network (seed 003 l.115-220, 275-320;
pubsub.md items 40, 43)::

    [network]
    broker = "A"                       # this broker's name in the network
    clones = ""                        # the seed's list: "broker2,QM2,broker3,QM3" (item 43)

    [[network.neighbor]]
    name = "B"                         # the neighbour's [network] broker name
    host = "127.0.0.1"                 # its MQTT listener
    port = 1884
    relation = "collective"            # collective | parent | child | gateway
    username = ""                      # credentials for its MQTT listener
    password = ""
    tls = false
    tls_ca = ""

A collective is a fully connected set: every member lists every other with relation
``collective``. ``parent``/``child`` join a hierarchy, ``gateway`` joins two collectives through
one broker each. What this broker can see of a cycle is refused at start-up (item 40): itself
as a neighbour, a neighbour twice, two parents, a clone that is not a neighbour in the same
collective or tree. Cycles through other brokers are found at run time (``topology.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.config import (
    ConfigError,
    boolean,
    build_section,
    int_range,
    key_field,
    one_of,
    text,
)

RELATIONS = ("collective", "parent", "child", "gateway")


def _name(value: object) -> str | None:
    if isinstance(value, str) and value and all(c.isalnum() or c in "-_." for c in value):
        return None
    return "a broker name of letters, digits, - _ ."


def _optional_name(value: object) -> str | None:
    return None if value == "" else _name(value)


def _host(value: object) -> str | None:
    return None if isinstance(value, str) and value and " " not in value else "a host name or address"


def parse_clone_list(value: str, current: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[str, str], ...]:
    """The seed's ``clonedPubSubBrokerList`` (003 l.1139-1222): ``"broker2,QM2,broker3,QM3"``
    sets the list, ``"+broker4,QM4"`` adds to ``current``, ``"-broker3"`` removes, ``""``
    clears. Raises ValueError with what is wrong."""
    value = value.strip()
    if not value:
        return ()
    if value.startswith("-"):
        names = [name.strip() for name in value[1:].split(",")]
        for name in names:
            if _name(name) is not None:
                raise ValueError(f"{name!r} is not a broker name")
        return tuple(pair for pair in current if pair[0] not in names)
    adding = value.startswith("+")
    items = [item.strip() for item in (value[1:] if adding else value).split(",")]
    if len(items) % 2:
        raise ValueError("expected pairs of broker name and queue manager name")
    pairs = [(items[i], items[i + 1]) for i in range(0, len(items), 2)]
    for broker, qmgr in pairs:
        if _name(broker) is not None or _name(qmgr) is not None:
            raise ValueError(f"{broker!r},{qmgr!r} is not a broker name and a queue manager name")
    result = [pair for pair in current if pair[0] not in {b for b, _ in pairs}] if adding else []
    result.extend(pairs)
    if len({b for b, _ in result}) != len(result):
        raise ValueError("a broker is listed twice")
    return tuple(result)


def _clone_list(value: object) -> str | None:
    if not isinstance(value, str):
        return 'the list "broker,qm,broker,qm,..." (or "")'
    try:
        parse_clone_list(value)
    except ValueError as exc:
        return f'the list "broker,qm,broker,qm,..." ({exc})'
    if value.strip().startswith(("+", "-")):
        return 'the whole list "broker,qm,..." (+ and - change it at run time)'
    return None


@dataclass(frozen=True)
class NeighborSettings:
    """One ``[[network.neighbor]]``."""

    name: str = key_field("", _name)
    host: str = key_field("", _host)
    port: int = key_field(1883, int_range(1, 65535))
    relation: str = key_field("collective", one_of(*RELATIONS))
    username: str = key_field("", text)
    password: str = key_field("", text)
    tls: bool = key_field(False, boolean)
    tls_ca: str = key_field("", text, path="file")
    reconnect_initial_ms: int = key_field(200, int_range(1, 3_600_000))
    reconnect_max_ms: int = key_field(5000, int_range(1, 3_600_000))

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
    clones: str = key_field("", _clone_list)
    neighbor: tuple[NeighborSettings, ...] = key_field((), lambda v: None)

    def clone_list(self) -> tuple[tuple[str, str], ...]:
        return parse_clone_list(self.clones)


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
        item_key = f"{key}.neighbor[{index}]"
        for required in ("name", "host", "port"):
            if isinstance(item, dict) and required not in item:
                raise ConfigError(f"{item_key}.{required}", "missing: every neighbour needs name, host and port")
        neighbor = build_section(NeighborSettings, item, item_key, base_dir)
        if neighbor.name == settings.broker:
            raise ConfigError(f"{item_key}.name", f"{neighbor.name!r} is this broker (network.broker): a broker is"
                                                  " not its own neighbour")
        if any(n.name == neighbor.name for n in neighbors):
            raise ConfigError(f"{item_key}.name", f"{neighbor.name!r} is listed twice: two connections to one"
                                                  " broker make publications cycle (item 40)")
        if neighbor.password and not neighbor.username:
            raise ConfigError(f"{item_key}.username", "password is set but username is not (both are needed)")
        if neighbor.relation == "parent" and any(n.relation == "parent" for n in neighbors):
            raise ConfigError(f"{item_key}.relation", "a second parent: a hierarchy is a tree, two parents make"
                                                      " publications cycle (item 40)")
        neighbors.append(neighbor)
    if neighbors and not settings.broker:
        raise ConfigError(f"{key}.broker", "needed with neighbours: this broker's name in the network")
    names = {n.name for n in neighbors}
    for clone, _qmgr in settings.clone_list():
        if clone == settings.broker:
            raise ConfigError(f"{key}.clones", f"{clone!r} is this broker")
        if clone not in names:
            raise ConfigError(f"{key}.clones", f"{clone!r} is not a neighbour ([[network.neighbor]])")
    return NetworkSettings(settings.broker, settings.clones, tuple(neighbors))
