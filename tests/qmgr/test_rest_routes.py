"""The REST interface reaching other queue managers (issue 5 P3; everyplace.md items 8, 10,
22, 24): two `relaymq serve` processes, QM1 and QM2, joined by a channel. A REST put on QM1
travels to QM2 through an asynchronous remote definition addressed IBM's way (the definition's
name on QM1) or by naming QM2 in the URL; a put for a queue manager only a store-and-forward
queue serves is held for it (home-server pull); a get names QM2 and goes over the channel
(discovery); an unknown queue manager is 404 (2087). Also the messagelist summary and the
real queue manager state."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from harness import BrokerProcess, free_port, port_accepts

from .test_rest_api import BASE, Rest


def _broker(workdir, name: str, channel_port: int, qmgr_extra: dict) -> tuple[BrokerProcess, Rest]:
    http_port = free_port()
    config = {"qmgr": {"name": name, "channel_host": "127.0.0.1", "channel_port": channel_port,
                       "channel_allow_anonymous": True, **qmgr_extra},
              "http": {"host": "127.0.0.1", "port": http_port}}
    broker = BrokerProcess("relaymq", config=config, workdir=workdir)
    broker.start()
    rest = Rest(broker, http_port)
    deadline = time.monotonic() + 30
    while not port_accepts("127.0.0.1", http_port) or rest.call("GET", f"{BASE}/admin/qmgr")[0] == 503:
        if time.monotonic() > deadline or not broker.running:
            broker.cleanup()
            raise RuntimeError(f"{name} did not start\n{broker.describe_log()}")
        time.sleep(0.05)
    while not port_accepts("127.0.0.1", channel_port):
        time.sleep(0.05)
    return broker, rest


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Iterator[tuple[Rest, Rest]]:
    tmp = tmp_path_factory.mktemp("rest-routes")
    qm2_port, qm1_port = free_port(), free_port()
    qm2, rest2 = _broker(tmp / "qm2", "QM2", qm2_port, {"queue": [{"name": "IN"}, {"name": "REPLIES"}]})
    try:
        qm1, rest1 = _broker(tmp / "qm1", "QM1", qm1_port, {
            "queue": [{"name": "IN", "type": "remote", "queue_manager": "QM2", "mode": "async", "aliases": ["TOQM2"]},
                      {"name": "HOLD", "type": "store_and_forward", "target_queue_managers": ["QM3"], "push": False}],
            "connection": [{"name": "QM2", "address": f"127.0.0.1:{qm2_port}", "retry_initial_ms": 20}]})
    except BaseException:
        qm2.cleanup()
        raise
    try:
        yield rest1, rest2
    finally:
        qm1.cleanup()
        qm2.cleanup()


def _put(rest: Rest, qmgr: str, queue: str, text: str) -> tuple[int, dict]:
    status, _, body = rest.call("POST", f"{BASE}/messaging/qmgr/{qmgr}/queue/{queue}/message", text.encode(),
                                {"Content-Type": "text/plain;charset=utf-8"})
    return status, json.loads(body) if body else {}


def _get(rest: Rest, qmgr: str, queue: str, query: str = "") -> tuple[int, bytes]:
    status, _, body = rest.call("DELETE", f"{BASE}/messaging/qmgr/{qmgr}/queue/{queue}/message{query}")
    return status, body


def test_rest_put_travels_to_another_queue_manager(pair) -> None:
    """P3: a put to /qmgr/QM1/queue/TOQM2 (the alias of the asynchronous remote definition
    IN@QM2 on QM1, IBM's way of addressing a remote queue) and a put to /qmgr/QM2/queue/IN
    (the destination named in the URL, item 22) both arrive on QM2's local queue IN."""
    rest1, rest2 = pair
    assert _put(rest1, "QM1", "TOQM2", "via the definition")[0] == 201
    assert _put(rest1, "QM2", "IN", "via the url")[0] == 201
    got = {_get(rest2, "QM2", "IN", "?wait=10000")[1] for _ in range(2)}
    assert got == {b"via the definition", b"via the url"}


def test_rest_put_for_a_pulling_queue_manager_is_held_on_the_store_queue(pair) -> None:
    """Items 22 step 4 and 24: QM3 has no connection from QM1, only the non-pushing
    store-and-forward queue HOLD that a home-server queue on QM3 would pull from; a REST
    put for QM3 is stored there. Unknown queue managers are 404 with 2087; a bad name 400."""
    rest1, _ = pair
    assert _put(rest1, "QM3", "INBOX", "for the device")[0] == 201
    [hold] = json.loads(rest1.call("GET", f"{BASE}/admin/qmgr/QM1/queue/HOLD")[2])["queue"]
    assert hold["status"]["currentDepth"] == 1 and hold["storeAndForward"] == {"targetQmgrs": ["QM3"], "push": False}
    status, body = _put(rest1, "QM9", "X", "lost?")
    assert status == 404 and body["error"][0]["reasonCode"] == 2087
    assert _put(rest1, "QM*", "X", "bad")[0] == 400


def test_rest_get_from_a_queue_manager_reached_synchronously(pair) -> None:
    """Items 10, 22 step 5 (discovery): QM1 has a connection to QM2 and no definition of
    REPLIES, so a DELETE (get) and a GET (browse) naming QM2 go over the channel; the
    asynchronous remote definition IN@QM2 takes puts only (400, 2045)."""
    rest1, rest2 = pair
    assert _put(rest2, "QM2", "REPLIES", "answer")[0] == 201
    status, _, body = rest1.call("GET", f"{BASE}/messaging/qmgr/QM2/queue/REPLIES/message")
    assert (status, body) == (200, b"answer")
    assert _get(rest1, "QM2", "REPLIES") == (200, b"answer")
    assert _get(rest1, "QM2", "REPLIES")[0] == 204
    status, body = _get(rest1, "QM2", "IN")
    assert status == 400 and json.loads(body)["error"][0]["reasonCode"] == 2045


def test_messagelist_and_queue_manager_state(pair) -> None:
    """IBM's messagelist resource (summaries in get order, no body, nothing removed) and the
    admin queue manager state taken from the queue manager, not a constant."""
    rest1, rest2 = pair
    for text, priority in (("low", "1"), ("high", "8")):
        rest2.call("POST", f"{BASE}/messaging/qmgr/QM2/queue/REPLIES/message", text.encode(),
                   {"Content-Type": "text/plain", "ibm-mq-md-priority": priority, "ibm-mq-md-correlationId": text})
    status, _, body = rest2.call("GET", f"{BASE}/messaging/qmgr/QM2/queue/REPLIES/messagelist")
    listed = json.loads(body)["messages"]
    assert status == 200 and [m["priority"] for m in listed] == [8, 1]
    assert listed[0]["messageId"].startswith("ID:") and "body" not in listed[0]
    status, _, body = rest1.call("GET", f"{BASE}/messaging/qmgr/QM2/queue/REPLIES/messagelist?limit=1")
    assert status == 200 and len(json.loads(body)["messages"]) == 1  # over the channel too
    assert [_get(rest2, "QM2", "REPLIES")[1] for _ in range(2)] == [b"high", b"low"]
    assert json.loads(rest1.call("GET", f"{BASE}/admin/qmgr")[2]) == {"qmgr": [{"name": "QM1", "state": "running"}]}


def test_cli_put_to_another_queue_manager_through_the_broker(pair, capsys) -> None:
    """`relaymq queue put --to-qmgr QM2 --url <QM1>` (issue 5 Command line): the broker at
    the URL resolves the destination and its channel carries the message to QM2."""
    from relaymq.cli.main import main

    rest1, rest2 = pair
    code = main(["queue", "put", "IN", "-m", "by the cli", "--to-qmgr", "QM2",
                 "--url", f"http://127.0.0.1:{rest1.port}", "--qmgr", "QM1"])
    assert code == 0 and len(json.loads(capsys.readouterr().out)["msg_id"]) == 48
    assert _get(rest2, "QM2", "IN", "?wait=10000") == (200, b"by the cli")
