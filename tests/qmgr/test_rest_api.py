"""The REST interface against a real `relaymq serve` (tests/harness.py), with urllib and
curl as the clients, shaped like IBM MQ's messaging REST API v3 (issue 5 "REST interface";
docs/rest.md; everyplace.md items 7, 14, 15, 22)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from harness import BrokerProcess, free_port, port_accepts

BASE = "/ibmmq/rest/v3"


class Rest:
    def __init__(self, broker: BrokerProcess, port: int, auth: tuple[str, str] | None = None) -> None:
        self.broker, self.port, self.auth = broker, port, auth

    def call(self, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body, method=method,
                                         headers=dict(headers or {}))
        if self.auth is not None:
            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

    def put(self, queue: str, text: str, headers: dict[str, str] | None = None, qmgr: str = "QM1"):
        return self.call("POST", f"{BASE}/messaging/qmgr/{qmgr}/queue/{queue}/message", text.encode(),
                         {"Content-Type": "text/plain;charset=utf-8", **(headers or {})})

    def get(self, queue: str, query: str = ""):
        return self.call("DELETE", f"{BASE}/messaging/qmgr/QM1/queue/{queue}/message{query}")

    def browse(self, queue: str, query: str = ""):
        return self.call("GET", f"{BASE}/messaging/qmgr/QM1/queue/{queue}/message{query}")


class QueueBroker(BrokerProcess):
    """A BrokerProcess whose config also has [[qmgr.queue]] tables (the harness writes only
    sections of scalars)."""

    def __init__(self, *args, queues: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.queues = queues

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "relaymq.toml"
        conf.write_text(conf.read_text() + "\n" + self.queues)
        return cmd


def _start(tmp_path, http: dict | None = None, queues: str = "",
           auth: tuple[str, str] | None = None) -> tuple[BrokerProcess, int]:
    port = free_port()
    config = {"qmgr": {"name": "QM1", "channel_port": 0, "channel_host": "127.0.0.1"},
              "http": {"host": "127.0.0.1", "port": port, **(http or {})}}
    broker = QueueBroker("relaymq", config=config, workdir=tmp_path / "broker", queues=queues)
    broker.start()
    deadline = time.monotonic() + 30
    # HTTP starts after the MQTT listener, the queue manager after HTTP (503 until then).
    while not port_accepts("127.0.0.1", port) or Rest(broker, port, auth).call("GET", f"{BASE}/admin/qmgr")[0] == 503:
        if time.monotonic() > deadline or not broker.running:
            broker.cleanup()
            raise RuntimeError(f"HTTP did not start on {port}\n{broker.describe_log()}")
        time.sleep(0.05)
    return broker, port


@pytest.fixture(scope="module")
def rest(tmp_path_factory) -> Iterator[Rest]:
    tmp = tmp_path_factory.mktemp("rest")
    queues = ('[[qmgr.queue]]\nname = "ORDERS"\n\n'
              '[[qmgr.queue]]\nname = "SMALL"\nmax_depth = 2\nmax_message_size = 600\n')
    broker, port = _start(tmp, queues=queues)
    try:
        yield Rest(broker, port)
    finally:
        broker.cleanup()


def test_put_then_get_round_trips_body_and_md_headers(rest):
    """POST puts (201 + ibm-mq-md-messageId), DELETE gets destructively with the ibm-mq-md-*
    and ibm-mq-usr headers; the next DELETE finds nothing (204)."""
    status, headers, _ = rest.put("ORDERS", "héllo", {"ibm-mq-md-priority": "7",
                                                      "ibm-mq-md-correlationId": "ID:" + "ab" * 24,
                                                      "ibm-mq-md-replyTo": "REPLIES@QM1",
                                                      "ibm-mq-usr": 'colour;"red";string,n;5;i4'})
    assert status == 201 and headers["ibm-mq-md-messageid"].startswith("ID:")
    status, got, body = rest.get("ORDERS")
    assert status == 200 and body.decode() == "héllo"
    assert got["ibm-mq-md-messageid"] == headers["ibm-mq-md-messageid"]
    assert got["ibm-mq-md-priority"] == "7"
    assert got["ibm-mq-md-correlationid"] == "ID:" + "ab" * 24
    assert got["ibm-mq-md-replyto"] == "REPLIES@QM1"
    assert got["ibm-mq-usr"] == 'colour;"red";string,n;5;i4'
    assert rest.get("ORDERS")[0] == 204


def test_priority_then_fifo_and_selection_by_ids(rest):
    """Item 15: gets return priority descending then arrival; messageId and correlationId
    select (IBM's DELETE query parameters); GET browses without removing."""
    ids = {}
    for text, priority in (("low1", 1), ("high", 8), ("low2", 1)):
        ids[text] = rest.put("ORDERS", text, {"ibm-mq-md-priority": str(priority)})[1]["ibm-mq-md-messageid"]
    rest.put("ORDERS", "tagged", {"ibm-mq-md-correlationId": "order-42"})
    assert rest.browse("ORDERS")[2] == b"high"
    assert rest.get("ORDERS", "?correlationId=order-42")[2] == b"tagged"
    assert rest.get("ORDERS", f"?messageId={ids['low2']}")[2] == b"low2"
    assert [rest.get("ORDERS")[2] for _ in range(2)] == [b"high", b"low1"]
    assert rest.get("ORDERS", "?wait=50")[0] == 204


def test_errors_use_ibm_json_shape_with_reason_codes(rest):
    """Issue 5 failure behaviour: unknown queue, queue full, message too big, bad name, bad
    header: each a clear error in IBM's {"error": [...]} shape; nothing stored."""
    status, _, body = rest.put("NOPE", "x")
    error = json.loads(body)["error"][0]
    assert status == 404 and error["reasonCode"] == 2085 and error["completionCode"] == 2
    assert rest.put("SMALL", "y" * 2000)[0] == 413
    assert rest.put("SMALL", "a")[0] == 201 and rest.put("SMALL", "b")[0] == 201
    status, _, body = rest.put("SMALL", "c")
    assert status == 503 and json.loads(body)["error"][0]["reasonCode"] == 2053
    assert rest.put("BAD*NAME", "x")[0] == 400
    status, _, body = rest.put("ORDERS", "x", {"ibm-mq-md-priority": "12"})
    assert status == 400 and "ibm-mq-md-priority" in json.loads(body)["error"][0]["message"]
    status, _, _ = rest.put("ORDERS", "x", qmgr="QM9")
    assert status == 404
    assert [rest.get("SMALL")[2] for _ in range(3)] == [b"a", b"b", b""]


def test_admin_endpoints_list_queue_managers_queues_and_depths(rest):
    """IBM's admin shape: GET /ibmmq/rest/v3/admin/qmgr lists queue managers; queues with
    their current depth."""
    status, _, body = rest.call("GET", f"{BASE}/admin/qmgr")
    assert status == 200 and json.loads(body) == {"qmgr": [{"name": "QM1", "state": "running"}]}
    rest.put("ORDERS", "one")
    status, _, body = rest.call("GET", f"{BASE}/admin/qmgr/QM1/queue/ORDERS")
    [queue] = json.loads(body)["queue"]
    assert queue["name"] == "ORDERS" and queue["status"]["currentDepth"] == 1
    names = {q["name"] for q in json.loads(rest.call("GET", f"{BASE}/admin/qmgr/QM1/queue")[2])["queue"]}
    assert {"ORDERS", "SMALL", "SYSTEM.DEFAULT.LOCAL.QUEUE", "SYSTEM.DEAD.LETTER.QUEUE"} <= names
    assert rest.call("POST", f"{BASE}/admin/qmgr")[0] == 405
    rest.get("ORDERS")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_script_as_a_new_user_would_write_it(rest):
    """Issue 5 "Done when" 1: the REST interface through curl."""
    url = f"http://127.0.0.1:{rest.port}{BASE}/messaging/qmgr/QM1/queue/ORDERS/message"
    put = subprocess.run(["curl", "-sS", "-i", "-X", "POST", "-H", "Content-Type: text/plain;charset=utf-8",
                          "-H", "ibm-mq-rest-csrf-token: x", "--data", "from curl", url],
                         capture_output=True, text=True, check=True)
    assert put.stdout.startswith("HTTP/1.1 201")
    got = subprocess.run(["curl", "-sS", "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x", url],
                         capture_output=True, text=True, check=True)
    assert got.stdout == "from curl"


def test_basic_auth_is_required_with_a_password_file(tmp_path):
    """HTTP basic authentication (issue 5) against the broker's password file."""
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    passwords.set("alice", "secret", cost=4)
    path = tmp_path / "passwd"
    passwords.save(str(path))
    broker, port = _start(tmp_path, http={"password_file": str(path)}, auth=("alice", "secret"))
    try:
        status, headers, body = Rest(broker, port).put("SYSTEM.DEFAULT.LOCAL.QUEUE", "x")
        assert status == 401 and headers["www-authenticate"].startswith("Basic")
        assert json.loads(body)["error"][0]["msgId"] == "RMQWB0401E"
        assert Rest(broker, port, ("alice", "wrong")).put("SYSTEM.DEFAULT.LOCAL.QUEUE", "x")[0] == 401
        ok = Rest(broker, port, ("alice", "secret"))
        assert ok.put("SYSTEM.DEFAULT.LOCAL.QUEUE", "x")[0] == 201
        assert ok.get("SYSTEM.DEFAULT.LOCAL.QUEUE")[2] == b"x"
    finally:
        broker.cleanup()


def test_post_to_topic_reaches_an_mqtt_subscriber(rest):
    """POST .../topic/{topicString}/message publishes through the broker (issue 5 "publishing
    to a topic"); slashes in the topic string are levels; ibm-mq-usr become MQTT 5 user
    properties."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from clients import paho_client

    client = paho_client(rest.broker, "v5")
    try:
        client.subscribe("sport/#", 1)
        status, _, _ = rest.call("POST", f"{BASE}/messaging/qmgr/QM1/topic/sport/tennis/message", b"15-0",
                                 {"Content-Type": "text/plain", "ibm-mq-md-persistence": "persistent"})
        assert status == 201
        [received] = client.inbox.wait_for(1)
        assert (received.topic, received.payload, received.qos) == ("sport/tennis", b"15-0", 1)
        status, _, _ = rest.call("POST", f"{BASE}/messaging/qmgr/QM1/topic/bad/%2B/message", b"x",
                                 {"Content-Type": "text/plain"})
        assert status == 400  # '+' is not allowed in a topic name
    finally:
        client.disconnect()
