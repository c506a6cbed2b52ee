"""``relaymq pub`` and ``relaymq sub`` end to end, as subprocesses, against a real broker
(see conftest.py: Mosquitto by default, relaymq's own with RELAYMQ_CLI_TEST_BROKER=relaymq).

Requirements are from the CLI brief (mosquitto_pub/mosquitto_sub flags, exit codes, one line
per payload) and the MQTT digest (docs: /work/shared/spec/mqtt.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cli_helpers import PROCESS_TIMEOUT, Background, RunCli
from harness import BrokerProcess, free_port

pytestmark = pytest.mark.interop


def _at(broker: BrokerProcess) -> list[str]:
    return ["-h", broker.host, "-p", str(broker.port)]


@pytest.mark.parametrize("version", ["31", "311", "5"])
def test_qos_0_1_2_on_every_protocol_version(
    version: str, mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """Brief: -V 31|311|5 and -q 0/1/2; mqtt.md 7-9 (the three QoS flows) and 12 (delivered
    QoS = min(published, granted)): a QoS 2 subscriber gets one copy of each of a QoS 0, 1 and
    2 publication, printed by -v as "topic payload", and -C 3 makes it exit 0."""
    sub = subscriber(*_at(mqtt_broker), "-V", version, "-q", "2", "-t", f"qos{version}/#", "-v", "-C", "3")
    for qos in ("0", "1", "2"):
        result = run_cli("pub", *_at(mqtt_broker), "-V", version, "-q", qos, "-t", f"qos{version}/q{qos}", "-m", f"m{qos}")
        assert result.returncode == 0, result.stderr
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert sorted(finished.lines) == [f"qos{version}/q0 m0", f"qos{version}/q1 m1", f"qos{version}/q2 m2"]


def test_count_stops_after_n_messages(
    mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """Brief: sub -C N exits after N messages; each payload on its own line (no -v: payload only)."""
    sub = subscriber(*_at(mqtt_broker), "-q", "1", "-t", "count/x", "-C", "2")
    for text in ("one", "two", "three"):
        assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "count/x", "-m", text).returncode == 0
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert finished.lines == ["one", "two"]


def test_retained_message_and_null_message_clears_it(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    """Brief: pub -r retains, pub -n -r sends a zero-length retained message, which clears the
    retained message (mqtt.md 31: a new subscriber gets the retained message after SUBACK)."""
    assert run_cli("pub", *_at(mqtt_broker), "-r", "-q", "1", "-t", "keep/a", "-m", "kept-a").returncode == 0
    got = run_cli("sub", *_at(mqtt_broker), "-t", "keep/a", "-C", "1")
    assert (got.returncode, got.lines) == (0, ["kept-a"])

    assert run_cli("pub", *_at(mqtt_broker), "-r", "-q", "1", "-t", "keep/a", "-n").returncode == 0
    assert run_cli("pub", *_at(mqtt_broker), "-r", "-q", "1", "-t", "keep/b", "-m", "kept-b").returncode == 0
    got = run_cli("sub", *_at(mqtt_broker), "-t", "keep/#", "-v", "-C", "1")
    assert (got.returncode, got.lines) == (0, ["keep/b kept-b"])


def test_lines_from_stdin_and_binary_file(
    mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background], tmp_path: Path
) -> None:
    """Brief: pub -l sends one message per stdin line (blank lines skipped); pub -f sends a
    file's bytes unchanged as one message."""
    sub = subscriber(*_at(mqtt_broker), "-q", "1", "-t", "lines/x", "-C", "3")
    lines = run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "lines/x", "-l", input=b"alpha\n\nbeta\r\n")
    assert lines.returncode == 0, lines.stderr
    payload = tmp_path / "payload.bin"
    payload.write_bytes(bytes(range(256)).replace(b"\n", b""))
    sent = run_cli("pub", *_at(mqtt_broker), "-q", "2", "-t", "lines/x", "-f", str(payload))
    assert sent.returncode == 0, sent.stderr
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == b"alpha\nbeta\n" + payload.read_bytes() + b"\n"


@pytest.mark.parametrize("version", ["311", "5"])
def test_persistent_session_keeps_messages_while_away(
    version: str, mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """Brief: sub -c is a persistent session (clean session false; with -V 5 a session that
    does not expire); mqtt.md 26: QoS 1/2 messages for the client are kept until it reconnects."""
    session = ["-V", version, "-c", "-i", f"cli-persistent-{version}", "-q", "1", "-t", "away/#"]
    first = subscriber(*_at(mqtt_broker), *session, "-C", "1")
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "away/1", "-m", "while-here").returncode == 0
    assert first.finish().lines == ["while-here"]

    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "away/2", "-m", "while-away").returncode == 0
    back = run_cli("sub", *_at(mqtt_broker), *session, "-C", "1")
    assert (back.returncode, back.lines) == (0, ["while-away"])


def test_will_is_published_when_the_client_vanishes(
    mqtt_broker: BrokerProcess, subscriber: Callable[..., Background], background: Callable[..., Background]
) -> None:
    """Brief: --will-topic/--will-payload/--will-qos/--will-retain; mqtt.md 25: the broker
    publishes the will when the connection breaks without DISCONNECT."""
    sub = subscriber(*_at(mqtt_broker), "-q", "1", "-t", "wills/#", "-v", "-C", "1")
    doomed = background(
        "pub", *_at(mqtt_broker), "-t", "wills/ignored", "-l",
        "--will-topic", "wills/doomed", "--will-payload", "gone", "--will-qos", "1",
    )
    doomed.wait_for_debug("Received CONNACK")
    doomed.proc.kill()  # no DISCONNECT: the broker sees the socket close
    finished = sub.finish()
    assert (finished.returncode, finished.lines) == (0, ["wills/doomed gone"])


def test_refused_connection_prints_the_connack_reason(closed_broker: BrokerProcess, run_cli: RunCli) -> None:
    """Brief: non-zero exit with a one-line error that names the CONNACK reason when the
    broker refuses the connection (here: anonymous clients not allowed)."""
    for command in (["pub", "-t", "a", "-m", "x"], ["sub", "-t", "a"]):
        result = run_cli(command[0], *_at(closed_broker), *command[1:])
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1
        assert result.stderr.startswith(f"relaymq {command[0]}: connection refused: ")
        assert "authori" in result.stderr.lower()


def test_unreachable_broker_is_a_one_line_error(run_cli: RunCli) -> None:
    """Brief: non-zero exit with a one-line error when the connection fails."""
    port = free_port()  # nothing listens there (it was free a moment ago)
    result = run_cli("pub", "-h", "127.0.0.1", "-p", str(port), "-t", "a", "-m", "x")
    assert result.returncode == 1
    assert result.stderr == f"relaymq pub: cannot connect to 127.0.0.1:{port}: Connection refused\n"


def test_sub_timeout_exits_with_status_27(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    """Brief: sub -W SECONDS gives up; like mosquitto_sub the status is 27 (timed out)."""
    result = run_cli("sub", *_at(mqtt_broker), "-t", "nobody/publishes/here", "-W", "0.2")
    assert result.returncode == 27
    assert result.stdout == b""
    assert "timed out" in result.stderr


def test_sub_ends_quietly_when_its_reader_goes_away(
    mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """Brief: `sub` prints each payload flushed per message; as a pipeline stage
    (`relaymq sub ... | head -1`) it must end, without a traceback, when the reader leaves,
    rather than hang with its network thread dead."""
    sub = subscriber(*_at(mqtt_broker), "-t", "pipe/x")
    assert sub.proc.stdout is not None
    sub.proc.stdout.close()  # the reader is gone
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "pipe/x", "-m", "nobody reads this").returncode == 0
    assert sub.proc.wait(timeout=PROCESS_TIMEOUT) == 0
    assert sub.proc.stderr is not None
    assert "Traceback" not in sub.proc.stderr.read().decode()


def test_user_properties_and_content_filter(
    broker_factory: Callable[..., BrokerProcess], run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """pubsub.md item 17 through the command line: `relaymq pub --user-property` sends MQTT 5
    User Properties (the publication's usr folder) and `relaymq sub --filter` subscribes with
    the relaymq-filter extension, so only the blue reading arrives (printed with -U)."""
    broker = broker_factory(kind="relaymq", store="memory")
    sub = subscriber(*_at(broker), "-V", "5", "-t", "plant/+/temp", "-v", "-U", "-C", "1",
                     "--filter", "usr.colour = 'blue'")
    for colour, value in (("red", "19.0"), ("blue", "21.5")):
        result = run_cli("pub", *_at(broker), "-V", "5", "-q", "1", "-t", "plant/p1/temp", "-m", value,
                         "--user-property", "colour", colour)
        assert result.returncode == 0, result.stderr
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert finished.lines == ["plant/p1/temp 21.5\tcolour=blue"]


def test_bad_filter_reason_comes_back_to_the_client(
    broker_factory: Callable[..., BrokerProcess], run_cli: RunCli
) -> None:
    """Issue 18 "the first hour": `relaymq sub --filter` with a bad expression printed only
    "Implementation specific error", the reason being in the broker's log; the broker now
    sends it in the MQTT 5 SUBACK's Reason String (with its position) and sub prints it."""
    broker = broker_factory(kind="relaymq", store="memory")
    result = run_cli("sub", *_at(broker), "-V", "5", "-t", "plant/#", "--filter", "usr.colour = = 'blue'")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("relaymq sub: subscription to 'plant/#' refused: Implementation specific error"
                               " (invalid content filter \"usr.colour = = 'blue'\": ")
    assert "position" in lines[0] or "column" in lines[0], lines[0]
    assert lines[1] == "relaymq sub: every subscription was refused"


def test_user_properties_need_mqtt_5(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    result = run_cli("pub", *_at(mqtt_broker), "-V", "311", "-t", "a", "-m", "x", "--user-property", "k", "v")
    assert result.returncode == 1 and "MQTT 5" in result.stderr
