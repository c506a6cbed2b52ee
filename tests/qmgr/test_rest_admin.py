"""Queue definition and deletion against a running broker (issue 5 "Command line": `relaymq
queue define|delete` against a running broker; P2): the REST admin writes in IBM's admin
shape, for administrators calling from the broker's machine, by urllib, curl and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from harness import free_port, outside_address, port_accepts

from relaymq.cli.main import main

from .test_rest_api import BASE, QueueBroker, Rest


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory) -> Iterator[tuple[QueueBroker, int]]:
    from relaymq.auth.passwords import PasswordFile

    tmp = tmp_path_factory.mktemp("rest-admin")
    passwords = PasswordFile()
    passwords.set("admin", "adminpw", cost=4)
    passwords.set("alice", "alicepw", cost=4)
    path = tmp / "passwd"
    passwords.save(str(path))
    port = free_port()
    config = {"qmgr": {"name": "QM1", "channel_port": 0, "channel_host": "127.0.0.1"},
              "http": {"host": "0.0.0.0", "port": port},
              "access": {"password_file": str(path), "administrators": ["admin"]}}
    broker = QueueBroker("relaymq", config=config, workdir=tmp / "broker")
    broker.start()
    deadline = time.monotonic() + 30
    admin = Rest(broker, port, ("admin", "adminpw"))
    while not port_accepts("127.0.0.1", port) or admin.call("GET", f"{BASE}/admin/qmgr")[0] == 503:
        if time.monotonic() > deadline or not broker.running:
            broker.cleanup()
            raise RuntimeError(f"HTTP did not start\n{broker.describe_log()}")
        time.sleep(0.05)
    try:
        yield broker, port
    finally:
        broker.cleanup()


def _post(rest: Rest, document: dict, query: str = "") -> tuple[int, dict]:
    status, _, body = rest.call("POST", f"{BASE}/admin/qmgr/QM1/queue{query}", json.dumps(document).encode(),
                                {"Content-Type": "application/json;charset=utf-8"})
    return status, json.loads(body) if body else {}


def test_define_replace_and_delete_a_queue_over_rest(admin_broker) -> None:
    """POST .../admin/qmgr/QM1/queue defines from IBM's JSON (storage, general, remote) plus
    relaymq's properties; noReplace refuses an existing one (409, 2100), without it the
    properties are replaced; DELETE refuses a queue with messages (409, 2055) unless purge;
    bad bodies are 400 naming the key; non-administrators get 403."""
    broker, port = admin_broker
    admin = Rest(broker, port, ("admin", "adminpw"))
    status, body = _post(admin, {"name": "ORDERS", "storage": {"maximumDepth": 5}, "general": {"description": "o"},
                                 "relaymq": {"aliases": ["ORD"], "default_priority": 6}})
    assert status == 201 and body["queue"][0]["storage"]["maximumDepth"] == 5
    assert body["queue"][0]["aliases"] == ["ORD"]
    status, body = _post(admin, {"name": "ORDERS"}, "?noReplace")
    assert status == 409 and body["error"][0]["reasonCode"] == 2100
    status, body = _post(admin, {"name": "ORDERS", "storage": {"maximumDepth": 7}})
    assert status == 201 and body["queue"][0]["storage"]["maximumDepth"] == 7
    status, body = _post(admin, {"name": "TO.QM2", "type": "remote", "remote": {"qmgrName": "QM2"},
                                 "relaymq": {"mode": "async"}})
    assert status == 201 and body["queue"][0]["remote"] == {"qmgrName": "QM2", "mode": "async"}
    assert admin.put("ORD", "kept")[0] == 201  # through the alias
    status, _, body = admin.call("DELETE", f"{BASE}/admin/qmgr/QM1/queue/ORDERS")
    assert status == 409 and json.loads(body)["error"][0]["reasonCode"] == 2055
    assert admin.call("DELETE", f"{BASE}/admin/qmgr/QM1/queue/ORDERS?purge=true")[0] == 204
    assert admin.call("GET", f"{BASE}/admin/qmgr/QM1/queue/ORDERS")[0] == 404
    assert admin.call("DELETE", f"{BASE}/admin/qmgr/QM1/queue/TO.QM2?remoteQmgr=QM2")[0] == 204
    for document, word in (({"storage": {}}, "name"), ({"name": "X", "storage": {"maximumDepth": "lots"}}, "max_depth"),
                           ({"name": "X", "colour": 1}, "colour"), ({"name": "X", "relaymq": {"speed": 1}}, "speed"),
                           ({"name": "bad/name"}, "name")):
        status, body = _post(admin, document)
        assert status == 400 and word in body["error"][0]["message"], (document, body)
    alice = Rest(broker, port, ("alice", "alicepw"))
    status, body = _post(alice, {"name": "MINE"})
    assert status == 403 and "administrators" in body["error"][0]["message"]
    assert alice.call("DELETE", f"{BASE}/admin/qmgr/QM1/queue/SYSTEM.DEFAULT.LOCAL.QUEUE")[0] == 403
    assert alice.call("GET", f"{BASE}/admin/qmgr/QM1/queue")[0] == 200  # reads stay open to users
    assert Rest(broker, port).call("POST", f"{BASE}/admin/qmgr/QM1/queue", b"{}")[0] == 401


def test_admin_writes_only_from_the_loopback_interface(admin_broker) -> None:
    """Like the flow and subscription admin routes: a define from another address is 403
    unless [qmgr] admin_remote = true; reads are answered."""
    broker, port = admin_broker
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    import base64
    import urllib.error
    import urllib.request

    token = base64.b64encode(b"admin:adminpw").decode()
    request = urllib.request.Request(f"http://{address}:{port}{BASE}/admin/qmgr/QM1/queue", method="POST",
                                     data=b'{"name": "FAR"}', headers={"Authorization": f"Basic {token}",
                                                                       "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403 and b"loopback" in refused.value.read()
    read = urllib.request.Request(f"http://{address}:{port}{BASE}/admin/qmgr/QM1/queue",
                                  headers={"Authorization": f"Basic {token}"})
    with urllib.request.urlopen(read, timeout=10) as response:
        assert response.status == 200


def test_cli_define_and_delete_against_the_running_broker(admin_broker, capsys, monkeypatch) -> None:
    """`relaymq queue define|delete --url` (issue 5 Command line): exit 0 and the queue as
    JSON; a queue manager error is exit 1 with its reason code on one line."""
    broker, port = admin_broker
    monkeypatch.setenv("RELAYMQ_PASSWORD", "adminpw")
    url = f"http://127.0.0.1:{port}"

    def run(*argv: str) -> tuple[int, list[dict], str]:
        code = main(["queue", *argv, "--url", url, "--user", "admin"])
        out, err = capsys.readouterr()
        return code, [json.loads(line) for line in out.splitlines()], err

    code, (queue,), _ = run("define", "CLIQ", "--max-depth", "3", "--alias", "CQ", "--expiry", "60000")
    assert code == 0 and queue["name"] == "CLIQ" and queue["storage"]["maximumDepth"] == 3
    code, _, err = run("define", "CLIQ")
    assert code == 1 and "2100" in err and len(err.strip().splitlines()) == 1
    code, _, _ = run("put", "CQ", "-m", "x")
    code, _, err = run("delete", "CLIQ")
    assert code == 1 and "2055" in err
    code, out, _ = run("delete", "CLIQ", "--purge")
    assert code == 0 and out == []
    code, _, err = run("show", "CLIQ")
    assert code == 1 and "2085" in err


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_defines_a_queue(admin_broker) -> None:
    """The admin write as a script would send it with curl."""
    broker, port = admin_broker
    url = f"http://127.0.0.1:{port}{BASE}/admin/qmgr/QM1/queue"
    made = subprocess.run(["curl", "-sS", "-u", "admin:adminpw", "-X", "POST", "-H", "Content-Type: application/json",
                           "--data", '{"name": "CURLQ", "storage": {"maximumDepth": 9}}', "-w", "%{http_code}", url],
                          capture_output=True, text=True, check=True)
    assert made.stdout.endswith("201") and '"maximumDepth": 9' in made.stdout
    gone = subprocess.run(["curl", "-sS", "-u", "admin:adminpw", "-X", "DELETE", "-w", "%{http_code}", url + "/CURLQ"],
                          capture_output=True, text=True, check=True)
    assert gone.stdout == "204"


def test_admin_messages_over_rest_run_as_the_logged_in_user(admin_broker) -> None:
    """Item 8 (the admin queue processes admin messages) from a script: an administrator's
    JSON admin message put over REST defines a queue and the answer comes to its reply
    queue; a user who is not in [access] administrators is refused 2035 - since issue 15
    (finding 6) at the entrance already: alice holds no put authority on SYSTEM.ADMIN.QUEUE."""
    broker, port = admin_broker
    admin, alice = Rest(broker, port, ("admin", "adminpw")), Rest(broker, port, ("alice", "alicepw"))
    assert _post(admin, {"name": "ADMIN.REPLIES"})[0] == 201
    for rest, name, expected in ((admin, "BY.ADMIN", 201), (alice, "BY.ALICE", 403)):
        status, _, body = rest.put("SYSTEM.ADMIN.QUEUE", json.dumps({"action": "define", "name": name}),
                                   {"ibm-mq-md-replyTo": "ADMIN.REPLIES", "Content-Type": "application/json"})
        assert status == expected, body
    assert b"2035" in body
    answers = [json.loads(admin.get("ADMIN.REPLIES", "?wait=10000")[2])]
    assert [(a["name"], a["rc"], a.get("reason")) for a in answers] == [("BY.ADMIN", 0, None)]
    names = {q["name"] for q in json.loads(admin.call("GET", f"{BASE}/admin/qmgr/QM1/queue")[2])["queue"]}
    assert "BY.ADMIN" in names and "BY.ALICE" not in names
    assert admin.get("SYSTEM.ADMIN.QUEUE")[0] == 400  # applications cannot take admin messages
