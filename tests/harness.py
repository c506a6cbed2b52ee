"""Broker process management shared by the test suites and the benchmarks.

The tests talk to a real broker over real sockets, so something has to start one, know when it
is ready, kill it the hard way (durability tests) and bring it back on the same port and data
directory (persistence tests). This module does that for two kinds of broker:

* ``relaymq``: this project, started as ``python -m relaymq serve`` with a generated TOML config;
* ``mosquitto``: the Debian Eclipse Mosquitto broker, the reference the conformance data was
  recorded against, so every test can be validated against a known-good broker first.

Callers describe the broker with one neutral config dict in relaymq's own schema
(``{"limits": {"max_inflight": 20}, "access": {...}}``); for Mosquitto the keys that have an
equivalent are translated, so one test body serves both kinds. The kind for a whole test run is
chosen with the environment variable ``RELAYMQ_TEST_BROKER`` (``relaymq`` by default).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

BrokerKind = Literal["relaymq", "mosquitto"]
KINDS: tuple[BrokerKind, ...] = ("relaymq", "mosquitto")
ENV_KIND = "RELAYMQ_TEST_BROKER"
MOSQUITTO_BINARY = os.environ.get("RELAYMQ_MOSQUITTO", "/usr/sbin/mosquitto")

# The brokers (and CLI commands) that tests and benchmarks start run in directories of their
# own: a relative PYTHONPATH (``PYTHONPATH=src`` to test or measure a second checkout) would
# name nothing there, and they would silently run the installed relaymq instead of the tree
# under test. Made absolute once, here, for every process started after this import.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(entry) for entry in os.environ["PYTHONPATH"].split(os.pathsep) if entry)

# The limits the conformance data assumes (its default CONNACK for MQTT 5 advertises Topic Alias
# Maximum 10 and Receive Maximum 20); every broker the harness starts uses them unless told
# otherwise, so the suites agree on what a "default" broker is.
DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    "access": {"allow_anonymous": True},
    "limits": {"max_inflight": 20, "topic_alias_maximum": 10},
}

# relaymq config key -> mosquitto.conf option, for the keys Mosquitto has an equivalent of.
_MOSQUITTO_EQUIVALENTS: dict[tuple[str, str], str] = {
    ("limits", "max_inflight"): "max_inflight_messages",
    ("limits", "topic_alias_maximum"): "max_topic_alias",
    ("limits", "max_packet_size"): "max_packet_size",
    ("limits", "max_queued_messages"): "max_queued_messages",
    ("broker", "max_keepalive"): "max_keepalive",
    ("access", "allow_anonymous"): "allow_anonymous",
}
# Password and ACL files are not mapped: relaymq's formats are its own. Give Mosquitto's in a
# ``mosquitto`` section when a test needs them.
# Options that Mosquitto needs to sit inside the listener block (per-listener settings).
_MOSQUITTO_LISTENER_OPTIONS = {"max_topic_alias", "allow_anonymous"}


class BrokerStartError(RuntimeError):
    """The broker did not accept connections in time, or exited while starting."""


def default_kind() -> BrokerKind:
    """The broker kind selected for this run by ``RELAYMQ_TEST_BROKER``."""
    kind = os.environ.get(ENV_KIND, "relaymq").strip().lower() or "relaymq"
    if kind not in KINDS:
        raise ValueError(f"{ENV_KIND}={kind!r}: expected one of {', '.join(KINDS)}")
    return kind  # type: ignore[return-value]


#: Ports free_port() has handed out in this process.
_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nobody else is given before a listener takes it, and that
    this process has not handed out before (the OS may offer it again once it is free; a broker
    given one port for two of its listeners fails to start, seen: HTTP and channel listener).

    A probe socket that is merely closed leaves the port free for whoever binds next: another
    xdist worker's free_port() or a listener on port 0 (a run failed so, test_serve's broker:
    "http: cannot listen on 127.0.0.1:56727: ... address already in use"). So the port is
    left held by a TIME_WAIT connection (``_hold``), as long as the kernel keeps one (60 s).
    """
    for _ in range(1000):
        port = _hold(host, 0)
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free TCP port on {host} that was not handed out already")


def _hold(host: str, port: int) -> int:
    """Bind ``host:port`` (0: the OS picks), connect to it and close the accepted side first:
    its TIME_WAIT keeps the port bound. Linux then gives it to no bind() without SO_REUSEADDR,
    to no bind(0) and to no connect(), but a listener with SO_REUSEADDR binds it at once (every
    listener of relaymq, Mosquitto, RabbitMQ and the JVM sets it). Returns the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.settimeout(10)
        listener.bind((host, port))
        listener.listen(1)
        port = listener.getsockname()[1]
        with socket.create_connection((host, port), timeout=10):
            accepted, _ = listener.accept()
            accepted.close()  # the side that closes first is the one left in TIME_WAIT
    return port


def outside_address() -> str | None:
    """A non-loopback address of this machine (None when it has none): what a request from
    another host would come from, for tests of loopback-only routes."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts a TCP connection on host:port; readiness means exactly that."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def merge_config(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge config dicts section by section; later layers win key by key.

    Sections whose value is a list (``[[listener]]`` tables) are replaced, not merged.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        for section, body in (layer or {}).items():
            if isinstance(body, Mapping) and isinstance(merged.get(section), dict):
                merged[section] = {**merged[section], **body}
            elif isinstance(body, Mapping):
                merged[section] = dict(body)
            else:
                merged[section] = body
    return merged


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):  # an inline table: [[qmgr.connection]] rows, [pubsub.groups]
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} ({type(value).__name__}) to TOML")


def to_toml(config: Mapping[str, Any]) -> str:
    """Serialise a two-level config dict to TOML.

    Only what the broker config needs: sections of scalars and lists (``[limits]``) and arrays
    of tables (``[[listener]]``, given as a list of dicts). The standard library reads TOML but
    does not write it, and a dependency for this is not worth it.
    """
    lines: list[str] = []
    for section, body in config.items():
        if isinstance(body, Mapping):
            lines.append(f"[{section}]")
            lines.extend(f"{key} = {_toml_value(val)}" for key, val in body.items())
            lines.append("")
        elif isinstance(body, (list, tuple)) and all(isinstance(t, Mapping) for t in body):
            for table in body:
                lines.append(f"[[{section}]]")
                lines.extend(f"{key} = {_toml_value(val)}" for key, val in table.items())
                lines.append("")
        else:
            raise TypeError(f"config section {section!r} must be a table or a list of tables")
    return "\n".join(lines)


def to_mosquitto_conf(config: Mapping[str, Any], port: int, host: str, data_dir: Path,
                      store: str = "sqlite") -> str:
    """Translate the neutral config to a mosquitto.conf on one listener; persistence is on
    unless ``store`` is ``memory`` (the closest equivalent of relaymq's stores).

    Keys without a Mosquitto equivalent are ignored: they tune relaymq only. Raw Mosquitto
    options can be passed in a ``mosquitto`` section and are written verbatim.
    """
    general = [
        "per_listener_settings false",
        f"persistence {'false' if store == 'memory' else 'true'}",
        f"persistence_location {data_dir}/",
        "log_dest stderr",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "log_type information",
        "log_timestamp true",
        "set_tcp_nodelay true",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Run as root, mosquitto drops to user "mosquitto", which cannot write our temp dir.
        general.append("user root")
    listener = [f"listener {port} {host}"]
    for (section, key), option in _MOSQUITTO_EQUIVALENTS.items():
        if key not in config.get(section, {}):
            continue
        value = config[section][key]
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        (listener if option in _MOSQUITTO_LISTENER_OPTIONS else general).append(f"{option} {text}")
    for option, value in config.get("mosquitto", {}).items():
        general.append(f"{option} {value}")
    return "\n".join(general + listener) + "\n"


def dies_with_this_process() -> list[str]:
    """The command prefix that has a broker SIGKILLed when the process that started it dies.

    A test run killed outright (SIGKILL from a CI timeout, an OOM kill, a second Ctrl-C) runs no
    teardown; its brokers, in sessions of their own, would live on holding ports and data
    directories. ``setpriv --pdeathsig KILL`` (util-linux) sets the parent-death signal and then
    execs the broker, whose pid stays the one Popen returned. The kernel sends the signal when
    the *thread* that forked it ends, so only starts from the main thread get it: a broker
    started from a short-lived thread would otherwise die with that thread."""
    if threading.current_thread() is not threading.main_thread():
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL"] if setpriv else []


class BrokerProcess:
    """One broker subprocess on 127.0.0.1, a free port and its own data directory.

    ``start()`` returns once the port accepts connections; ``restart()`` keeps port and data
    directory so persistence across restarts can be tested; ``kill()`` is SIGKILL, for crash
    durability. Output (stdout and stderr, all starts appended) goes to ``<workdir>/broker.log``
    and its tail is quoted in every start error.
    """

    def __init__(
        self,
        kind: BrokerKind | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        store: str = "sqlite",
        workdir: Path | str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.kind: BrokerKind = kind or default_kind()
        if self.kind not in KINDS:
            raise ValueError(f"unknown broker kind {self.kind!r}")
        self.config = merge_config(DEFAULT_CONFIG, config)
        self.store = store
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"{self.kind}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(exist_ok=True)
        self.log_path = self.workdir / "broker.log"
        self.host = host
        self.port = port or free_port(host)
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._side_ports: dict[str, int] = {}

    # -- command line -------------------------------------------------------------------------

    def command(self) -> list[str]:
        """Write the config file for this kind and return the command that starts the broker."""
        if self.kind == "relaymq":
            conf = self.workdir / "relaymq.toml"
            config = dict(self.config)
            # Listen on loopback only (the default listener binds 0.0.0.0); --port below
            # replaces this listener's port.
            config.setdefault("listener", [{"name": "default", "host": self.host}])
            # The HTTP and channel listeners default to the fixed ports 8080/8081; a test broker
            # takes free loopback ports (chosen once, kept across restarts) so that several
            # brokers can run side by side.
            if not self._side_ports:
                self._side_ports = {"http": free_port(self.host), "channel": free_port(self.host)}
            config["http"] = {"host": self.host, "port": self._side_ports["http"], **config.get("http", {})}
            config["qmgr"] = {"channel_host": self.host, "channel_port": self._side_ports["channel"],
                              **config.get("qmgr", {})}
            conf.write_text(to_toml(config))
            return [
                sys.executable, "-m", "relaymq", "serve",
                "--config", str(conf),
                "--port", str(self.port),
                "--data-dir", str(self.data_dir),
                "--store", self.store,
            ]
        if not Path(MOSQUITTO_BINARY).exists():
            raise BrokerStartError(f"mosquitto not installed at {MOSQUITTO_BINARY}")
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(to_mosquitto_conf(self.config, self.port, self.host, self.data_dir,
                                           self.store))
        # Line-buffered output, so the log tail is current while the broker runs.
        stdbuf = shutil.which("stdbuf")
        return ([stdbuf, "-oL", "-eL"] if stdbuf else []) + [MOSQUITTO_BINARY, "-c", str(conf)]

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def http_port(self) -> int:
        """The relaymq broker's HTTP (REST) port, once command() has chosen it."""
        return self._side_ports["http"]

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    @property
    def admin_credentials(self) -> Path:
        """The relaymq broker's own administrator credential (made at its first start when
        ``[access] administrators`` is empty; relaymq.auth.admin_credential)."""
        return self.data_dir / "admin.credentials"

    def admin_headers(self) -> list[tuple[str, str]]:
        """HTTP basic authentication as that administrator (none before the file exists)."""
        if not self.admin_credentials.exists():
            return []
        import base64

        token = base64.b64encode(self.admin_credentials.read_text().strip().encode()).decode()
        return [("authorization", f"Basic {token}")]

    def admin_env(self) -> dict[str, str]:
        """The environment for a relaymq CLI command that administers this broker."""
        return {**os.environ, "RELAYMQ_ADMIN_CREDENTIALS": str(self.admin_credentials)}

    def start(self) -> BrokerProcess:
        """Start the broker and wait until its port accepts connections."""
        if self.running:
            raise RuntimeError("broker already running")
        cmd = self.command()
        # Its ports stay this broker's across restarts: while it was stopped they were free for
        # anyone, so hold them again until it binds them (free_port). One in use now is left to
        # the broker's own bind to report.
        for port in (self.port, *self._side_ports.values()):
            with contextlib.suppress(OSError):
                _hold(self.host, port)
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n=== start #{self.starts}: {' '.join(cmd)}\n".encode())
            log.flush()
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            self.proc = subprocess.Popen(
                dies_with_this_process() + cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=env,
                start_new_session=True,  # a Ctrl-C on the test run must not hit the broker first
            )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerStartError(
                    f"{self.kind} exited with status {self.proc.returncode} before accepting "
                    f"connections on {self.host}:{self.port}\n{self.describe_log()}"
                )
            # The port could belong to someone else who grabbed it first; a broker that
            # failed to bind exits, so check it is still alive once more.
            if port_accepts(self.host, self.port, timeout=0.5) and self.proc.poll() is None:
                return
            time.sleep(0.05)
        pid = self.proc.pid
        self._terminate(signal.SIGKILL, timeout=5)
        raise BrokerStartError(
            f"{self.kind} (pid {pid}) did not accept connections on {self.host}:{self.port} "
            f"within {self.start_timeout:.0f}s\n{self.describe_log()}"
        )

    def _terminate(self, sig: signal.Signals, timeout: float) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait (a clean shutdown; SIGKILL after ``timeout``). Returns the status."""
        return self._terminate(signal.SIGTERM, timeout)

    def kill(self) -> int | None:
        """SIGKILL: the crash the durability tests simulate. Nothing gets flushed."""
        return self._terminate(signal.SIGKILL, timeout=10)

    def restart(self, *, hard: bool = False) -> BrokerProcess:
        """Stop (or kill, when ``hard``) and start again on the same port and data directory."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Stop the broker and remove the work directory if this object created it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> BrokerProcess:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- diagnostics --------------------------------------------------------------------------

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's combined stdout/stderr."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def describe_log(self, lines: int = 40) -> str:
        return f"--- {self.log_path} (last {lines} lines) ---\n{self.log_tail(lines)}"

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<BrokerProcess {self.kind} {self.host}:{self.port} {state} {self.workdir}>"
