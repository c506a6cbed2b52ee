"""The queue manager inside `relaymq serve` (issue 5 "Defaults"; server/app.py services), and
`relaymq queue --url` against it through the REST interface (issue 5 "Command line")."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import BrokerProcess, free_port  # noqa: E402

from relaymq.cli.main import main  # noqa: E402
from relaymq.qmgr import QueueManager  # noqa: E402


def _start(tmp_path: Path, http_port: int = 0) -> BrokerProcess:
    config = {"qmgr": {"name": "QMSERVE", "channel_host": "127.0.0.1", "channel_port": 0},
              "http": {"host": "127.0.0.1", "port": http_port}}
    broker = BrokerProcess("relaymq", config=config, workdir=tmp_path)
    broker.start()
    # The MQTT port opens before the services start; the "started" line comes after them.
    deadline = time.monotonic() + 30
    while " started (store" not in broker.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "queue manager QMSERVE open" in broker.log_path.read_text(), broker.log_tail()
    return broker


def test_second_broker_on_the_same_data_directory_stops_with_one_line(tmp_path) -> None:
    """Issue 5 P2: a second `relaymq serve` on a data directory whose queue manager store a
    running broker holds does not start (no message may be delivered twice); its error
    names the queue manager and the holder's pid."""
    from harness import BrokerStartError

    first = _start(tmp_path / "one")
    second = BrokerProcess("relaymq", config={"qmgr": {"name": "QMSERVE"}}, workdir=tmp_path / "two")
    second.data_dir = first.data_dir
    try:
        try:
            second.start()
        except BrokerStartError:
            pass  # exited before its MQTT port opened
        deadline = time.monotonic() + 30  # or the port opened first and the queue manager then failed
        while second.running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not second.running, "the second broker kept running on a store in use"
        log = second.log_path.read_text()
        # the queue manager lives in the broker's database (issue 14): the second broker stops there
        assert f"relaymq.db is in use by another process (pid {first.proc.pid})" in log, log[-2000:]
        assert first.running
    finally:
        second.stop()
        first.stop()


def test_serve_opens_named_qmgr_in_data_dir_and_closes_it(tmp_path) -> None:
    """issue 5 step 7: the broker opens queue manager <NAME> with the system queues and closes
    it at a graceful stop (the file is then usable by another process). Since issue 14 its
    queues are in the broker's database, <data_dir>/relaymq.db, and no qmgr-<NAME>.db is made."""
    broker = _start(tmp_path)
    assert broker.stop() == 0, broker.log_tail()
    assert not (broker.data_dir / "qmgr-QMSERVE.db").exists()
    with QueueManager.open("QMSERVE", str(broker.data_dir)) as qm:
        assert "SYSTEM.BROKER.CONTROL.QUEUE" in qm.queue_names()


def test_cli_against_running_broker_via_rest(tmp_path, capsys, monkeypatch) -> None:
    """issue 5 Command line: `relaymq queue put|get|browse|show|define|delete --url` on a
    running broker (define and delete as its administrator, issue 15)."""
    pytest.importorskip("relaymq.qmgr.rest")
    port = free_port()
    broker = _start(tmp_path, port)
    monkeypatch.setenv("RELAYMQ_ADMIN_CREDENTIALS", str(broker.admin_credentials))
    url = f"http://127.0.0.1:{port}"

    def run(*argv: str) -> tuple[int, list[dict], str]:
        code = main(["queue", *argv, "--url", url, "--qmgr", "QMSERVE"])
        out, err = capsys.readouterr()
        return code, [json.loads(line) for line in out.splitlines()], err

    try:
        code, (put,), _ = run("put", "SYSTEM.DEFAULT.LOCAL.QUEUE", "-m", "over rest", "--priority", "6")
        assert code == 0 and len(put["msg_id"]) == 48
        code, (shown,), _ = run("show", "SYSTEM.DEFAULT.LOCAL.QUEUE")
        assert shown["status"]["currentDepth"] == 1
        code, (browsed,), _ = run("browse", "SYSTEM.DEFAULT.LOCAL.QUEUE")
        assert browsed["body"] == "over rest" and browsed["msg_id"] == put["msg_id"]
        code, (got,), _ = run("get", "SYSTEM.DEFAULT.LOCAL.QUEUE")
        assert got["body"] == "over rest" and got["priority"] == 6
        code, out, err = run("get", "SYSTEM.DEFAULT.LOCAL.QUEUE")
        assert code == 1 and out == [] and "2033" in err
        code, out, err = run("put", "NOPE", "-m", "x")
        assert code == 1 and "2085" in err
        code, (made,), _ = run("define", "NEWQ", "--max-depth", "4")
        assert code == 0 and made["name"] == "NEWQ" and made["storage"]["maximumDepth"] == 4
        code, out, _ = run("delete", "NEWQ")
        assert code == 0 and out == []
    finally:
        broker.stop()
