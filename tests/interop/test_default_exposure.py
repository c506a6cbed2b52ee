"""Who reaches a broker started without a configuration (issue 15 finding 2: "MQTT, HTTP
listeners on 0.0.0.0 with anonymous access; REST and the archive open to the network ...
Mosquitto 2.0 listens on 127.0.0.1 and ::1 only until configured otherwise"), through a real
``relaymq serve`` and real sockets. docs/security.md, "Defaults"."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import BrokerProcess, free_port, outside_address, port_accepts

from .clients import paho_client
from .test_http_front_door import wait_for_log

pytestmark = pytest.mark.interop


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


class Unconfigured:
    """``relaymq serve`` with no configuration file: only the ports and data dir moved."""

    def __init__(self, workdir: Path) -> None:
        self.port, self.http_port = free_port(), free_port()
        self.log_path = workdir / "broker.log"
        cmd = [sys.executable, "-m", "relaymq", "serve", "--port", str(self.port),
               "--http-port", str(self.http_port), "--channel-port", "0",
               "--data-dir", str(workdir / "data"), "--store", "memory"]
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not port_accepts("127.0.0.1", self.port):
            assert self.proc.poll() is None and time.monotonic() < deadline, self.log_path.read_text()
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


@pytest.fixture
def unconfigured(tmp_path: Path) -> Iterator[Unconfigured]:
    broker = Unconfigured(tmp_path)
    yield broker
    broker.stop()


def test_without_configuration_mqtt_and_http_listen_on_loopback_only(unconfigured: Unconfigured) -> None:
    """issue 15 finding 2: the default MQTT and HTTP listeners take 127.0.0.1 and ::1 (where
    the machine has it), not another address of the machine; one start-up line names the
    keys that open them."""
    for port in (unconfigured.port, unconfigured.http_port):
        assert port_accepts("127.0.0.1", port)
        if has_ipv6_loopback():
            assert port_accepts("::1", port), f"[::1]:{port} is not listening"
        outside = outside_address()
        if outside is not None:
            assert not port_accepts(outside, port), f"{outside}:{port} accepts connections"
    log = wait_for_log(unconfigured, "listening on the loopback interface only", 1)  # type: ignore[arg-type]
    line = next(x for x in log.splitlines() if "loopback interface only" in x)
    assert "listener[0].host" in line and "http.host" in line
    assert "WARNING" not in log


def test_a_network_listener_with_anonymous_access_and_no_tls_is_warned_about(broker_factory) -> None:
    """issue 15 ("a non-loopback listener with anonymous access or without TLS logs a
    warning"): [[listener]] host = "0.0.0.0" with allow_anonymous, and [http] on 0.0.0.0
    without a password file: one warning per reason, and the broker serves."""
    broker: BrokerProcess = broker_factory(store="memory", config={
        "access": {"allow_anonymous": True},
        "listener": [{"name": "default", "host": "0.0.0.0"}],
        "http": {"host": "0.0.0.0"}})
    log = wait_for_log(broker, "WARNING", 4)
    assert "listener[0] ('default', 0.0.0.0:" in log and "accepts anonymous clients from the network" in log
    assert "is open to the network without TLS" in log
    assert "the HTTP server (0.0.0.0:" in log and "answers anonymous REST calls from the network" in log
    assert "loopback interface only" not in log
    paho_client(broker, "v311").disconnect()


def _call(port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    status = conn.getresponse().status
    conn.close()
    return status


def test_flow_deploy_from_loopback_needs_the_administrators_credentials(unconfigured: Unconfigured,
                                                                        tmp_path: Path) -> None:
    """issue 15 finding 2 ("a flow deploy from loopback needs no credentials and runs the
    flow's Python in the broker"): with the embedded defaults an anonymous caller on loopback
    gets 403 for every admin route; the broker's administrator credential, made at the first
    start in the data directory with mode 0600, is what ``relaymq flow`` run from the
    broker's directory sends, as the README's commands do."""
    port = unconfigured.http_port
    flow = (b"flow: sneaky\nnodes:\n  In: {type: MQInput, queue: SYSTEM.DEFAULT.LOCAL.QUEUE}\n"
            b"  Run: {type: Compute, code: 'import os'}\nconnections:\n  - In.out -> Run\n")
    assert _call(port, "POST", "/relaymq/flows", flow, {"content-type": "application/yaml"}) == 403
    assert _call(port, "GET", "/relaymq/flows") == 403
    assert _call(port, "POST", "/ibmmq/rest/v3/admin/qmgr/QM1/queue", b'{"name": "X"}',
                 {"content-type": "application/json"}) == 403
    credentials = tmp_path / "data" / "admin.credentials"
    assert credentials.stat().st_mode & 0o777 == 0o600
    log = unconfigured.log_path.read_text()
    assert str(credentials) in log and credentials.read_text().split(":", 1)[1].strip() not in log
    done = subprocess.run([sys.executable, "-m", "relaymq", "flow", "list", "--url", f"http://127.0.0.1:{port}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
