"""Item 47: the broker's multicast parameters, their defaults and ranges (seed 003 l.568-1084),
checked when the broker starts: a bad value stops ``relaymq serve`` with one line naming the
key."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from multicast.receivers import SRC

from relaymq.config import ConfigError
from relaymq.multicast.settings import MulticastSettings, build


def test_item_47_defaults_are_the_seeds() -> None:
    """Item 47, seed 003 l.580-633, 811-890, 1046-1080: address range 239.255.0.0-239.255.255.255,
    port 34343, packet 7000 bytes, heartbeat timeout 20 s, TTL 1, Accept, root Disabled, Reliable."""
    s = build(None, "multicast", None)
    assert s == MulticastSettings()
    assert (s.enabled, s.address_range_min, s.address_range_max, s.data_port, s.packet_size) == (
        False, "239.255.0.0", "239.255.255.255", 34343, 7000)
    assert (s.heartbeat_timeout, s.ttl, s.overlapping_topic_behavior, s.root, s.root_quality) == (
        20, 1, "Accept", "Disabled", "Reliable")
    assert (s.backoff_time_ms, s.nack_check_period_ms, s.packet_buffers, s.socket_buffer_size_kb) == (100, 300, 500, 3000)
    assert (s.minimal_history_kb, s.nack_accumulation_ms, s.limit_trans_rate) == (60000, 500, "Disabled")
    topic = build({"topic": [{"topic": "a/b"}]}, "multicast", None).topics[0]
    assert (topic.enabled, topic.group, topic.quality) == ("Inherit", "auto", "Reliable")


BAD = [
    ("packet_size = 499", "multicast.packet_size"),
    ("packet_size = 32001", "multicast.packet_size"),
    ("ttl = 0", "multicast.ttl"),
    ("ttl = 256", "multicast.ttl"),
    ('address_range_min = "10.0.0.1"', "multicast.address_range_min"),
    ('address_range_min = "239.255.1.0"\naddress_range_max = "239.255.0.255"', "multicast.address_range_max"),
    ('overlapping_topic_behavior = "Ignore"', "multicast.overlapping_topic_behavior"),
    ('protocol_type = "PGM/IP"', "multicast.protocol_type"),
    ("backoff_time_ms = 1001", "multicast.backoff_time_ms"),
    ("nack_check_period_ms = 9", "multicast.nack_check_period_ms"),
    ("packet_buffers = 0", "multicast.packet_buffers"),
    ("socket_buffer_size_kb = 64", "multicast.socket_buffer_size_kb"),
    ("minimal_history_kb = 999", "multicast.minimal_history_kb"),
    ("nack_accumulation_ms = 49", "multicast.nack_accumulation_ms"),
    ("trans_rate_limit_kbps = 9", "multicast.trans_rate_limit_kbps"),
    ('root = "Inherit"', "multicast.root"),
    ('[[multicast.topic]]\ntopic = "a/#"\nenabled = "Enabled"', "multicast.topic[0].topic"),
    ('[[multicast.topic]]\ntopic = "a"\ngroup = "239.254.0.1"', "multicast.topic[0].group"),
    ('[[multicast.topic]]\ntopic = "a"\nquality = "Best"', "multicast.topic[0].quality"),
    ('[[multicast.topic]]\ntopic = "a"\nenabled = "yes"', "multicast.topic[0].enabled"),
]


@pytest.mark.parametrize(("line", "key"), BAD, ids=[key + ":" + line.split("\n")[-1] for line, key in BAD])
def test_item_47_bad_parameter_is_refused_naming_the_key(line: str, key: str) -> None:
    """Item 47, seed 003 l.580-1084 (each parameter's range): the section refuses it, naming
    the key."""
    table = tomllib.loads(f"[multicast]\nenabled = true\n{line}\n")["multicast"]
    with pytest.raises(ConfigError) as refused:
        build(table, "multicast", None)
    assert refused.value.key == key


@pytest.mark.parametrize(("line", "key"), [BAD[0], BAD[2], BAD[-3]], ids=["packet_size", "ttl", "topic.group"])
def test_item_47_bad_parameter_stops_start_up_naming_the_key(tmp_path, line: str, key: str) -> None:
    """Item 47, seed 003 l.580-1084: ``relaymq serve`` exits 2 with "config error: <key>: ..."
    before it listens."""
    config = tmp_path / "relaymq.toml"
    config.write_text(f"[multicast]\nenabled = true\n{line}\n")
    done = subprocess.run([sys.executable, "-m", "relaymq", "serve", "--config", str(config), "--port", "0",
                           "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 2, done.stderr
    assert f"config error: {key}:" in done.stderr
