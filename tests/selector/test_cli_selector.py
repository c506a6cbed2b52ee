"""`relaymq selector check EXPR [--message FILE]` (issue 3 'Command line')."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from relaymq.cli import selector as selector_cli
from relaymq.message import JMSMessage, Message


def _run_local(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="relaymq")
    selector_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def _message_file(tmp_path: Path) -> Path:
    jms = JMSMessage(message_type="jms_text", body="<p><Name>Smith</Name></p>", JMSPriority=7)
    jms.properties.set("colour", "blue")
    path = tmp_path / "m.bin"
    path.write_bytes(Message.from_jms(jms).to_bytes())
    return path


def test_valid_expression_lists_identifiers(capsys: pytest.CaptureFixture[str]) -> None:
    """check validates and names the identifiers the expression reads."""
    code, out, _ = _run_local(["selector", "check", "JMSPriority > 4 AND colour = 'blue'"], capsys)
    assert code == 0 and out.strip() == "valid; identifiers: JMSPriority, colour"


def test_invalid_expression_reports_position(capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid expression: one line with position and reason, exit 2."""
    code, out, err = _run_local(["selector", "check", "colour = "], capsys)
    assert code == 2 and out == "" and "position 9" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("expr", "code", "word"),
    [("JMSPriority > 4 AND colour = 'blue'", 0, "TRUE"), ("Body.p.Name LIKE 'Smit%'", 0, "TRUE"), ("colour = 'red'", 1, "FALSE"), ("size > 3", 1, "UNKNOWN")],
)
def test_evaluate_on_a_message_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], expr: str, code: int, word: str) -> None:
    """--message evaluates on an MQ-format file: TRUE exits 0, FALSE/UNKNOWN exit 1."""
    result = _run_local(["selector", "check", expr, "--message", str(_message_file(tmp_path))], capsys)
    assert result[:2] == (code, word + "\n")


def test_evaluate_on_json_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--message also takes the JSON that `msg decode` prints."""
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"MQMD": {"Priority": 9, "CodedCharSetId": 1208}, "body": {"text": "{\"a\": 5}"}}))
    code, out, _ = _run_local(["selector", "check", "Root.MQMD.Priority = 9 AND Body.a = 5", "--message", str(path), "--domain", "JSON"], capsys)
    assert (code, out) == (0, "TRUE\n")


@pytest.mark.parametrize("expr", ["a = \u00b2", "a = \u0663", "(" * 2000 + "a = 1" + ")" * 2000])
def test_unicode_digit_and_deep_nesting_exit_2_one_line(capsys: pytest.CaptureFixture[str], expr: str) -> None:
    """Issue 3 item 2: `selector check "a = \u00b2"` exits 2 with one line, no traceback."""
    code, out, err = _run_local(["selector", "check", expr], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "position" in err


def test_unreadable_message_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.bin").write_bytes(b"nonsense")
    code, _, err = _run_local(["selector", "check", "a = 1", "--message", str(tmp_path / "bad.bin")], capsys)
    assert code == 2 and "MQMD.StrucId" in err


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"headers": [{"header": "MQHCIH", "bytes": "00"}]}, "headers[0].Encoding"),
        ({"headers": [{"header": "MQRFH", "NameValueString": [["x"]]}]}, "headers[0].NameValueString[0]"),
        ({"MQMD": {"Priority": "9"}}, "MQMD.Priority"),
    ],
)
def test_bad_json_message_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, field: str) -> None:
    """Issue 3 item 7: --message with malformed JSON names the field, exit 2, no traceback."""
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    code, out, err = _run_local(["selector", "check", "a = 1", "--message", str(path)], capsys)
    assert code == 2 and out == "" and field in err and len(err.strip().splitlines()) == 1


def test_unknown_domain_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--domain names a domain that does not exist: an error, not a silent UNKNOWN."""
    code, _, err = _run_local(["selector", "check", "Body.a = 1", "--message", str(_message_file(tmp_path)), "--domain", "COBOL"], capsys)
    assert code == 2 and "COBOL" in err


def test_subprocess_check(tmp_path: Path) -> None:
    """The real command line, as a subprocess."""
    ok = subprocess.run([sys.executable, "-m", "relaymq", "selector", "check", "colour = 'blue'", "--message", str(_message_file(tmp_path))], capture_output=True, timeout=60)
    assert (ok.returncode, ok.stdout) == (0, b"TRUE\n")
    bad = subprocess.run([sys.executable, "-m", "relaymq", "selector", "check", "a LIKE 5"], capture_output=True, timeout=60)
    assert bad.returncode == 2 and b"position 7" in bad.stderr
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"headers": [{"header": "MQHCIH", "bytes": "00"}]}')
    tb = subprocess.run([sys.executable, "-m", "relaymq", "selector", "check", "a = 1", "--message", str(bad_json)], capture_output=True, timeout=60)
    assert tb.returncode == 2 and b"Traceback" not in tb.stderr and b"headers[0].Encoding" in tb.stderr
    sup = subprocess.run([sys.executable, "-m", "relaymq", "selector", "check", "a = \u00b2"], capture_output=True, timeout=60)
    assert sup.returncode == 2 and sup.stderr.count(b"\n") == 1 and b"Traceback" not in sup.stderr
