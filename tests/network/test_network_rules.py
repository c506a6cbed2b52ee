"""The broker network's pure rules: [network] validation, the path rule, proxy subscriptions
and cycle detection (pubsub.md items 18, 40, 41; the end-to-end proofs are in
test_collectives.py and test_network_items.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relaymq.config import ConfigError, load_config
from relaymq.network.path import accept, with_hop
from relaymq.network.proxy import ProxyTable, proxy_client_id
from relaymq.network.settings import NeighborSettings
from relaymq.network.topology import Topology, announcement, parse_announcement

GOOD = '''
[network]
broker = "A"
neighbor = [
  { name = "B", host = "127.0.0.1", port = 1884, relation = "collective" },
  { name = "P", host = "127.0.0.1", port = 1885, relation = "parent" },
]
'''


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    return str(caught.value)


def test_network_section_loads(tmp_path: Path) -> None:
    path = tmp_path / "relaymq.toml"
    path.write_text(GOOD)
    network = load_config(str(path)).section("network")
    assert network.broker == "A" and [(n.name, n.relation) for n in network.neighbor] == [
        ("B", "collective"), ("P", "parent")]


@pytest.mark.parametrize(("change", "key", "why"), [
    (('name = "B"', 'name = "A"'), "network.neighbor[0].name", "not its own neighbour"),
    (('name = "P"', 'name = "B"'), "network.neighbor[1].name", "listed twice"),
    (('relation = "collective"', 'relation = "parent"'), "network.neighbor[1].relation", "two parents"),
    (('relation = "collective"', 'relation = "cousin"'), "network.neighbor[0].relation", "expected one of"),
    (('broker = "A"\n', ''), "network.broker", "needed with neighbours"),
    (("port = 1884", "port = 0"), "network.neighbor[0].port", "expected"),
])
def test_item40_what_this_broker_sees_of_a_cycle_stops_start_up(tmp_path: Path, change: tuple[str, str], key: str,
                                                                why: str) -> None:
    """Item 40 (locally visible part) and the config brief: one line naming the key."""
    message = _error(tmp_path, GOOD.replace(*change, 1))
    assert f" {key}" in message and why in message, message


def test_item40_41_path_rule() -> None:
    members = {"B", "C"}  # A's collective
    assert accept([], "A", "B", members)  # published on B
    assert not accept(["C"], "A", "B", members)  # B had it from C: A gets it from C itself
    assert accept(["D"], "A", "B", members)  # B had it from D across a gateway: only B passes it on
    assert not accept(["A"], "A", "D", members)  # a loop back to A
    assert with_hop([("k", "v")], "B") == [("k", "v"), ("relaymq-path", "B")]
    assert with_hop([("relaymq-path", "C")], "B") == [("relaymq-path", "C,B")]


def test_item41_one_proxy_per_filter_passed_on_across_but_not_within_a_collective() -> None:
    neighbors = (NeighborSettings("B", "h", relation="collective"), NeighborSettings("C", "h", relation="collective"),
                 NeighborSettings("D", "h", relation="gateway"))
    table = ProxyTable(neighbors)
    assert table.change(True, "t/#", "client-1", False) == [("B", "t/#", True), ("C", "t/#", True), ("D", "t/#", True)]
    assert table.change(True, "t/#", "client-2", False) == []  # one proxy per distinct filter
    assert table.change(True, "x", "client-3", True) == []  # a Local subscription is not proxied
    assert table.change(True, "$SYS/#", "client-3", False) == []
    # B's proxy subscription here goes on to D (across), not to C (same collective) nor back to B
    assert table.change(True, "b/#", proxy_client_id("B"), False) == [("D", "b/#", True)]
    assert table.change(False, "t/#", "client-1", False) == []
    assert table.change(False, "t/#", "client-2", False) == [("B", "t/#", False), ("C", "t/#", False),
                                                             ("D", "t/#", False)]


def test_item40_cycles_between_collectives_are_found() -> None:
    topology = Topology()
    for broker, neighbors in {"A": {"B": "collective", "C": "collective", "D": "gateway"},
                              "B": {"A": "collective", "C": "collective"},
                              "C": {"A": "collective", "B": "collective"},
                              "D": {"A": "gateway", "E": "collective"}, "E": {"D": "collective"}}.items():
        assert parse_announcement(*announcement(broker, neighbors)) == (broker, neighbors)
        topology.learn(broker, neighbors)
    assert not topology.on_cycle("A", "D")  # a tree of two collectives
    topology.learn("E", {"D": "collective", "B": "gateway"})  # a second join between the collectives
    assert topology.on_cycle("A", "D") and topology.on_cycle("E", "B")
    assert parse_announcement("relaymq/network/topology/X", b'{"broker": "Y", "neighbors": {}}') is None


def test_item41_a_neighbour_added_later_gets_the_proxies_of_what_is_subscribed_and_a_removed_one_withdraws_its_own(
        ) -> None:
    table = ProxyTable((NeighborSettings("B", "h", relation="collective"),))
    table.change(True, "t/#", "client-1", False)
    table.change(True, "b/#", proxy_client_id("B"), False)  # B's proxy subscription here
    assert table.add(NeighborSettings("D", "h", relation="gateway")) == ["b/#", "t/#"]
    assert table.remove("B") == [("D", "b/#", False)]  # B's interest is withdrawn from D
    assert table.change(True, "b2/#", proxy_client_id("B"), False) == []  # B is gone: not passed on
