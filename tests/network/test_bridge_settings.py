"""``[[bridge]]`` validation (issue 17: "[[bridge]] blocks in TOML, validated, errors name the
key"; config brief: one line naming the key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relaymq.config import ConfigError, load_config

GOOD = '''
[[bridge]]
name = "hq"
host = "127.0.0.1"
port = 1884
protocol = "5"
topic = [ { pattern = "a/#", direction = "both", qos = 1, local_prefix = "l/", remote_prefix = "r/" } ]
'''


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("config error: ")
    return message


def test_a_bridge_loads_with_its_rules(tmp_path: Path) -> None:
    path = tmp_path / "relaymq.toml"
    path.write_text(GOOD)
    (bridge,) = load_config(str(path)).section("bridge")
    assert (bridge.name, bridge.host, bridge.port, bridge.protocol) == ("hq", "127.0.0.1", 1884, "5")
    assert bridge.remote_client_id == "relaymq-bridge-hq" and bridge.clean_session is False
    (rule,) = bridge.topic
    assert (rule.local_filter, rule.remote_filter, rule.inbound, rule.outbound) == ("l/a/#", "r/a/#", True, True)


def test_no_bridge_section_means_no_bridges() -> None:
    assert load_config(None).section("bridge") == ()


@pytest.mark.parametrize(("change", "key"), [
    (('direction = "both"', 'direction = "sideways"'), "bridge[0].topic[0].direction"),
    (("qos = 1", "qos = 3"), "bridge[0].topic[0].qos"),
    (('pattern = "a/#"', 'pattern = "a/#/b"'), "bridge[0].topic[0].pattern"),
    (('local_prefix = "l/"', 'local_prefix = "l/+/"'), "bridge[0].topic[0].local_prefix"),
    (("port = 1884", "port = 70000"), "bridge[0].port"),
    (('protocol = "5"', 'protocol = "3"'), "bridge[0].protocol"),
    (('name = "hq"', 'name = "h q"'), "bridge[0].name"),
    (('name = "hq"', 'name = "hq"\ncolour = "red"'), "bridge[0].colour"),
    (('qos = 1,', 'qos = 1, colour = 2,'), "bridge[0].topic[0].colour"),
    (('host = "127.0.0.1"\n', ''), "bridge[0].host"),
    (('name = "hq"', 'name = "hq"\npassword = "x"'), "bridge[0].username"),
    (('name = "hq"', 'name = "hq"\ntls_cert = "/etc/hostname"'), "bridge[0].tls_key"),
    (('name = "hq"', 'name = "hq"\ntls_ca = "/no/such/ca.pem"'), "bridge[0].tls_ca"),
    (('name = "hq"', 'name = "hq"\nreconnect_initial_ms = 5000\nreconnect_max_ms = 10'),
     "bridge[0].reconnect_max_ms"),
    (("topic = [", "topic = []\nx = ["), "bridge[0].topic"),
])
def test_a_bad_bridge_key_stops_start_up_naming_it(tmp_path: Path, change: tuple[str, str], key: str) -> None:
    old, new = change
    assert old in GOOD
    message = _error(tmp_path, GOOD.replace(old, new, 1))
    assert f" {key}" in message, message


def test_two_bridges_of_one_name_are_refused(tmp_path: Path) -> None:
    assert "bridge[1].name" in _error(tmp_path, GOOD + GOOD)
