"""The [amqp] section: every key checked, a mistake or a port in use stops start-up with one
line naming the key (the bar: invalid configuration stops start-up naming the key).

Spec: issue 20 (the listener's configuration: port 5672, TLS 5671, prefixes).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness import free_port, to_toml

from relaymq.amqp.settings import AmqpSettings, build
from relaymq.config import ConfigError


def test_defaults_are_off_on_localhost_5672() -> None:
    """Off by default (docs/amqp.md says why); when on, localhost:5672, TLS 5671."""
    settings = build(None, "amqp", None)
    assert settings == AmqpSettings()
    assert (settings.enabled, settings.host, settings.port, settings.tls_port) == (False, "localhost", 5672, 5671)
    assert (settings.queue_prefix, settings.topic_prefix) == ("queue://", "topic://")


@pytest.mark.parametrize(("table", "key"), [
    ({"port": 70000}, "amqp.port"),
    ({"credit": 0}, "amqp.credit"),
    ({"enabled": "yes"}, "amqp.enabled"),
    ({"tls_cert": "/etc/hostname"}, "amqp.tls_key"),
    ({"queue_prefix": "x://", "topic_prefix": "x://"}, "amqp.topic_prefix"),
    ({"no_such_key": 1}, "amqp.no_such_key"),
])
def test_bad_values_name_their_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as error:
        build(table, "amqp", None)
    assert error.value.key == key


def _serve(tmp_path: Path, amqp: dict[str, object]) -> subprocess.CompletedProcess[str]:
    config = {"listener": [{"name": "default", "host": "127.0.0.1"}],
              "http": {"host": "127.0.0.1", "port": free_port()},
              "qmgr": {"channel_host": "127.0.0.1", "channel_port": free_port()},
              "amqp": amqp}
    (tmp_path / "relaymq.toml").write_text(to_toml(config))
    return subprocess.run([sys.executable, "-m", "relaymq", "serve", "--config", str(tmp_path / "relaymq.toml"),
                           "--port", str(free_port()), "--data-dir", str(tmp_path / "data"), "--store", "memory"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_port_in_use_stops_start_up_naming_the_key(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path, {"enabled": True, "host": "127.0.0.1", "port": port})
    assert done.returncode == 1
    assert "amqp.port" in done.stderr


def test_bad_key_stops_start_up(tmp_path: Path) -> None:
    done = _serve(tmp_path, {"enabled": True, "port": "5672"})
    assert done.returncode != 0
    assert "amqp.port" in done.stderr
