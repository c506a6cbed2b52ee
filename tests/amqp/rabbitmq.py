"""A RabbitMQ broker (Debian's rabbitmq-server with its AMQP 1.0 plugin) started by the tests,
as an outside JMS provider for the JMS flow nodes: its own node name, data and log
directories, and loopback ports for AMQP, Erlang distribution and its own epmd; stopped (its
process group and its epmd) at the end."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harness import free_port, port_accepts

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
START_TIMEOUT = 90.0


def available() -> bool:
    return Path(SERVER).exists() and shutil.which("epmd") is not None


class RabbitMQ:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rabbitmq-"))
        self.port = free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = f"relaymq-test-{self.port}@localhost"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        (self.dir / "enabled_plugins").write_text("[rabbitmq_amqp1_0].\n")
        (self.dir / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\nloopback_users = none\nlog.console = true\n")
        return {**os.environ,
                "HOME": str(self.dir),  # the Erlang cookie lives here
                "RABBITMQ_NODENAME": self.node,
                "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
                "RABBITMQ_NODE_PORT": str(self.port),
                "RABBITMQ_DIST_PORT": str(self.dist_port),
                "ERL_EPMD_ADDRESS": "127.0.0.1",
                "ERL_EPMD_PORT": str(self.epmd_port),
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
                "RABBITMQ_MNESIA_BASE": str(self.dir / "mnesia"),
                "RABBITMQ_LOG_BASE": str(self.dir / "log"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.dir / "enabled_plugins"),
                "RABBITMQ_CONFIG_FILE": str(self.dir / "rabbitmq"),
                "RABBITMQ_PID_FILE": str(self.dir / "rabbitmq.pid")}

    def start(self) -> RabbitMQ:
        log = (self.dir / "server.log").open("ab")
        self.proc = subprocess.Popen([SERVER], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir)
        deadline = time.monotonic() + START_TIMEOUT
        while not port_accepts("127.0.0.1", self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"rabbitmq did not start: {self.log_tail()}")
            time.sleep(0.2)
        return self

    def log_tail(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        subprocess.run(["epmd", "-port", str(self.epmd_port), "-kill"], env=self.env, capture_output=True, timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
