"""Helpers for the flow tests: a broker with the HTTP server, the queue manager and flows,
on free ports; flow files with their ports rewritten; the admin routes over real HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import yaml

from harness import BrokerProcess, free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TELEMETRY = EXAMPLES / "telemetry-flow"
SOAP = EXAMPLES / "soap"


class FlowBroker(BrokerProcess):
    """A relaymq broker with ``[http]``, ``[qmgr]`` (its queues in ``queues``) and ``[flows]``.

    The harness writes two-level TOML only, so the ``[[qmgr.queue]]`` tables are appended here.
    """

    def __init__(self, *, queues: tuple[str, ...] = (), flows: dict[str, Any] | None = None,
                 config: dict[str, Any] | None = None, auth: tuple[str, str] | None = None, **kwargs: Any) -> None:
        self._http_port = free_port()
        self.queues = queues
        self.auth = auth  # (user, password) for the HTTP server when it has a password file
        merged = {"http": {"port": self._http_port, "host": "127.0.0.1"},
                  "qmgr": {"channel_port": free_port(), "channel_host": "127.0.0.1"},
                  "flows": flows or {}}
        for key, value in (config or {}).items():
            merged.setdefault(key, {}).update(value)
        super().__init__("relaymq", config=merged, **kwargs)

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "relaymq.toml"
        extra = "".join(f'\n[[qmgr.queue]]\nname = "{q}"\n' for q in self.queues)
        conf.write_text(conf.read_text() + extra)
        return cmd

    def start(self) -> FlowBroker:
        """Start, then wait until the flows service answers (it starts after the MQTT
        listener the harness waits for)."""
        super().start()
        deadline = time.monotonic() + 30
        while True:
            try:
                status = http("GET", f"{self.url}/relaymq/flows", headers=self.admin_auth(), timeout=5).status
                if status == 200:
                    return self
                problem: Exception = RuntimeError(f"GET /relaymq/flows: {status}")
            except Exception as err:  # noqa: BLE001 - not listening yet
                problem = err
            if time.monotonic() > deadline or not self.running:
                raise problem
            time.sleep(0.05)

    def auth_headers(self) -> list[tuple[str, str]]:
        if self.auth is None:
            return self.admin_headers()
        import base64

        return [("authorization", "Basic " + base64.b64encode(":".join(self.auth).encode()).decode())]

    def admin_auth(self) -> list[tuple[str, str]]:
        """For the admin routes: the broker's own administrator when it has one (no [access]
        administrators), else the test's user (then one of the administrators)."""
        return self.admin_headers() or self.auth_headers()

    @property
    def http_port(self) -> int:  # the port given in [http] (kept apart from the harness's own choice)
        return self._http_port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


def http(method: str, url: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None,
         timeout: float = 30.0) -> Any:
    """One real HTTP exchange with relaymq's own client (HttpResponse)."""
    from relaymq.http.client import request

    return asyncio.run(request(method, url, headers=headers or [], body=body, timeout=timeout))


def admin(broker: FlowBroker, method: str, path: str = "", body: bytes = b"") -> tuple[int, Any]:
    response = http(method, f"{broker.url}/relaymq/flows{path}", body,
                    [("content-type", "application/yaml"), *broker.admin_auth()])
    return response.status, json.loads(response.body or b"{}")


def deploy_text(broker: FlowBroker, text: str) -> None:
    """Deploy a flow given as YAML text through the admin API; it must be accepted (201)."""
    status, answer = admin(broker, "POST", "", text.encode())
    assert status == 201, answer


def flow_file(tmp: Path, source: Path, changes: dict[str, dict[str, Any]] | None = None,
              **top: Any) -> Path:
    """A copy of a flow file (Compute files inlined) with node properties and top-level keys
    changed: free ports for SCADAInput nodes, a different flow name..."""
    from relaymq.flows.definition import load_definition

    definition = load_definition(str(source))
    for node, props in (changes or {}).items():
        definition["nodes"][node].update(props)
    definition.update(top)
    path = tmp / f"{definition['flow']}.yaml"
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


# -- MQTT clients ---------------------------------------------------------------------------------

import threading  # noqa: E402
import uuid  # noqa: E402

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion  # noqa: E402

WAIT = 20.0
LEVELS = {"v31": mqtt.MQTTv31, "v311": mqtt.MQTTv311, "v5": mqtt.MQTTv5}


class Client:
    """A paho client that records what it receives (topic, payload, user properties)."""

    def __init__(self, port: int, level: str = "v5", prefix: str = "t") -> None:
        self.level = level
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{prefix}-{uuid.uuid4().hex[:10]}",
                                  protocol=LEVELS[level])
        self.received: list[tuple[str, bytes, list[tuple[str, str]]]] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        self._connected = threading.Event()
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        self.client.on_connect = lambda *a: self._connected.set()
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._connected.wait(WAIT):
            raise TimeoutError(f"no CONNACK from port {port}")

    def _on_message(self, client, userdata, message) -> None:  # noqa: ANN001
        props = getattr(message.properties, "UserProperty", None) if message.properties else None
        with self._cond:
            self.received.append((message.topic, message.payload, list(props or [])))
            self._cond.notify_all()

    def subscribe(self, topic: str, qos: int = 1) -> Client:
        self._subscribed.clear()
        self.client.subscribe(topic, qos)
        if not self._subscribed.wait(WAIT):
            raise TimeoutError("no SUBACK")
        return self

    def publish(self, topic: str, payload: bytes, qos: int = 1) -> None:
        self.client.publish(topic, payload, qos).wait_for_publish(WAIT)

    def wait_for(self, count: int, timeout: float = WAIT) -> list[tuple[str, bytes, list[tuple[str, str]]]]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.received) >= count, timeout):
                raise TimeoutError(f"expected {count} messages, got {self.received!r}")
            return list(self.received)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# -- queue clients --------------------------------------------------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402

REST_QUEUE = "/ibmmq/rest/v3/messaging/qmgr/QM1/queue/{queue}/message"


def rest_put(broker: FlowBroker, queue: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> int:
    """Put a message with the REST interface (IBM MQ messaging REST API v3): the status."""
    url = broker.url + REST_QUEUE.format(queue=queue)
    return http("POST", url, body, [("content-type", "text/plain"), *broker.auth_headers(), *(headers or [])]).status


def rest_get(broker: FlowBroker, queue: str, wait_ms: int = 10000) -> tuple[int, dict[str, str], bytes]:
    """Get (destructively) the next message with the REST interface: status, headers, body
    (204 and no body when the queue stayed empty for ``wait_ms``)."""
    url = broker.url + REST_QUEUE.format(queue=queue) + f"?wait={wait_ms}"
    response = http("DELETE", url, headers=broker.auth_headers(), timeout=wait_ms / 1000 + 20)
    return response.status, {k.lower(): v for k, v in response.headers}, response.body


def queue_cli(broker: FlowBroker, *args: str) -> subprocess.CompletedProcess:
    """``relaymq queue ... --url`` against the broker (the command line queue client)."""
    return subprocess.run([sys.executable, "-m", "relaymq", "queue", *args, "--url", broker.url],
                          capture_output=True, text=True, timeout=60, env=broker.admin_env())


def queue_depth(broker: FlowBroker, queue: str) -> int:
    done = queue_cli(broker, "show", queue)
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout.splitlines()[0])["status"]["currentDepth"])
