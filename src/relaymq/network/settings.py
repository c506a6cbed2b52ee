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

A collective is a fully connected set: every member lists every other with relation
``collective``. ``parent``/``child`` join a hierarchy, ``gateway`` joins two collectives through
one broker each. What this broker can see of a cycle is refused at start-up (item 40): itself
as a neighbour, a neighbour twice, two parents. Cycles through other brokers are found at run
time (``topology.py``). Cloned brokers (item 43) are not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.bridge.settings import host_check, name_check
from relaymq.config import ConfigError, boolean, build_section, int_range, key_field, one_of, text
from relaymq.net.binding import MAX_PORT

RELATIONS = ("collective", "parent", "child", "gateway")


def _optional_name(value: object) -> str | None:
    return None if value == "" else name_check(value)


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
    return NetworkSettings(settings.broker, settings.admin_remote, tuple(neighbors))
