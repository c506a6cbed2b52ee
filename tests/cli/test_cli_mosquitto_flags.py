"""The mosquitto_pub/mosquitto_sub flags that ``relaymq pub``/``sub`` lacked (issue 18, "the
first hour": "flags as mosquitto_pub/sub" but no -R -F -N -E -T -L -D -A --repeat --quiet
--retained-only, and an unknown flag printed the top-level usage), each against a real broker
with the real command line; -F is compared with Debian's mosquitto_sub itself."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

import pytest

from cli_helpers import PROCESS_TIMEOUT, Background, RunCli
from harness import BrokerProcess
from operator_http import call_json

pytestmark = pytest.mark.interop


def _at(broker: BrokerProcess) -> list[str]:
    return ["-h", broker.host, "-p", str(broker.port)]


def test_format_matches_mosquitto_sub(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    """-F: the same bytes as mosquitto_sub for the message sequences and escapes."""
    mosquitto_sub = shutil.which("mosquitto_sub")
    assert mosquitto_sub, "mosquitto_sub (Debian package mosquitto-clients) is needed for the comparison"
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-r", "-t", "fmt/a b", "-m", "h\xe9llo 1").returncode == 0
    fmt = r"%t|%p|%q|%r|%l|%x|%X|%%|@@\t|end"
    ours = run_cli("sub", *_at(mqtt_broker), "-q", "1", "-t", "fmt/#", "-C", "1", "-F", fmt)
    theirs = subprocess.run([mosquitto_sub, *_at(mqtt_broker), "-q", "1", "-t", "fmt/#", "-C", "1", "-F", fmt],
                            capture_output=True, timeout=PROCESS_TIMEOUT)
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout == "fmt/a b|h\xe9llo 1|1|1|8|68c3a96c6c6f2031|68C3A96C6C6F2031|%|@\t|end\n".encode()
    bad = run_cli("sub", *_at(mqtt_broker), "-t", "fmt/#", "-F", "%k")
    assert (bad.returncode, bad.stderr) == (2, "relaymq sub: -F: unknown sequence %k\n")


def test_no_newline_stale_filter_out_and_count(
    mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]
) -> None:
    """-N (no end of line), -R (no stale, i.e. retained, messages), -T (topics left out): what
    they skip is neither printed nor counted by -C."""
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-r", "-t", "n/old", "-m", "stale").returncode == 0
    sub = subscriber(*_at(mqtt_broker), "-q", "1", "-t", "n/#", "-N", "-R", "-T", "n/debug/#", "-C", "2")
    for topic, text in (("n/debug/x", "noise"), ("n/a", "one"), ("n/b", "two")):
        assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", topic, "-m", text).returncode == 0
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == b"onetwo"


def test_retained_only(mqtt_broker: BrokerProcess, run_cli: RunCli, subscriber: Callable[..., Background]) -> None:
    """--retained-only: the retained messages, then exit at the first fresh one (not printed)."""
    for topic in ("r/a", "r/b"):
        assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-r", "-t", topic, "-m", f"kept {topic}").returncode == 0
    sub = subscriber(*_at(mqtt_broker), "-q", "1", "-t", "r/#", "-v", "--retained-only")
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "r/c", "-m", "fresh").returncode == 0
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert sorted(finished.lines) == ["r/a kept r/a", "r/b kept r/b"]


def test_exit_after_subscribe_sets_up_a_session(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    """-E: exit once subscribed; with -c the session then keeps what is published meanwhile."""
    first = run_cli("sub", *_at(mqtt_broker), "-q", "1", "-c", "-i", "flags-e", "-t", "e/#", "-E")
    assert (first.returncode, first.stdout) == (0, b""), first.stderr
    assert run_cli("pub", *_at(mqtt_broker), "-q", "1", "-t", "e/x", "-m", "kept while away").returncode == 0
    later = run_cli("sub", *_at(mqtt_broker), "-q", "1", "-c", "-i", "flags-e", "-t", "e/#", "-C", "1")
    assert (later.returncode, later.lines) == (0, ["kept while away"])


def test_url_repeat_and_properties(mqtt_broker: BrokerProcess, run_cli: RunCli,
                                   subscriber: Callable[..., Background]) -> None:
    """-L mqtt://host:port/topic for both; --repeat N; -D publish properties, which make pub an
    MQTT 5 client, as the subscriber's %P and %C show."""
    url = f"mqtt://{mqtt_broker.host}:{mqtt_broker.port}/l/topic"
    sub = subscriber("-L", url, "-V", "5", "-q", "1", "-C", "3", "-F", "%t %p %P %C")
    result = run_cli("pub", "-L", url, "-q", "1", "-m", "hi", "--repeat", "3",
                     "-D", "publish", "user-property", "colour", "blue", "-D", "publish", "content-type", "text/x")
    assert result.returncode == 0, result.stderr
    finished = sub.finish()
    assert finished.returncode == 0, finished.stderr
    assert finished.lines == ["l/topic hi colour:blue text/x"] * 3


def test_property_and_url_errors_are_one_line(mqtt_broker: BrokerProcess, run_cli: RunCli) -> None:
    """-D and -L mistakes: one line naming the problem, exit 1."""
    cases = [
        (["-D", "publish", "no-such-thing", "1"], "relaymq pub: -D publish no-such-thing: no such property\n"),
        (["-D", "publish", "receive-maximum", "5"], "relaymq pub: -D publish receive-maximum: not a property of publish\n"),
        (["-D", "subscribe", "user-property", "a", "b"],
         "relaymq pub: -D subscribe: the command must be one of connect, publish, will\n"),
        (["-D", "publish", "message-expiry-interval", "soon"],
         "relaymq pub: -D publish message-expiry-interval: expected an integer, got 'soon'\n"),
        (["-L", "http://host/t"], "relaymq pub: -L http://host/t: the scheme must be mqtt:// or mqtts://\n"),
    ]
    for flags, expected in cases:
        target = [] if "-L" in flags else ["-t", "x"]
        result = run_cli("pub", *_at(mqtt_broker), *target, "-m", "x", *flags)
        assert (result.returncode, result.stderr) == (1, expected), flags
    no_topic = run_cli("pub", *_at(mqtt_broker), "-m", "x")
    assert (no_topic.returncode, no_topic.stderr) == (1, "relaymq pub: give a topic with -t or -L\n")


def test_bind_address(broker_factory: Callable[..., BrokerProcess], run_cli: RunCli,
                      background: Callable[..., Background]) -> None:
    """-A: the client's socket leaves from that local address, as the broker sees it (the admin
    API's clients list)."""
    broker = broker_factory(kind="relaymq", store="memory")
    sub = background("sub", *_at(broker), "-A", "127.0.0.2", "-i", "bound-client", "-t", "a/#")
    sub.wait_for_debug("Received SUBACK")
    status, client = call_json(broker, "GET", "/relaymq/mqtt/clients/bound-client")
    assert status == 200 and client["peer"].startswith("127.0.0.2:"), client


def test_quiet(closed_broker: BrokerProcess, run_cli: RunCli) -> None:
    """--quiet: a refused connection is exit 1 and nothing on stderr."""
    loud = run_cli("pub", *_at(closed_broker), "-t", "q", "-m", "x")
    quiet = run_cli("pub", *_at(closed_broker), "-t", "q", "-m", "x", "--quiet")
    assert loud.returncode == quiet.returncode == 1
    assert loud.stderr.startswith("relaymq pub: connection refused") and quiet.stderr == ""


@pytest.mark.parametrize("command", [["pub", "-t", "a", "-m", "b"], ["sub", "-t", "a"], ["queue", "define", "Q"]])
def test_unknown_flag_prints_that_commands_usage(run_cli: RunCli, command: list[str]) -> None:
    """An unknown flag prints the usage of the (sub-)command it was given to, exit 2."""
    result = run_cli(*command, "--bogus")
    assert result.returncode == 2
    usage = "usage: relaymq " + " ".join(word for word in command if not word.startswith("-") and word.islower()
                                         and word in ("pub", "sub", "queue", "define"))
    assert result.stderr.startswith(usage + " "), result.stderr
    assert result.stderr.rstrip().endswith("error: unrecognized arguments: --bogus")
