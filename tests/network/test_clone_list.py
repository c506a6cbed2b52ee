"""Cloned brokers' list syntax and its configuration (pubsub.md item 43; seed 003 l.1139-1222),
without processes; the clone pair itself is in test_clones.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from relaymq.config import ConfigError, load_config
from relaymq.network import clone_list

PAIR = '''
[network]
broker = "broker1"
cloned_brokers = "broker2,QM2,broker3,QM3"
neighbor = [
  { name = "broker2", host = "127.0.0.1", port = 1884, relation = "collective" },
  { name = "broker3", host = "127.0.0.1", port = 1885, relation = "collective" },
]
'''


def test_item_43_the_seeds_list_syntax() -> None:
    """Seed 003 l.1147-1222: "broker2,QM2,broker3,QM3" sets, "+broker4,QM4" adds, "-broker3"
    removes, "" clears."""
    clones = clone_list.parse("broker2,QM2,broker3,QM3", "broker1")
    assert clones == {"broker2": "QM2", "broker3": "QM3"}
    clones = clone_list.apply(clones, "+broker4,QM4", "broker1")
    assert clone_list.render(clones) == "broker2,QM2,broker3,QM3,broker4,QM4"
    clones = clone_list.apply(clones, "-broker3", "broker1")
    assert clone_list.render(clones) == "broker2,QM2,broker4,QM4"
    assert clone_list.apply(clones, "", "broker1") == {}
    assert clone_list.apply(clones, "broker9,QM9", "broker1") == {"broker9": "QM9"}


@pytest.mark.parametrize(("value", "why"), [
    ("broker2", "pairs"),
    ("broker2,QM2,broker3", "pairs"),
    ("broker1,QM1", "its own clone"),
    ("broker2,QM2,broker2,QM2", "twice"),
    ("broker2,Q M2", "queue manager name"),
    ("broker2,,broker3,QM3", "empty name"),
])
def test_item_43_bad_lists_are_refused(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        clone_list.parse(value, "broker1")


def test_item_43_changes_that_make_no_sense_are_refused() -> None:
    clones = {"broker2": "QM2"}
    with pytest.raises(ValueError, match="already a clone"):
        clone_list.apply(clones, "+broker2,QM2", "broker1")
    with pytest.raises(ValueError, match="not a clone"):
        clone_list.apply(clones, "-broker7", "broker1")


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    return load_config(str(path)).section("network")


def test_item_43_cloned_brokers_in_the_configuration(tmp_path: Path) -> None:
    network = _load(tmp_path, PAIR)
    assert network.clones == {"broker2": "QM2", "broker3": "QM3"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("change", "why"), [
    (("broker2,QM2,broker3,QM3", "broker2,QM2,broker3"), "pairs"),
    (("broker2,QM2,broker3,QM3", "+broker2,QM2"), "whole list"),
    (("broker2,QM2,broker3,QM3", "broker2,QM2,broker9,QM9"), "no [[network.neighbor]]"),
    (('port = 1885, relation = "collective"', 'port = 1885, relation = "gateway"'), "relation"),
    (('port = 1885, relation = "collective"', 'port = 1885, relation = "collective", qmgr = "QMX"'),
     "queue manager is 'QM3' here but 'QMX'"),
])
def test_item_43_a_bad_clone_list_stops_start_up_naming_the_key(tmp_path: Path, change: tuple[str, str],
                                                                why: str) -> None:
    """The brief: invalid configuration stops start-up with a message naming the key."""
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, PAIR.replace(*change, 1))
    assert " network.cloned_brokers" in str(caught.value) and why in str(caught.value), str(caught.value)
