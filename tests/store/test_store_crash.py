"""Crash safety with a real process killed by SIGKILL in the middle of writing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store_helpers import run_now

from relaymq.store.sqlite import SQLiteStore

CHILD = Path(__file__).with_name("crash_child.py")
KILL_AFTER = 1000


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_every_acknowledged_write_survives_sigkill(tmp_path: Path) -> None:
    """A child acknowledges (prints) ids from on_durable only; after SIGKILL every printed id
    has its message and delivery in the reopened database, ids were acknowledged in order, and
    the file is intact (spec README decision 4; mqtt.md item 6)."""
    path = tmp_path / "crash.db"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    lines: list[str] = []
    try:
        for line in child.stdout:
            lines.append(line)
            if len(lines) >= KILL_AFTER:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        rest = child.stdout.read()
        stderr = child.stderr.read()
        child.wait()
    lines.extend(rest.splitlines(keepends=True))
    acked = [int(line) for line in lines if line.endswith("\n")]
    assert len(acked) >= KILL_AFTER, f"child stopped early: {stderr}"
    assert child.returncode == -signal.SIGKILL
    assert acked == list(range(1, len(acked) + 1))

    conn = sqlite3.connect(str(path))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    store = SQLiteStore(str(path), run_now)
    try:
        snap = store.load()
    finally:
        store.close()
    missing = set(acked) - set(snap.messages)
    assert not missing, f"acknowledged but lost: {sorted(missing)[:10]}"
    delivered = {d.msg_id for d in snap.deliveries}
    assert set(acked) <= delivered
    assert snap.messages[acked[-1]].payload == acked[-1].to_bytes(4, "big") * 64
    assert snap.next_msg_id > acked[-1]
