"""`relaymq msg decode FILE` / `relaymq msg encode` (issue 3 'Command line'): decode prints the
headers and body as JSON, encode builds the message back from that JSON."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from relaymq.cli import msg as msg_cli
from relaymq.message import JMSMessage, Message, decode_message

from .golden import mqmd_bytes, rfh2_bytes


def _ibm_file(tmp_path: Path) -> Path:
    raw = mqmd_bytes(">", 2, Encoding=273, CodedCharSetId=1208, Format="MQHRF2", Priority=4, ReplyToQ="R") + rfh2_bytes(
        [b"<mcd><Msd>xmlnsc</Msd></mcd>", b"<usr><n dt='i2'>7</n></usr> "], order=">", encoding=273, fmt="MQSTR"
    ) + b"<a><b>x</b></a>"
    path = tmp_path / "m.bin"
    path.write_bytes(raw)
    return path


def _run_local(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="relaymq")
    msg_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_prints_headers_and_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """decode: MQMD fields, the RFH2 with its folders (types kept) and the body text."""
    code, out, _ = _run_local(["msg", "decode", str(_ibm_file(tmp_path)), "--domain", "auto"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert doc["MQMD"]["ReplyToQ"] == "R" and doc["MQMD"]["Format"] == "MQHRF2" and doc["descriptor_encoding"] == 273
    assert doc["headers"][0]["header"] == "MQRFH2"
    assert doc["headers"][0]["folders"][1] == "<usr><n dt='i2'>7</n></usr>"
    assert doc["headers"][0]["values"]["usr"] == {"n": 7}
    assert doc["body"]["text"] == "<a><b>x</b></a>" and doc["body"]["tree"] == {"a": {"b": "x"}}


def test_encode_of_decode_is_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """encode(decode(bytes)) == bytes for a message built like IBM MQ builds it."""
    src = _ibm_file(tmp_path)
    _, out, _ = _run_local(["msg", "decode", str(src)], capsys)
    (tmp_path / "m.json").write_text(out)
    code, _, _ = _run_local(["msg", "encode", str(tmp_path / "m.json"), "-o", str(tmp_path / "back.bin")], capsys)
    assert code == 0 and (tmp_path / "back.bin").read_bytes() == src.read_bytes()


def test_encode_minimal_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """encode: omitted fields take MQMD defaults; a text body gets Format MQSTR."""
    (tmp_path / "j.json").write_text(json.dumps({"MQMD": {"Priority": 3, "CodedCharSetId": 1208}, "body": {"text": "hello"}}))
    _run_local(["msg", "encode", str(tmp_path / "j.json"), "-o", str(tmp_path / "o.bin")], capsys)
    msg = decode_message((tmp_path / "o.bin").read_bytes())
    assert (msg.md.Priority, msg.md.Format, msg.body) == (3, "MQSTR", b"hello")


@pytest.mark.parametrize("content", [b"MD  short", b"garbage that is not an MQMD at all" * 20])
def test_decode_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    """Errors print one clear line naming field and offset, exit status 2."""
    (tmp_path / "bad.bin").write_bytes(content)
    code, out, err = _run_local(["msg", "decode", str(tmp_path / "bad.bin")], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "MQMD." in err and "byte" in err


def test_encode_rejects_bad_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """encode: bad JSON or an unknown MQMD field is one error line, exit 2."""
    (tmp_path / "a.json").write_text("{nope")
    assert _run_local(["msg", "encode", str(tmp_path / "a.json")], capsys)[0] == 2
    (tmp_path / "b.json").write_text(json.dumps({"MQMD": {"Colour": 1}}))
    code, _, err = _run_local(["msg", "encode", str(tmp_path / "b.json")], capsys)
    assert code == 2 and "MQMD.Colour" in err
    # issue 3 item 7: no bare 'Encoding' / unpack / int() messages - the field is named
    for doc, field in (
        ({"headers": [{"header": "MQHCIH", "bytes": "00"}]}, "headers[0].Encoding"),
        ({"headers": [{"header": "MQRFH", "NameValueString": [["x"]]}]}, "headers[0].NameValueString[0]"),
        ({"descriptor_ccsid": "x"}, "descriptor_ccsid"),
    ):
        (tmp_path / "c.json").write_text(json.dumps(doc))
        code, out, err = _run_local(["msg", "encode", str(tmp_path / "c.json")], capsys)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1


def test_subprocess_decode_encode_round_trip(tmp_path: Path) -> None:
    """The real command line: `python -m relaymq msg decode | msg encode` reproduces the bytes."""
    jms = JMSMessage(message_type="jms_text", body="héllo", JMSPriority=6)
    jms.properties.set("colour", "blue")
    src = tmp_path / "in.bin"
    src.write_bytes(Message.from_jms(jms).to_bytes())
    dec = subprocess.run([sys.executable, "-m", "relaymq", "msg", "decode", str(src)], capture_output=True, timeout=60)
    assert dec.returncode == 0, dec.stderr
    enc = subprocess.run([sys.executable, "-m", "relaymq", "msg", "encode"], input=dec.stdout, capture_output=True, timeout=60)
    assert enc.returncode == 0 and enc.stdout == src.read_bytes()
    bad = subprocess.run([sys.executable, "-m", "relaymq", "msg", "decode", "-"], input=b"XD  " + bytes(400), capture_output=True, timeout=60)
    assert bad.returncode == 2 and b"MQMD.StrucId at byte 0" in bad.stderr
