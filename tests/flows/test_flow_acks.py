"""What a SCADAInput acknowledgement promises (spec README decision 4: storage an
acknowledgement promises is durable before it leaves): a device's QoS 1/2 publication is
acknowledged only once the flow's run for it has committed its outputs. Real broker
processes, SIGKILL, real MQTT clients (paho, and a raw MQIsdp/3.1.1 socket client for the
QoS 2 handshake), the queue read back over REST."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from pathlib import Path

from flow_helpers import Client, FlowBroker, admin, queue_depth, rest_get, rest_put
from harness import free_port
from relaymq.store.factory import DATABASE_FILE
from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import encode
from relaymq.mqtt.reader import PacketReader

GATED = ("import os, time\n"
         "def main(c):\n"
         "    while not os.path.exists(%r):\n"
         "        time.sleep(0.01)\n"
         "    return c.copy_input()\n")
SLOW = "import time\ndef main(c):\n    time.sleep(0.005)\n    return c.copy_input()\n"


def deploy(broker: FlowBroker, name: str, port: int, code: str, instances: int = 0) -> None:
    flow = (f"flow: {name}\nadditional_instances: {instances}\nnodes:\n"
            f"  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
            f"  C: {{type: Compute, code: {json.dumps(code)}}}\n  Put: {{type: MQOutput, queue: OUTQ}}\n"
            "connections:\n  - In.out -> C\n  - C.out -> Put\n")
    status, answer = admin(broker, "POST", "", flow.encode())
    assert status == 201, answer


def drain_bodies(broker: FlowBroker, queue: str) -> list[bytes]:
    bodies = []
    while True:
        status, _, body = rest_get(broker, queue, 200)
        if status == 204:
            return bodies
        assert status == 200
        bodies.append(body)


def test_puback_waits_for_the_flow_to_commit(tmp_path: Path):
    """Decision 4: while the flow's run is held (its Compute waits for a file), the device
    gets no PUBACK; once the run commits (the put is on disk), the PUBACK comes."""
    flag = tmp_path / "go"
    with FlowBroker(queues=("OUTQ",)).start() as broker:
        port = free_port()
        deploy(broker, "gated", port, GATED % str(flag))
        device = Client(port, "v311", "dev")
        try:
            info = device.client.publish("t", b"held", qos=1)
            info.wait_for_publish(1.0)
            assert not info.is_published()  # no PUBACK while the flow has not committed
            assert queue_depth(broker, "OUTQ") == 0
            flag.write_text("go")
            info.wait_for_publish(20)
            assert info.is_published()
            assert queue_depth(broker, "OUTQ") == 1
        finally:
            device.close()


def test_every_acknowledged_qos1_publication_survives_sigkill():
    """Issue 6 audit (200 acknowledged, 29 arrived): a device sends 200 QoS 1 publications,
    each PUBACKed; the broker is SIGKILLed right after the last PUBACK and restarted: every
    one of them is on the output queue, exactly once (every run had committed before its
    PUBACK, and nothing was redelivered)."""
    with FlowBroker(queues=("OUTQ",)).start() as broker:
        port = free_port()
        deploy(broker, "slow", port, SLOW, instances=1)
        device = Client(port, "v311", "dev")
        sent = [str(i).encode() for i in range(200)]
        infos = [device.client.publish("n", body, qos=1) for body in sent]
        for info in infos:
            info.wait_for_publish(60)
            assert info.is_published()
        broker.kill()
        device.close()
        broker.start()
        assert sorted(drain_bodies(broker, "OUTQ"), key=int) == sent


class RawClient:
    """A bare MQTT client on a socket, to stop a QoS 2 handshake half way."""

    def __init__(self, port: int, client_id: str, level: int = 4, clean: bool = False) -> None:
        self.level = level
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.reader = PacketReader(from_client=False)
        self.reader.protocol_level = level
        name = "MQIsdp" if level == 3 else "MQTT"
        self.send(p.Connect(protocol_name=name, protocol_level=level, clean_start=clean, client_id=client_id))
        connack = self.receive()
        assert isinstance(connack, p.Connack) and connack.reason_code == 0, connack
        self.session_present = connack.session_present

    def send(self, packet: object) -> None:
        self.sock.sendall(encode(packet, self.level))  # type: ignore[arg-type]

    def receive(self) -> object:
        while True:
            packet = self.reader.next_packet()
            if packet is not None:
                return packet
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.reader.feed(data)

    def close(self) -> None:
        self.sock.close()


def test_qos2_pubrec_is_durable_for_a_persistent_session():
    """Decision 4 for QoS 2 (seed 000 l.736-741: stored on PUBLISH, delivered on PUBREL): an
    MQIsdp v3 device with a persistent session gets PUBREC; the broker is SIGKILLed before
    PUBREL; after the restart the device reconnects, its session is there, it sends PUBREL and
    gets PUBCOMP once the flow has put the publication: nothing acknowledged was lost."""
    with FlowBroker(queues=("OUTQ",)).start() as broker:
        port = free_port()
        deploy(broker, "qos2", port, SLOW)
        device = RawClient(port, "meter-7", level=3)
        device.send(p.Publish("meter/7", b"reading-42", qos=2, packet_id=9))
        assert device.receive() == p.Pubrec(9)
        time.sleep(0.2)
        assert queue_depth(broker, "OUTQ") == 0  # QoS 2: run on PUBREL, not before
        broker.kill()
        device.close()
        broker.start()
        device = RawClient(port, "meter-7", level=3)
        try:
            device.send(p.Pubrel(9))
            assert device.receive() == p.Pubcomp(9)
            assert queue_depth(broker, "OUTQ") == 1  # PUBCOMP came after the put
            assert rest_get(broker, "OUTQ")[2] == b"reading-42"
        finally:
            device.close()


GATE_RULE = ("import os, time\n"
             "from relaymq.qmgr import QueueRule\n"
             "class Gate(QueueRule):\n"
             "    def put(self, definition, message):\n"
             "        while not os.path.exists(os.environ['RELAYMQ_TEST_GATE']):\n"
             "            time.sleep(0.01)\n")


class GatedSubscriberBroker(FlowBroker):
    """A broker whose queue SUBS has a rule that holds every put until a file exists."""

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "relaymq.toml"
        conf.write_text(conf.read_text() + '\n[[qmgr.queue]]\nname = "SUBS"\nrule = "gate_rule:Gate"\n')
        return cmd


def test_puback_waits_for_the_default_point_psc_subscriber_copy(tmp_path: Path, monkeypatch):
    """Decision 4 at the default subscription point (docs/flows.md "What an acknowledgement
    means"; seed 003 l.1925-1962): a telemetry publication that a flow publishes reaches a
    ``psc`` queue subscriber registered at the default point; the device's PUBACK leaves only
    once that copy is on the subscriber's queue. The queue's put is held (a queue rule waits
    for a file): no PUBACK meanwhile; released, the PUBACK comes; the broker is SIGKILLed at
    once and restarted: the copy is on the queue, with the device's user property in ``usr``."""
    (tmp_path / "gate_rule.py").write_text(GATE_RULE)
    flag = tmp_path / "open"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("RELAYMQ_TEST_GATE", str(flag))
    with GatedSubscriberBroker(queues=("PSC.REPLY",)).start() as broker:
        command = b"<psc><Command>RegSub</Command><Topic>meter/#</Topic><QName>SUBS</QName></psc>"
        assert rest_put(broker, "SYSTEM.BROKER.CONTROL.QUEUE", command, [("ibm-mq-md-replyTo", "PSC.REPLY")]) == 201
        status, _, body = rest_get(broker, "PSC.REPLY")
        assert status == 200 and b"<Completion>ok</Completion>" in body, body
        port = free_port()
        flow = (f"flow: to_subscribers\nnodes:\n  In: {{type: SCADAInput, port: {port}, host: 127.0.0.1}}\n"
                "  Out: {type: Publication}\nconnections:\n  - In.out -> Out\n")
        status, answer = admin(broker, "POST", "", flow.encode())
        assert status == 201, answer
        device = Client(port, "v5", "meter")
        try:
            from paho.mqtt.packettypes import PacketTypes
            from paho.mqtt.properties import Properties

            properties = Properties(PacketTypes.PUBLISH)
            properties.UserProperty = [("unit", "7")]
            info = device.client.publish("meter/7", b"reading-7", qos=1, properties=properties)
            info.wait_for_publish(1.5)
            assert not info.is_published(), "PUBACK before the psc subscriber's copy was put"
            flag.write_text("open")
            info.wait_for_publish(20)
            assert info.is_published()
            broker.kill()
        finally:
            device.close()
        broker.start()
        status, headers, body = rest_get(broker, "SUBS")
        assert (status, body) == (200, b"reading-7")
        assert headers["ibm-mq-usr"] == 'unit;"7";string'


#: Holds the run of the publication ``held`` until a file exists; any other runs at once.
HOLD_ONE = ("import os, time\n"
            "def main(c):\n"
            "    while c.input.mq.body == b'held' and not os.path.exists(%r):\n"
            "        time.sleep(0.01)\n"
            "    return c.copy_input()\n")


def test_a_qos2_run_committed_before_sigkill_is_not_run_again(tmp_path: Path):
    """Issue 14 ("after each restart every acknowledged message is in each place it was handed
    to, exactly once for QoS 2", a flow input among the places; docs/flows.md "What an
    acknowledgement means"): a device releases two QoS 2 publications into a flow with two
    instances; the second one's run commits (its put is on the output queue) while the first
    one's is held, so the second's PUBCOMP waits too (PUBCOMPs leave in order). The broker is
    SIGKILLed then, between the second run's commit and its PUBCOMP. After the restart the
    device resends both PUBRELs and gets both PUBCOMPs, and the output queue holds each
    publication once: the committed run is not run again."""
    flag = tmp_path / "go"
    with FlowBroker(queues=("OUTQ",)).start() as broker:
        port = free_port()
        deploy(broker, "once", port, HOLD_ONE % str(flag), instances=1)
        device = RawClient(port, "meter-8")
        for packet_id, body in ((1, b"held"), (2, b"once")):
            device.send(p.Publish("meter/8", body, qos=2, packet_id=packet_id))
            assert device.receive() == p.Pubrec(packet_id)
        device.send(p.Pubrel(1))
        device.send(p.Pubrel(2))
        deadline = time.monotonic() + 30
        while queue_depth(broker, "OUTQ") < 1:
            assert time.monotonic() < deadline, "the second run did not commit"
            time.sleep(0.02)
        device.sock.settimeout(0.3)
        try:
            assert device.receive() is None, "no PUBCOMP while the first run is held"
        except TimeoutError:
            pass
        broker.kill()
        device.close()
        flag.write_text("go")
        broker.start()
        device = RawClient(port, "meter-8")
        try:
            assert device.session_present
            device.send(p.Pubrel(1))
            device.send(p.Pubrel(2))
            assert [device.receive(), device.receive()] == [p.Pubcomp(1), p.Pubcomp(2)]
            assert sorted(drain_bodies(broker, "OUTQ")) == [b"held", b"once"]
        finally:
            device.close()


def test_a_release_marker_is_written_for_a_persistent_session_only(tmp_path: Path):
    """relaymq.flows.releases: the marker that keeps a QoS 2 run from running again is needed
    only where a PUBREL can come back after a crash, that is for a persistent session (MQTT
    3.1.1 3.1.2.4: a clean session's state, its unreleased publications included, ends with
    it, and relaymq stores none of it). Two devices, one persistent and one clean, each get a
    second publication's run committed while their first is held: the broker's database then
    holds the persistent device's marker and none for the clean one's (issue 14's notes: the
    marker cost QoS 2 flows +1.7% of their instructions, for clean sessions too)."""
    flag = tmp_path / "go"
    with FlowBroker(queues=("OUTQ",)).start() as broker:
        found, ports = {}, {}
        for clean in (False, True):
            port = ports[clean] = free_port()
            deploy(broker, f"marks{int(clean)}", port, HOLD_ONE % str(flag), instances=1)
            device = RawClient(port, f"meter-{int(clean)}", clean=clean)
            try:
                for packet_id, body in ((1, b"held"), (2, b"once")):
                    device.send(p.Publish("meter/9", body, qos=2, packet_id=packet_id))
                    assert device.receive() == p.Pubrec(packet_id)
                device.send(p.Pubrel(1))
                device.send(p.Pubrel(2))
                depth = 2 if clean else 1  # one "once" put per device so far
                deadline = time.monotonic() + 30
                while queue_depth(broker, "OUTQ") < depth:
                    assert time.monotonic() < deadline, "the second run did not commit"
                    time.sleep(0.02)
                # the run's marker commits in its outputs' unit, which the depth shows committed
                with sqlite3.connect(broker.data_dir / DATABASE_FILE) as db:
                    found[clean] = {row[0] for row in db.execute("SELECT endpoint FROM flow_releases")}
            finally:
                device.close()
        assert found[False] == {f"scada-{ports[False]}"}, "the persistent session's run left its marker"
        assert found[True] == found[False], "and the clean session's run none"
        flag.write_text("go")
