"""A telemetry port checks passwords off the event loop, as the broker's own listeners do
(issue 2 P1: bcrypt on the loop stopped every client for the length of a check; flows-http.md
item 2: SCADAInput devices log in with the broker's ``[access]`` password file).

A real broker process with a password file whose hash costs about a second to check, a flow
with a SCADAInput port, a paho device that publishes at QoS 1 while another connection's wrong
password is being checked on the same telemetry port.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from flow_helpers import Client, FlowBroker, admin, queue_depth
from harness import free_port
from relaymq.auth.passwords import PasswordFile

#: bcrypt cost 14: about a second per check here, so a blocked loop cannot go unnoticed.
SLOW_COST = 14


def _connect_packet(client_id: bytes, user: bytes, password: bytes) -> bytes:
    """An MQTT 3.1.1 CONNECT with user name and password (clean session, keep-alive 60)."""
    body = (b"\x00\x04MQTT\x04\xc2\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
            + len(user).to_bytes(2, "big") + user + len(password).to_bytes(2, "big") + password)
    return bytes([0x10, len(body)]) + body


def test_telemetry_port_serves_devices_while_a_wrong_password_is_checked(tmp_path: Path):
    """While a wrong-password CONNECT to the SCADAInput port is being checked (a second of
    bcrypt), an anonymous device on the same port publishes at QoS 1 and gets its PUBACK (the
    flow's run committed its put); the CONNECT is then refused with return code 4 (mqtt.md
    item 22). With bcrypt on the endpoint's event loop the PUBACK would come after the refusal."""
    passwords = PasswordFile()
    passwords.set("meter", "right", cost=SLOW_COST)
    passwords.save(str(tmp_path / "passwords"))
    # the test watches OUTQ anonymously over REST: with a password file that needs a grant (issue 15)
    (tmp_path / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "queue", "profile": "OUTQ", "principal": ":anonymous", "authorities": ["inq", "browse", "get"]}]}))
    config = {"access": {"password_file": str(tmp_path / "passwords"), "allow_anonymous": True,
                         "authorities_file": str(tmp_path / "authorities.json")},
              "http": {"allow_anonymous": True}}
    with FlowBroker(queues=("OUTQ",), config=config).start() as broker:
        port = free_port()
        flow = (f"flow: scada_auth\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
                "  Put: {type: MQOutput, queue: OUTQ}\nconnections:\n  - In.out -> Put\n")
        status, answer = admin(broker, "POST", "", flow.encode())
        assert status == 201, answer
        device = Client(port, "v311", "dev")
        guesser = socket.create_connection(("127.0.0.1", port), timeout=30)
        refused: list[tuple[float, int]] = []

        def read_connack() -> None:
            reply = guesser.recv(4)
            refused.append((time.monotonic(), reply[3] if len(reply) == 4 else -1))

        reader = threading.Thread(target=read_connack, daemon=True)
        try:
            guesser.sendall(_connect_packet(b"guesser", b"meter", b"wrong"))
            reader.start()
            time.sleep(0.1)  # the endpoint has the CONNECT and is checking it
            info = device.client.publish("meter/1", b"reading", qos=1)
            info.wait_for_publish(30)
            assert info.is_published()
            acked_at = time.monotonic()
            reader.join(30)
            assert refused, "no CONNACK for the wrong password"
            refused_at, code = refused[0]
            assert code == 4
            assert acked_at < refused_at, "the device's PUBACK waited for another connection's password check"
            assert queue_depth(broker, "OUTQ") == 1
        finally:
            guesser.close()
            device.close()
