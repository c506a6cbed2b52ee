"""Failure handling in a running broker, through real queue and HTTP clients: redelivery that
eventually succeeds, the BackoutCount kept across a crash, why a message failed in its usr
folder on the error queue, the input node's catch terminal, TryCatch, Trace to the log and
to a file, and HTTP input that does not re-run a failed flow (flows-http.md items 2, 4; seed
000 l.443, l.2821-2828). Messages are put with ``relaymq queue put --url`` and read back with
``relaymq queue get --url`` or the REST interface."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flow_helpers import WAIT, Client, FlowBroker, admin, deploy_text as deploy, http, queue_cli, rest_get
from harness import free_port
from relaymq.qmgr.rest_format import parse_usr

QUEUES = ("FLAKY.IN", "FLAKY.OUT", "POISON", "FAILED", "CAUGHT", "TRIED", "TRACED", "SLOW.IN")


def put(broker: FlowBroker, queue: str, text: str) -> None:
    done = queue_cli(broker, "put", queue, "--message", text)
    assert done.returncode == 0, done.stderr


def get(broker: FlowBroker, queue: str, wait: float = 20) -> dict:
    """``relaymq queue get QUEUE --url``: the JSON it prints (usr parsed into a dict)."""
    done = queue_cli(broker, "get", queue, "--wait", str(wait))
    assert done.returncode == 0, (queue, done.stderr)
    message = json.loads(done.stdout)
    message["usr"] = {name: value for name, value, _ in parse_usr([message["usr"]])} if "usr" in message else {}
    return message


def wait_until(check, what: str, timeout: float = WAIT) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture(scope="module")
def broker():
    b = FlowBroker(queues=QUEUES)
    b.start()
    yield b
    b.cleanup()


def test_redelivery_that_eventually_succeeds(broker):
    """Item 4: a message fed by a queue client fails twice, is redelivered in place with
    BackoutCount 1 and 2, and the third run's output is the only one the queue gets."""
    flaky = ("def main(c):\n"
             "    if c.input.mq.md.BackoutCount < 2:\n"
             "        raise RuntimeError('not yet')\n"
             "    m = c.copy_input()\n"
             "    m.mq.body = c.input.mq.body + b' after %d backouts' % c.input.mq.md.BackoutCount\n"
             "    return m\n")
    deploy(broker, f"flow: flaky\nbackout_threshold: 5\nnodes:\n  In: {{type: MQInput, queue: FLAKY.IN}}\n"
                   f"  C: {{type: Compute, code: {json.dumps(flaky)}}}\n  Out: {{type: MQOutput, queue: FLAKY.OUT}}\n"
                   "connections:\n  - In.out -> C\n  - C.out -> Out\n")
    try:
        put(broker, "FLAKY.IN", "order 7")
        assert get(broker, "FLAKY.OUT")["body"] == "order 7 after 2 backouts"
        assert rest_get(broker, "FLAKY.OUT", 500)[0] == 204  # the failed runs put nothing
        stats = admin(broker, "GET", "/flaky")[1]["stats"]
        assert (stats["backouts"], stats["completed"]) == (2, 1)
    finally:
        admin(broker, "DELETE", "/flaky")


def test_backout_count_survives_a_crash_and_the_failure_says_why(broker, tmp_path: Path):
    """Item 4 (seed 000 l.2821-2828) across a SIGKILL: a poison message's BackoutCount is on
    disk before each rerun, so after the crash it continues from where it was (as IBM MQ
    with HARDENBO) and reaches the threshold; it then goes down the failure path to an error
    queue, read back with `relaymq queue get`, carrying the flow, node and exception in usr."""
    trace = tmp_path / "runs.txt"
    slow_poison = ("import time\n"
                   "def main(c):\n"
                   "    time.sleep(1.5)\n"
                   "    raise ValueError('cannot price item %s' % c.input.mq.body.decode())\n")
    deploy(broker, f"flow: poison\nbackout_threshold: 3\nnodes:\n  In: {{type: MQInput, queue: POISON}}\n"
                   f"  Log: {{type: Trace, destination: file, file: {json.dumps(str(trace))}, pattern: 'run ${{Root.MQMD.BackoutCount}}'}}\n"
                   f"  Price: {{type: Compute, code: {json.dumps(slow_poison)}}}\n"
                   "  Failed: {type: MQOutput, queue: FAILED}\n"
                   "connections:\n  - In.out -> Log\n  - Log.out -> Price\n  - In.failure -> Failed\n")
    put(broker, "POISON", "X-99")
    wait_until(lambda: trace.exists() and "run 1" in trace.read_text(), "the second run did not start")
    broker.kill()  # during the second run: BackoutCount 1 is on disk
    broker.start()
    try:
        failed = get(broker, "FAILED", 30)
        assert failed["body"] == "X-99"
        assert trace.read_text().split("\n")[:-1] == ["run 0", "run 1", "run 1", "run 2"]
        assert failed["usr"]["relaymq_flow"] == "poison"
        assert failed["usr"]["relaymq_node"] == "Price"
        assert failed["usr"]["relaymq_error_type"] == "RecoverableException"
        assert failed["usr"]["relaymq_error_text"] == "ValueError: cannot price item X-99"
        assert rest_get(broker, "POISON", 500)[0] == 204
    finally:
        admin(broker, "DELETE", "/poison")


def test_input_catch_terminal_and_trycatch(broker):
    """Item 2 (TryCatch, catch terminals): a Throw inside TryCatch's try path discards that
    path's put and runs its catch path; a Compute that raises on the main path sends the
    message to the input node's catch terminal with the failed outputs discarded; neither
    is backed out."""
    port = free_port()
    split = ("def main(c):\n    m = c.copy_input()\n"
             "    if c.input.mq.body == b'boom':\n        raise RuntimeError('no boom allowed')\n    return m\n")
    deploy(broker, f"flow: catching\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
                   "  Try: {type: TryCatch}\n  Early: {type: MQOutput, queue: TRIED}\n"
                   "  Throw: {type: Throw, message: thrown on purpose, number: 3042}\n"
                   "  Caught: {type: MQOutput, queue: CAUGHT}\n"
                   f"  Check: {{type: Compute, code: {json.dumps(split)}}}\n  Passed: {{type: MQOutput, queue: TRIED}}\n"
                   "  InputCatch: {type: MQOutput, queue: FAILED}\n"
                   "connections:\n  - In.out -> Try\n  - Try.try -> Early\n  - Early.out -> Throw\n"
                   "  - Try.catch -> Caught\n  - Try.catch -> Check\n  - Check.out -> Passed\n"
                   "  - In.catch -> InputCatch\n")
    device = Client(port, "v311", "dev")
    try:
        device.publish("x", b"fine")
        assert get(broker, "CAUGHT")["body"] == "fine"
        assert get(broker, "TRIED")["body"] == "fine"  # from Passed; Early's put was discarded
        device.publish("x", b"boom")
        assert get(broker, "FAILED")["body"] == "boom"  # the input's catch terminal
        assert rest_get(broker, "TRIED", 500)[0] == 204 and rest_get(broker, "CAUGHT", 500)[0] == 204
        stats = admin(broker, "GET", "/catching")[1]["stats"]
        assert stats["completed"] == 2 and stats["backouts"] == 0
    finally:
        device.close()
        admin(broker, "DELETE", "/catching")


def test_trace_to_the_log_and_to_a_file(broker, tmp_path: Path):
    """Item 2 (Trace): one line per message to the broker's log and to a file, ${path}
    references resolved against the message tree, the message passed on unchanged."""
    port = free_port()
    path = tmp_path / "trace.txt"
    deploy(broker, f"flow: tracing\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1, domain: XMLNSC}}\n"
                   "  ToLog: {type: Trace, destination: log, pattern: 'traced ${psc.Topic} from ${Root.MQMD.UserIdentifier}'}\n"
                   f"  ToFile: {{type: Trace, destination: file, file: {json.dumps(str(path))}, pattern: '${{psc.Topic}}=${{Body.t}}'}}\n"
                   "  Out: {type: MQOutput, queue: TRACED}\n"
                   "connections:\n  - In.out -> ToLog\n  - ToLog.out -> ToFile\n  - ToFile.out -> Out\n")
    device = Client(port, "v311", "tracer")
    try:
        device.publish("plant/boiler", b"<t>71</t>")
        assert get(broker, "TRACED")["body"] == "<t>71</t>"
        assert path.read_text() == "plant/boiler=71\n"
        wait_until(lambda: "ToLog: traced plant/boiler from tracer-" in broker.log_tail(200), "no trace line in the log")
    finally:
        device.close()
        admin(broker, "DELETE", "/tracing")


def test_http_input_runs_a_failing_flow_once(broker, tmp_path: Path):
    """Item 4 for HTTP: a failed run is not re-run up to the backout threshold (it may have
    called web services); the client gets 500 with the reason at once and nothing is put to a
    backout queue."""
    runs = tmp_path / "runs.txt"
    fail = ("def main(c):\n"
            f"    open({str(runs)!r}, 'a').write('run\\n')\n"
            "    raise RuntimeError('the directory is down')\n")
    deploy(broker, f"flow: once\nbackout_threshold: 5\nbackout_queue: FAILED\nnodes:\n  In: {{type: HTTPInput, path: /once}}\n"
                   f"  C: {{type: Compute, code: {json.dumps(fail)}}}\n  Out: {{type: HTTPReply}}\n"
                   "connections:\n  - In.out -> C\n  - C.out -> Out\n")
    try:
        answer = http("POST", f"{broker.url}/once", b"<q/>")
        assert answer.status == 500 and b"the directory is down" in answer.body
        assert runs.read_text() == "run\n"
        assert rest_get(broker, "FAILED", 500)[0] == 204
    finally:
        admin(broker, "DELETE", "/once")
