"""examples/systemd (issue 18 "What to build": "examples/systemd/relaymq.service and the steps
to run relaymq as a service"): systemd itself accepts the unit, and the broker does what the
unit relies on: its ExecStart starts it, ExecReload's SIGHUP reloads without stopping it, the
KillSignal stops it with exit status 0 within TimeoutStopSec; the README's --check step
passes on the example configuration."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import free_port, port_accepts, to_toml

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "examples" / "systemd" / "relaymq.service"
INSTALLED = "/opt/relaymq/.venv/bin/relaymq"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    """systemd-analyze verify, with ExecStart pointing at this checkout's relaymq."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian package systemd) is needed to check the unit"
    relaymq = Path(sys.executable).with_name("relaymq")
    assert relaymq.exists(), relaymq
    copy = tmp_path / "relaymq.service"
    copy.write_text(UNIT.read_text().replace(INSTALLED, str(relaymq)))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "relaymq.service" not in result.stderr, result.stderr


def test_the_unit_start_reload_and_stop(tmp_path: Path) -> None:
    """The unit's ExecStart, run as written (the installed paths replaced by temporary ones),
    ExecReload's signal, then its KillSignal within TimeoutStopSec: exit 0."""
    service = unit()["Service"]
    assert service["KillSignal"] == "SIGTERM" and service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["RestartPreventExitStatus"] == "2"
    command = shlex.split(service["ExecStart"])
    assert command[:2] == [INSTALLED, "serve"]
    port = free_port()
    config = tmp_path / "relaymq.toml"
    config.write_text(to_toml({"listener": [{"name": "default", "host": "127.0.0.1", "port": port}],
                               "http": {"host": "127.0.0.1", "port": free_port()},
                               "qmgr": {"channel_host": "127.0.0.1", "channel_port": free_port()}}))
    data = tmp_path / "data"
    replaced = {"/etc/relaymq/relaymq.toml": str(config), "/var/lib/relaymq": str(data)}
    argv = [sys.executable, "-m", "relaymq"] + [replaced.get(arg, arg) for arg in command[1:]]
    log_path = tmp_path / "broker.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not port_accepts("127.0.0.1", port):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        assert (data / "relaymq.db").exists()
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "SIGHUP: authorities file" not in log_path.read_text():
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        assert proc.poll() is None and port_accepts("127.0.0.1", port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(float(service["TimeoutStopSec"])) == 0, log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_readme_check_step_on_the_example_configuration() -> None:
    """examples/systemd/README.md step 3: ``serve --config ... --check`` on relaymq.example.toml."""
    readme = (ROOT / "examples" / "systemd" / "README.md").read_text()
    assert "relaymq serve --config /etc/relaymq/relaymq.toml --check" in readme
    result = subprocess.run([sys.executable, "-m", "relaymq", "serve", "--config", str(ROOT / "relaymq.example.toml"),
                             "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("config ok"), result.stdout + result.stderr
