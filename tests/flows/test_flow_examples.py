"""The two examples run as their READMEs say, as a new user would run them (issue 6 "Done
when" 1): each command below is the README's own (checked against the README text, with the
default ports), run with the ports moved as the README's "Other ports" explains, in a copy of
the example folder. The telemetry example: `relaymq serve` with its relaymq.toml, `relaymq sub`,
`device_simulator.py` as a subprocess, the MQ-format subscriber with curl and `relaymq queue
get`, a malformed batch on the error queue. The SOAP example: curl, HTTP/1.1 and 1.0."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flow_helpers import SOAP, TELEMETRY
from harness import free_port, port_accepts

BIN = Path(sys.executable).parent
DEFAULTS = {"mqtt": 1883, "web": 8080, "channel": 8081, "scada1": 1884, "scada2": 1885}
#: The moved ports of the READMEs' "Other ports" examples.
MOVED = {"mqtt": 1983, "web": 8180, "channel": 8181, "scada1": 1984, "scada2": 1985}


def readme_command(readme: str, template: str, ports: dict[str, int]) -> list[str]:
    """``template`` with the README's ports (its defaults, or those of its "Other ports"
    example) must be in the README; returned with ``ports`` and ``relaymq``/``python``
    resolved to this virtualenv."""
    said = [template.format(**DEFAULTS), template.format(**MOVED)]
    assert any(text in readme for text in said), f"the README no longer says: {said[0]}"
    argv = shlex.split(template.format(**ports))
    if argv[0] == "relaymq":
        argv[0] = str(BIN / "relaymq")
    elif argv[0] == "python":
        argv[0] = sys.executable
    return argv


def copy_example(source: Path, tmp: Path) -> Path:
    target = tmp / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("data", "__pycache__"))
    return target


class Broker:
    """``relaymq serve`` started from the example folder, stopped (SIGTERM) at the end."""

    def __init__(self, argv: list[str], cwd: Path, web: int) -> None:
        self.log = cwd / "broker.log"
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)
        self.web = web

    def wait_for_flow(self, name: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            if port_accepts("127.0.0.1", self.web):
                # from the example's folder, as its README: the CLI finds ./data/admin.credentials
                done = subprocess.run([str(BIN / "relaymq"), "flow", "list", "--url", f"http://127.0.0.1:{self.web}"],
                                      capture_output=True, text=True, cwd=self.log.parent)
                if done.returncode == 0 and name in done.stdout:
                    return
            time.sleep(0.1)
        raise AssertionError(f"flow {name} not deployed:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ports() -> dict[str, int]:
    return {name: free_port() for name in DEFAULTS}


def test_telemetry_example_runs_from_its_readme(tmp_path: Path, ports: dict[str, int]):
    """flows-http.md items 10-13 as the README runs them: the subscriber prints exactly the
    README's two lines (usr values as MQTT 5 user properties), a psc queue subscriber gets
    them in its usr folder, a malformed batch lands on TELEMETRY.ERRORS."""
    readme = (TELEMETRY / "README.md").read_text()
    folder = copy_example(TELEMETRY, tmp_path)
    flow = folder / "telemetry.yaml"  # the README: set the SCADAInput ports in telemetry.yaml
    flow.write_text(flow.read_text().replace("port: 1884", f"port: {ports['scada1']}")
                    .replace("port: 1885", f"port: {ports['scada2']}"))
    broker = Broker(readme_command(readme, "relaymq serve --config relaymq.toml --port {mqtt} --http-port {web} "
                                   "--channel-port {channel}", ports), folder, ports["web"])
    try:
        broker.wait_for_flow("telemetry")
        # 2. the subscriber (-p as in "Other ports"; -C/-W/-d only so that the test ends and
        # knows when the subscription is in place)
        sub_argv = readme_command(readme, "relaymq sub -p {mqtt} -V 5 -t 'LCUnit/#' -v -U", ports)
        sub = subprocess.Popen(sub_argv + ["-C", "2", "-W", "60", "-d"], cwd=folder,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        subscribed = threading.Event()

        def watch() -> None:
            for line in sub.stderr:  # type: ignore[union-attr]
                if b"Received SUBACK" in line:
                    subscribed.set()

        threading.Thread(target=watch, daemon=True).start()
        assert subscribed.wait(30), "the subscriber did not subscribe"
        # 3. the device
        device = run(readme_command(readme, "python device_simulator.py --port {scada1}", ports), folder)
        assert device.returncode == 0, device.stderr
        assert device.stdout.startswith("sent batch 1/1")
        out, _ = sub.communicate(timeout=60)
        expected = readme.split("The subscriber prints")[1].split("```\n")[1]
        assert out.decode() == expected
        assert sub.returncode == 0

        # A subscriber in MQ format (psc RegSub over REST with curl, read with relaymq queue get).
        curl = readme_command(readme, "curl -s -X POST http://127.0.0.1:{web}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/"
                              "SYSTEM.BROKER.CONTROL.QUEUE/message", ports)
        register = run(curl + ["-H", "Content-Type: text/plain", "-H", "ibm-mq-md-replyTo: PSC.REPLY", "--data",
                               "<psc><Command>RegSub</Command><Topic>LCUnit/#</Topic><QName>EVENTS.SUBS</QName></psc>"],
                       folder)
        assert register.returncode == 0, register.stderr
        assert "--data '<psc><Command>RegSub</Command><Topic>LCUnit/#</Topic><QName>EVENTS.SUBS</QName></psc>'" in readme
        reply = run(readme_command(readme, "relaymq queue get PSC.REPLY --url http://127.0.0.1:{web} --wait 5", ports), folder)
        assert reply.returncode == 0 and "<Completion>ok</Completion>" in reply.stdout, reply
        assert run(readme_command(readme, "python device_simulator.py --port {scada1}", ports), folder).returncode == 0
        events = []
        for _ in range(2):
            got = run(readme_command(readme, "relaymq queue get EVENTS.SUBS --url http://127.0.0.1:{web} --wait 5", ports),
                      folder)
            assert got.returncode == 0, got.stderr
            events.append(json.loads(got.stdout))
        events.sort(key=lambda e: e["usr"])
        assert events[0]["body"] == "" and 'topic;"LCUnit/12345/Heartbeat";string' in events[0]["usr"]
        assert events[1]["body"].startswith("Changing state from 'Starting'")
        assert 'b_time;"20040417103118";string' in events[1]["usr"]

        # A malformed batch goes to the error queue, with why.
        (folder / "bad.xml").write_text('<events d_tstamp="1"><broken>\n')
        assert 'echo \'<events d_tstamp="1"><broken>\' > bad.xml' in readme
        sent = run(readme_command(readme, "python device_simulator.py --port {scada1} --file bad.xml", ports), folder)
        assert sent.returncode == 0, sent.stderr
        error = run(readme_command(readme, "relaymq queue get TELEMETRY.ERRORS --url http://127.0.0.1:{web} --wait 5",
                                   ports), folder)
        assert error.returncode == 0, error.stderr
        message = json.loads(error.stdout)
        assert message["body"] == '<events d_tstamp="1"><broken>\n'
        assert 'relaymq_node;"SplitBatch";string' in message["usr"]
        # Run data stays in the example's own folder (ignored by git).
        assert (folder / "data").is_dir()
    finally:
        broker.stop()


def test_soap_example_runs_from_its_readme(tmp_path: Path, ports: dict[str, int]):
    """flows-http.md item 9 as the README runs it: curl POSTs the seed's request.xml and gets
    the seed's response envelope; `curl -0` (the seed's HTTP/1.0) gets an HTTP/1.0 answer."""
    readme = (SOAP / "README.md").read_text()
    folder = copy_example(SOAP, tmp_path)
    broker = Broker(readme_command(readme, "relaymq serve --config relaymq.toml --port {mqtt} --http-port {web} "
                                   "--channel-port {channel}", ports), folder, ports["web"])
    try:
        broker.wait_for_flow("greenpages")
        curl = readme_command(readme, "curl -s -X POST http://127.0.0.1:{web}/greenpages/servlet/rpcrouter", ports)
        assert "-H 'Content-Type: text/xml; charset=utf-8' -H 'SOAPAction: \"\"'" in readme
        headers = ["-H", "Content-Type: text/xml; charset=utf-8", "-H", 'SOAPAction: ""']
        answer = run(curl + headers + ["--data-binary", "@request.xml", "-i"], folder)
        assert answer.returncode == 0, answer.stderr
        head, _, body = answer.stdout.partition("\n\n")  # text mode: CRLF read as LF
        assert head.startswith("HTTP/1.1 200 OK")
        assert "content-type: text/xml; charset=utf-8" in head.lower()
        for part in ('<fullName xsi:type="xsd:string">Joseph Bloggs</fullName>',
                     '<empNum xsi:type="xsd:int">65874</empNum>', "(718)545-3623"):
            assert part in body
        old = run(curl + ["-0", "-i"] + headers + ["--data-binary", "@request.xml"], folder)
        assert old.stdout.startswith("HTTP/1.0 200 OK") and "Joseph Bloggs" in old.stdout
        unknown = (folder / "request.xml").read_text().replace("bloggs, joe", "nobody")
        (folder / "unknown.xml").write_text(unknown)
        fault = run(curl + headers + ["--data-binary", "@unknown.xml", "-i"], folder)
        assert fault.stdout.startswith("HTTP/1.1 500") and "faultstring" in fault.stdout
        assert (folder / "data").is_dir()
    finally:
        broker.stop()
