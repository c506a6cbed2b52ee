"""Who sent a message, as flows see it: MQMD UserIdentifier from the telemetry device's user
name (else its client id) and from the HTTP caller's basic-auth user, the broker's password
file applied on telemetry ports and flow HTTP paths, and order by user id kept end to end
through real clients (flows-http.md item 3; seed 003 l.4665-4716)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from flow_helpers import WAIT, FlowBroker, admin, http, rest_get
from harness import free_port

#: Sleeps a random while (seeded by the body), then says who sent what.
WHO = ("import random, time\n"
       "def main(c):\n"
       "    time.sleep(random.Random(c.input.mq.body).uniform(0, 0.02))\n"
       "    m = c.copy_input()\n"
       "    m.mq.body = c.input.mq.md.UserIdentifier.strip().encode() + b'|' + c.input.mq.body\n"
       "    return m\n")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("identity")
    passwords = tmp / "passwords"
    for i, (user, password) in enumerate((("meter-alpha", "a-secret"), ("meter-beta", "b-secret"), ("clerk", "c-secret"))):
        flags = ["-c"] if i == 0 else []
        subprocess.run([sys.executable, "-m", "relaymq", "passwd", *flags, "-b", "--cost", "4", str(passwords),
                        user, password], check=True, capture_output=True)
    # with a password file the clerk reads ORDERED only with a grant (issue 15)
    authorities = tmp / "authorities.json"
    subprocess.run([sys.executable, "-m", "relaymq", "auth", "--file", str(authorities), "set", "-t", "queue",
                    "-n", "ORDERED", "-p", "clerk", "+get", "+browse", "+inq"], check=True, capture_output=True)
    b = FlowBroker(queues=("ORDERED",), config={"access": {"password_file": str(passwords),
                                                           "authorities_file": str(authorities)}},
                   auth=("clerk", "c-secret"))
    b.start()
    yield b
    b.cleanup()


def device(port: int, user: str | None, password: str | None, client_id: str | None = None) -> tuple[mqtt.Client, int]:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id or f"dev-{uuid.uuid4().hex[:8]}",
                         protocol=mqtt.MQTTv311)
    if user is not None:
        client.username_pw_set(user, password)
    result: list[int] = []
    client.on_connect = lambda c, u, flags, reason, props: result.append(reason.value)
    client.connect("127.0.0.1", port)
    client.loop_start()
    for _ in range(int(WAIT * 20)):
        if result:
            break
        import time

        time.sleep(0.05)
    return client, result[0] if result else -1


def test_devices_log_in_and_their_messages_keep_order_by_user(broker):
    """Item 3 end to end: a telemetry port checks the broker's password file (a wrong
    password is refused); with order_mode user_id and four instances whose Compute takes a
    random while, each device's messages reach the queue in the order it sent them, and each
    carries its sender: the user name, or the client id of a device without one."""
    port = free_port()
    flow = (f"flow: ordered\norder_mode: user_id\nadditional_instances: 3\nnodes:\n"
            f"  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            f"  Who: {{type: Compute, code: {json.dumps(WHO)}}}\n  Put: {{type: MQOutput, queue: ORDERED}}\n"
            "connections:\n  - In.out -> Who\n  - Who.out -> Put\n")
    assert admin(broker, "POST", "", flow.encode())[0] == 201
    intruder, code = device(port, "meter-alpha", "wrong")
    intruder.loop_stop()
    assert code == 134  # bad user name or password (paho reports 3.1.1 return code 4 as 0x86)
    alpha, code_a = device(port, "meter-alpha", "a-secret")
    beta, code_b = device(port, "meter-beta", "b-secret")
    anonymous, code_c = device(port, None, None, client_id="anon-device-42")
    assert (code_a, code_b, code_c) == (0, 0, 0)
    try:
        infos = []
        for i in range(30):
            for client, name in ((alpha, "a"), (beta, "b"), (anonymous, "c")):
                infos.append(client.publish("readings", f"{name}{i}".encode(), qos=1))
        for info in infos:
            info.wait_for_publish(WAIT)
        got: dict[str, list[int]] = {}
        for _ in range(90):
            status, _, body = rest_get(broker, "ORDERED")
            assert status == 200
            user, _, sent = body.decode().partition("|")
            got.setdefault(user, []).append(int(sent[1:]))
        assert got == {"meter-alpha": list(range(30)), "meter-beta": list(range(30)),
                       "anon-device-": list(range(30))}  # the client id's first 12 characters
    finally:
        for client in (alpha, beta, anonymous):
            client.disconnect()
            client.loop_stop()
        admin(broker, "DELETE", "/ordered")


def test_http_input_needs_the_password_file_and_names_its_user(broker, tmp_path: Path):
    """With a password file, a flow's HTTP path asks for basic authentication like the REST
    interface; the caller's user name is the message's UserIdentifier."""
    echo = ("def main(c):\n    m = c.new_message()\n"
            "    m.mq.body = b'hello ' + c.input.mq.md.UserIdentifier.strip().encode()\n    return m\n")
    flow = (f"flow: hello\nnodes:\n  In: {{type: HTTPInput, path: /hello}}\n"
            f"  C: {{type: Compute, code: {json.dumps(echo)}}}\n  Out: {{type: HTTPReply}}\n"
            "connections:\n  - In.out -> C\n  - C.out -> Out\n")
    assert admin(broker, "POST", "", flow.encode())[0] == 201
    try:
        assert http("POST", f"{broker.url}/hello", b"x").status == 401
        bad = base64.b64encode(b"clerk:nope").decode()
        assert http("POST", f"{broker.url}/hello", b"x", [("authorization", f"Basic {bad}")]).status == 401
        good = base64.b64encode(b"clerk:c-secret").decode()
        answer = http("POST", f"{broker.url}/hello", b"x", [("authorization", f"Basic {good}")])
        assert (answer.status, answer.body) == (200, b"hello clerk")
    finally:
        admin(broker, "DELETE", "/hello")
