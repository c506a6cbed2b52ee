"""Channel listeners as objects: created stopped, started and stopped at run time, the state
kept across restarts (everyplace.md item 29; docs/channels.md "Listeners").

Against a `relaymq serve` process, through the project's own CLI (`relaymq listener`) and its
admin REST API, with a raw channel peer connecting over a real socket.
"""

from __future__ import annotations

import json
import socket

from harness import BrokerProcess, free_port, port_accepts

from relaymq.cli.main import main
from relaymq.qmgr.channel_frames import FrameType

from .test_channel_security import Peer, _password_file, _until
from .test_rest_api import BASE, QueueBroker, Rest


def _refuses(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except OSError:
        return True


def test_everyplace_item_29_listener_created_stopped_started_stopped_and_restored(tmp_path, capsys,
                                                                                  monkeypatch) -> None:
    """everyplace.md item 29, seed 004 l.1615-1617: "A listener that has just been created ...
    does not then start. To start it you can send an administration message explicitly to
    start the listener, or you can restart the queue manager. (However, listeners are
    persistent in the registry ... listeners that exist at queue manager startup are started
    automatically)". With `relaymq listener` against a running broker: create (the port
    refuses), start (a peer connects and is welcomed), stop (the port refuses), start, restart
    the process (listening again, state started), stop, restart (still stopped: the operator's
    stop is kept); a created, never started listener starts at the next start-up (the
    seed's rule). Bad input gets a clear error."""
    broker = BrokerProcess("relaymq", workdir=tmp_path / "broker",
                           config={"qmgr": {"channel_allow_anonymous": True}})
    broker.start()
    monkeypatch.setenv("RELAYMQ_ADMIN_CREDENTIALS", str(broker.data_dir / "admin.credentials"))
    url = f"http://127.0.0.1:{broker.http_port}"
    port, later = free_port(), free_port()

    def cli(*argv: str) -> tuple[int, list[dict], str]:
        code = main(["listener", *argv, "--url", url])
        out, err = capsys.readouterr()
        return code, [json.loads(line) for line in out.splitlines()], err

    def welcomed() -> bool:
        peer = Peer(port)
        try:
            return peer.login("QM9", None).type is FrameType.WELCOME
        finally:
            peer.close()

    try:
        _until(lambda: Rest(broker, broker.http_port).call("GET", f"{BASE}/admin/qmgr")[0] == 200, 30, "REST")
        code, (made,), _ = cli("create", "EDGE", "--port", str(port))
        assert code == 0 and (made["name"], made["state"], made["running"]) == ("EDGE", "created", False)
        assert _refuses(port)
        code, (started,), _ = cli("start", "EDGE")
        assert code == 0 and (started["state"], started["running"]) == ("started", True)
        assert welcomed()
        code, (stopped,), _ = cli("stop", "EDGE")
        assert code == 0 and (stopped["state"], stopped["running"]) == ("stopped", False)
        assert _refuses(port)
        assert cli("start", "EDGE")[0] == 0
        assert cli("create", "LATER", "--port", str(later))[0] == 0  # created, never started

        broker.restart()
        _until(lambda: port_accepts("127.0.0.1", port), 30, "EDGE listens again after the restart")
        assert welcomed()
        _until(lambda: port_accepts("127.0.0.1", later), 30, "LATER starts at start-up (seed l.1617)")
        code, listed, _ = cli("show")
        assert [(x["name"], x["state"], x["running"]) for x in listed] == [("EDGE", "started", True),
                                                                          ("LATER", "started", True)]
        assert cli("stop", "EDGE")[0] == 0

        broker.restart()
        _until(lambda: port_accepts("127.0.0.1", later), 30, "LATER listens after the second restart")
        assert _refuses(port)
        code, (edge,), _ = cli("show", "EDGE")
        assert (edge["state"], edge["running"]) == ("stopped", False)

        code, _, err = cli("start", "NOPE")
        assert code == 1 and "no listener 'NOPE'" in err and "2085" in err
        code, _, err = cli("create", "EDGE", "--port", str(port))
        assert code == 1 and "already exists" in err
        code, _, err = cli("create", "BAD", "--port", "70000")
        assert code == 1 and "port must be an integer" in err
        code, _, err = cli("create", "BAD", "--port", str(free_port()), "--adapter", "carrier-pigeon")
        assert code == 1 and "adapter" in err
        assert cli("delete", "LATER")[0] == 0
        _until(lambda: _refuses(later), 10, "a deleted listener stops")
        assert [x["name"] for x in cli("show")[1]] == ["EDGE"]
    finally:
        broker.cleanup()


def test_everyplace_item_29_listener_created_and_started_by_admin_messages(tmp_path) -> None:
    """everyplace.md item 29, seed 004 l.1619-1640: listeners are created "using administration
    messages" (MQeCommunicationsListenerAdminMsg create, then start). Admin messages put to
    SYSTEM.ADMIN.QUEUE over REST by an administrator of a running broker create a listener
    (the port refuses: created stopped), start it (a channel peer is welcomed) and stop it;
    each is answered on the ReplyToQ with the listener as the admin API shows it."""
    passwords = _password_file(tmp_path / "passwords", ("ops", "ops-pw"))
    broker = QueueBroker("relaymq", workdir=tmp_path / "broker", queues='[[qmgr.queue]]\nname = "ADMIN.REPLIES"\n',
                         config={"qmgr": {"channel_allow_anonymous": True},
                                 "access": {"password_file": passwords, "administrators": ["ops"],
                                            "allow_anonymous": False}})
    broker.start()
    rest = Rest(broker, broker.http_port, ("ops", "ops-pw"))
    port = free_port()

    def admin(request: dict) -> dict:
        status, _, _ = rest.put("SYSTEM.ADMIN.QUEUE", json.dumps({"resource": "listener", **request}),
                                {"ibm-mq-md-replyTo": "ADMIN.REPLIES"})
        assert status == 201
        status, _, body = rest.get("ADMIN.REPLIES", "?wait=10000")
        assert status == 200, status
        return json.loads(body)

    try:
        _until(lambda: rest.call("GET", f"{BASE}/admin/qmgr")[0] == 200, 30, "REST")
        made = admin({"action": "create", "name": "VIA.ADMIN", "params": {"port": port}})
        assert made["rc"] == 0 and (made["result"]["state"], made["result"]["running"]) == ("created", False)
        assert _refuses(port)
        started = admin({"action": "start", "name": "VIA.ADMIN"})
        assert started["rc"] == 0 and started["result"]["state"] == "started"
        peer = Peer(port)
        assert peer.login("QM9", None).type is FrameType.WELCOME
        peer.close()
        assert admin({"action": "stop", "name": "VIA.ADMIN"})["result"]["state"] == "stopped"
        assert _refuses(port)
        unknown = admin({"action": "start", "name": "NOPE"})
        assert (unknown["rc"], unknown["reason"]) == (1, 2085)
    finally:
        broker.cleanup()
