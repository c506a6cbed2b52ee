"""``relaymq multicast listen`` processes, read line by line as they print."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

SRC = str(Path(__file__).resolve().parents[2] / "src")


class ReceiverProcess:
    def __init__(self, prefix: list[str], *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "relaymq", "multicast", "listen", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._stderr_lines: queue.Queue[str] = queue.Queue()
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            threading.Thread(target=self._read, args=(stream, sink), daemon=True).start()

    def _read(self, stream: IO[str] | None, sink: list[str]) -> None:
        assert stream is not None
        for line in stream:
            sink.append(line.rstrip("\n"))
            if sink is self.stderr:
                self._stderr_lines.put(line)

    def wait_joined(self, deadline: float) -> dict[str, Any]:
        """The "joined" line, once the receiver is a member of its groups."""
        while time.monotonic() < deadline:
            try:
                line = self._stderr_lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            record = _json(line)
            if "joined" in record:
                return record
        raise AssertionError(f"receiver did not join: {self.stderr}")

    def finish(self, timeout: float) -> int:
        """Wait for the exit (the readers then drain the pipes)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"receiver did not finish in {timeout}s; stderr: {self.stderr[-5:]}") from None
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any("summary" in _json(line) for line in self.stderr):
            time.sleep(0.01)
        return code

    def messages(self) -> list[dict[str, Any]]:
        return [_json(line) for line in self.stdout if line.startswith("{")]

    def summary(self) -> dict[str, Any]:
        return next(_json(line)["summary"] for line in self.stderr if "summary" in _json(line))

    def losses(self) -> list[int]:
        return [first + i for line in self.stderr if "lost" in _json(line)
                for first, count in _json(line)["lost"]["ranges"] for i in range(count)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _json(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
