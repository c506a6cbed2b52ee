"""Helpers for the command-line tests (imported by conftest.py and the test modules; a module
of its own because test modules must not import ``conftest``, whose name is not unique)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import BrokerProcess

#: Guard against a hung process; never an expectation about speed.
PROCESS_TIMEOUT = 60


def relaymq_command(*args: str) -> list[str]:
    """The argv that runs the relaymq command line with this interpreter."""
    return [sys.executable, "-m", "relaymq", *args]


@dataclass
class CliResult:
    """What one finished ``relaymq`` command produced."""

    returncode: int
    stdout: bytes
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.decode("utf-8").splitlines()


#: The ``run_cli`` fixture: ``run_cli(*args, input=None) -> CliResult``.
RunCli = Callable[..., CliResult]


class Background:
    """A relaymq client running in the background, started with ``-d`` so that its debug
    lines on stderr say when it has reached a given point of the MQTT conversation."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            relaymq_command(*args, "-d"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.debug: list[str] = []

    def wait_for_debug(self, marker: str) -> None:
        """Read stderr until a line contains ``marker``; fail if the process ends first."""
        assert self.proc.stderr is not None
        while True:
            line = self.proc.stderr.readline().decode("utf-8", "replace")
            if not line:
                self.proc.wait(timeout=PROCESS_TIMEOUT)
                pytest.fail(f"{self.args} ended (status {self.proc.returncode}) before {marker!r}: {self.debug}")
            self.debug.append(line.rstrip("\n"))
            if marker in line:
                return

    def finish(self) -> CliResult:
        """Wait for the process to end by itself and return what it printed."""
        stdout, stderr = self.proc.communicate(timeout=PROCESS_TIMEOUT)
        return CliResult(self.proc.returncode, stdout, "\n".join(self.debug) + stderr.decode("utf-8", "replace"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=PROCESS_TIMEOUT)


@dataclass(frozen=True)
class TlsBroker:
    """A broker with a plain listener (``broker``) and a TLS listener on ``tls_port`` whose
    certificate, signed by ``ca_file``, names only DNS:localhost."""

    broker: BrokerProcess
    tls_port: int
    ca_file: Path
