"""The three brokers of bench/compare, started alike: own port, own data directory, persistence on.

relaymq and Mosquitto come from the test harness (tests/harness.py: BrokerProcess writes their
configs and knows when they are ready); amqtt is added here as a subclass with its YAML config.
Settings are chosen to be comparable, not flattering. What each broker gets, and what its PUBACK
to a QoS 1 publisher promises when the subscriber has a persistent session (scenarios 2, 3, 5):

* relaymq: SQLite store, default ``sqlite_synchronous = FULL``; ``[limits] max_inflight = 100``,
  ``max_queued_messages = 1000000``, ``max_stored_messages = 2000000``. PUBACK after the
  delivery for the persistent session is committed and fsynced (group commit): durable.
* Mosquitto: ``persistence true`` with a data directory, default ``autosave_interval`` (1800 s);
  ``max_inflight_messages 100``, ``max_queued_messages 1000000``. PUBACK once the message is
  queued in memory; the database is written every autosave interval and at shutdown, so a
  crash loses what came since the last save.
* amqtt 0.12: its SQLite session plugin ``amqtt.contrib.persistence.SessionDBPlugin``; it has no
  in-flight or queue limit to set (its queues are unbounded, every delivery is its own task).
  PUBACK once the PUBLISH is on an in-memory queue, before the message is routed; the plugin writes
  sessions, subscriptions and retained messages, and a message only when it is queued for a
  *disconnected* persistent session, never for a connected one. It keeps no session for
  anonymous clients, hence anonymous access off and the user name ``bench`` on every client.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import BrokerProcess  # noqa: E402

BROKERS: tuple[str, ...] = ("relaymq", "mosquitto", "amqtt")
#: The user name every benchmark client sends (amqtt keeps no session for anonymous clients).
USERNAME = "bench"
#: Shared limits, in relaymq's schema (the harness translates them for Mosquitto; amqtt has
#: no equivalent settings).
COMMON_CONFIG: dict[str, dict[str, Any]] = {
    "limits": {"max_inflight": 100, "max_queued_messages": 1_000_000,
               "max_stored_messages": 2_000_000},
}

#: relaymq's other listeners (HTTP, MQ channels) on free ports: their defaults (8080, 8081)
#: may be taken on the machine. They stay on, as in a default installation.
RELAYMQ_PORTS: dict[str, Any] = {
    "http": {"port": 0}, "qmgr": {"channel_port": 0},
    # scenario 6 opens 10,000 connections from one address (the default cap is 1,000)
    "listener": [{"name": "default", "host": "127.0.0.1", "max_connections_per_address": -1}],
}


class AmqttProcess(BrokerProcess):
    """amqtt (``amqtt -c broker.yaml``) with the harness's lifecycle (start, stop, restart).

    ``config`` (the shared limits) is not written: amqtt 0.12 has no in-flight or queue limit
    settings. The YAML holds the listener, anonymous access off and the SQLite plugin."""

    def __init__(self, amqtt_binary: str, **kwargs: Any) -> None:
        super().__init__("relaymq", **kwargs)   # the harness knows two kinds; the command is ours
        self.kind = "amqtt"  # type: ignore[assignment]
        self.amqtt_binary = amqtt_binary

    def command(self) -> list[str]:
        conf = self.workdir / "amqtt.yaml"
        db = self.data_dir / "amqtt.db"
        conf.write_text(
            "listeners:\n"
            "  default:\n"
            "    type: tcp\n"
            f"    bind: {self.host}:{self.port}\n"
            "plugins:\n"
            "  amqtt.plugins.authentication.AnonymousAuthPlugin:\n"
            "    allow_anonymous: false\n"
            "  amqtt.contrib.persistence.SessionDBPlugin:\n"
            f"    connection: sqlite+aiosqlite:///{db}\n"
            "    clear_on_shutdown: false\n"
        )
        return [self.amqtt_binary, "-c", str(conf)]


def make_broker(kind: str, workdir: Path, *, amqtt_binary: str | None = None,
                config: dict[str, dict[str, Any]] | None = None) -> BrokerProcess:
    """A stopped broker of ``kind`` with the comparison's settings, working in ``workdir``;
    ``config`` adds sections (e.g. ``{"mosquitto": {"log_type": "subscribe"}}``)."""
    if kind == "amqtt":
        if not amqtt_binary:
            raise RuntimeError("amqtt is not installed (bench/compare installs it)")
        return AmqttProcess(amqtt_binary, config=COMMON_CONFIG, workdir=workdir,
                            start_timeout=60)
    if kind in ("relaymq", "mosquitto"):
        config = {**COMMON_CONFIG, **(RELAYMQ_PORTS if kind == "relaymq" else {}),
                  **(config or {})}
        return BrokerProcess(kind, config=config, store="sqlite", workdir=workdir,  # type: ignore[arg-type]
                             start_timeout=60)
    raise ValueError(f"unknown broker {kind!r}")


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def broker_pid(broker: BrokerProcess) -> int:
    """The broker's own pid (Mosquitto runs under ``stdbuf``, which execs it: same pid)."""
    if broker.proc is None:
        raise RuntimeError("broker not running")
    return broker.proc.pid


def mosquitto_version() -> str:
    """``mosquitto -h`` names its version on the first line."""
    import subprocess
    from harness import MOSQUITTO_BINARY
    try:
        out = subprocess.run([MOSQUITTO_BINARY, "-h"], capture_output=True, text=True, timeout=10)
    except OSError:
        return "not installed"
    return (out.stdout or out.stderr).splitlines()[0].strip() if (out.stdout or out.stderr) else "?"


def amqtt_version(amqtt_binary: str | None) -> str:
    if not amqtt_binary:
        return "not installed"
    import subprocess
    try:
        out = subprocess.run([amqtt_binary, "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return "not installed"
    return out.stdout.strip() or out.stderr.strip()


def environment() -> dict[str, Any]:
    """What the figures were measured on."""
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(v, 2) for v in load],
            "python": sys.version.split()[0], "platform": sys.platform}
