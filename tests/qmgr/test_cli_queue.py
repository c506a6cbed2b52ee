"""``relaymq queue define|delete|show|put|get|browse`` on a local data directory (issue 5,
"Command line")."""

from __future__ import annotations

import json

import pytest

from relaymq.cli.main import main


def _run(capsys, tmp_path, *argv: str) -> tuple[int, list[dict], str]:
    code = main(["queue", *argv, "--data-dir", str(tmp_path), "--qmgr", "QMC"])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_define_put_browse_get_show_delete(capsys, tmp_path) -> None:
    """issue 5 Command line: each subcommand works as a new user would try it."""
    code, (d,), _ = _run(capsys, tmp_path, "define", "ORDERS", "--max-depth", "3", "--alias", "ORD")
    assert code == 0 and d["max_depth"] == 3 and d["aliases"] == ["ORD"] and d["depth"] == 0
    code, (p1,), _ = _run(capsys, tmp_path, "put", "ORD", "-m", "low", "--priority", "1")
    code, (p2,), _ = _run(capsys, tmp_path, "put", "ORDERS", "-m", "high", "--priority", "8", "--correl-id", "abcd")
    assert code == 0 and p1["msg_id"] != p2["msg_id"]
    code, msgs, _ = _run(capsys, tmp_path, "browse", "ORDERS")
    assert [m["body"] for m in msgs] == ["high", "low"]
    code, msgs, _ = _run(capsys, tmp_path, "browse", "ORDERS", "--correl-id", "abcd")
    assert [m["body"] for m in msgs] == ["high"]
    code, (shown,), _ = _run(capsys, tmp_path, "show", "ORDERS")
    assert shown["depth"] == 2
    code, (got,), _ = _run(capsys, tmp_path, "get", "ORDERS")
    assert got["body"] == "high" and got["msg_id"] == p2["msg_id"]
    code, (got,), _ = _run(capsys, tmp_path, "get", "ORDERS", "--selector", "JMSPriority = 1")
    assert got["body"] == "low"
    code, msgs, err = _run(capsys, tmp_path, "get", "ORDERS")
    assert code == 1 and msgs == [] and "2033" in err
    code, _, _ = _run(capsys, tmp_path, "delete", "ORDERS")
    code, all_queues, _ = _run(capsys, tmp_path, "show")
    assert "ORDERS" not in {q["name"] for q in all_queues}
    assert "SYSTEM.DEFAULT.LOCAL.QUEUE" in {q["name"] for q in all_queues}


@pytest.mark.parametrize("argv,reason", [
    (("put", "NOPE", "-m", "x"), "2085"),
    (("define", "bad/name"), "2152"),
    (("define", "R", "--type", "remote"), "3306"),
])
def test_errors_one_line_with_reason(capsys, tmp_path, argv, reason) -> None:
    """issue 5: clear errors; cli convention: exit 1 with one line on stderr."""
    code, out, err = _run(capsys, tmp_path, *argv)
    assert code == 1 and out == []
    assert len(err.strip().splitlines()) == 1 and reason in err


def test_full_queue_via_cli(capsys, tmp_path) -> None:
    """everyplace.md item 7: max depth enforced from the command line too; nothing lost."""
    _run(capsys, tmp_path, "define", "Q", "--max-depth", "1")
    assert _run(capsys, tmp_path, "put", "Q", "-m", "1")[0] == 0
    code, _, err = _run(capsys, tmp_path, "put", "Q", "-m", "2")
    assert code == 1 and "2053" in err
    assert [m["body"] for m in _run(capsys, tmp_path, "browse", "Q")[1]] == ["1"]
