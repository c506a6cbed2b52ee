"""Fixtures for the command-line tests: run ``python -m relaymq ...`` as a real subprocess, and
start a real broker for ``relaymq pub``/``relaymq sub`` to talk to.

Which broker: ``RELAYMQ_TEST_BROKER`` as for the whole suite (``relaymq`` by default; set it
to ``mosquitto`` to validate the clients against the reference broker instead). The broker is
started by the shared harness (tests/harness.py), fresh for each test.

No test sleeps to let something happen: a subscriber is "ready" when its debug output (``-d``)
shows the SUBACK, and processes are waited for with generous timeouts that only guard against
a hang.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli_helpers import PROCESS_TIMEOUT, Background, CliResult, RunCli, TlsBroker, relaymq_command
from harness import BrokerProcess, free_port

CLI_BROKER_KIND = os.environ.get("RELAYMQ_TEST_BROKER", "relaymq")



@pytest.fixture
def run_cli() -> RunCli:
    """Run ``relaymq ARGS...`` to completion: ``run_cli("pub", "-t", "a", input=b"...")``."""

    def run(*args: str, input: bytes | None = None) -> CliResult:
        done = subprocess.run(
            relaymq_command(*args),
            input=input if input is not None else b"",
            capture_output=True,
            timeout=PROCESS_TIMEOUT,
        )
        return CliResult(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))

    return run


@pytest.fixture
def mqtt_broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    """A fresh broker (anonymous clients allowed) for pub/sub end-to-end tests."""
    return broker_factory(kind=CLI_BROKER_KIND, store="memory")


@pytest.fixture
def closed_broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    """A broker that refuses anonymous clients (no password file: every CONNECT is refused)."""
    return broker_factory(kind=CLI_BROKER_KIND, store="memory", config={"access": {"allow_anonymous": False}})


@pytest.fixture
def background() -> Iterator[Callable[..., Background]]:
    """Start relaymq clients in the background; any still running are killed at teardown."""
    started: list[Background] = []

    def start(*args: str) -> Background:
        client = Background(list(args))
        started.append(client)
        return client

    yield start
    for client in started:
        client.stop()


@pytest.fixture
def subscriber(background: Callable[..., Background]) -> Callable[..., Background]:
    """Start ``relaymq sub ARGS...`` and return once the broker has acknowledged the
    subscription, so that anything published afterwards must reach it."""

    def start(*args: str) -> Background:
        client = background("sub", *args)
        client.wait_for_debug("Received SUBACK")
        return client

    return start


def _make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for DNS:localhost, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, server_key, server_cert = directory / "ca.pem", directory / "server.key", directory / "server.pem"
    (directory / "san.ext").write_text("subjectAltName=DNS:localhost\n")
    steps = [
        ["req", "-x509", *ec, "-keyout", str(directory / "ca.key"), "-out", str(ca), "-subj", "/CN=relaymq test CA", "-days", "2"],
        ["req", *ec, "-keyout", str(server_key), "-out", str(directory / "server.csr"), "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", str(directory / "server.csr"), "-CA", str(ca), "-CAkey", str(directory / "ca.key"),
         "-CAcreateserial", "-out", str(server_cert), "-days", "2", "-extfile", str(directory / "san.ext")],
    ]
    for step in steps:
        subprocess.run(["openssl", *step], check=True, capture_output=True, timeout=PROCESS_TIMEOUT)
    return ca, server_cert, server_key


@pytest.fixture
def tls_broker(broker_factory: Callable[..., BrokerProcess], tmp_path: Path) -> TlsBroker:
    """A broker of the selected kind with an extra TLS listener, configured in its own terms."""
    ca, cert, key = _make_certificates(tmp_path)
    tls_port = free_port()
    if CLI_BROKER_KIND == "mosquitto":
        # Raw options land before the harness's own listener line, so these three lines form a
        # listener block of their own.
        config: dict[str, object] = {
            "mosquitto": {"listener": f"{tls_port} 127.0.0.1", "certfile": str(cert), "keyfile": str(key)}
        }
    else:
        config = {
            "listener": [
                {"name": "default", "host": "127.0.0.1"},
                {"name": "tls", "host": "127.0.0.1", "port": tls_port, "tls_cert": str(cert), "tls_key": str(key)},
            ]
        }
    broker = broker_factory(kind=CLI_BROKER_KIND, store="memory", config=config)
    return TlsBroker(broker, tls_port, ca)
