"""Temporary dynamic subscriber queues (pubsub.md items 19-20; seed 003 l.1852-1854,
2830-2843, 6428-6433) in a real ``relaymq serve`` process: an AMQP client (python-qpid-proton)
opens a dynamic node, which the broker makes a temporary dynamic queue of its queue manager
(opened from SYSTEM.DEFAULT.MODEL.QUEUE as ``AMQ.*``); psc commands go over REST; the
subscription events are read by a paho MQTT client.
"""

from __future__ import annotations

import json

from proton.utils import BlockingConnection

from harness import free_port
from interop.clients import Received, paho_client
from relaymq.pubsub import reasons as r

from psc_process import CONTROL, Rest, admin, start

WAIT = 15.0


def _broker(tmp_path):
    port = free_port()
    config = {"amqp": {"enabled": True, "host": "127.0.0.1", "port": port, "allow_anonymous": True},
              "pubsub": {"broker_name": "B1"}}
    return start(tmp_path, config, queues=("APP.REPLY", "APP.SUBS")), port


def _temporary_queue(port: int) -> tuple[BlockingConnection, object, str]:
    """An AMQP connection with a receiver on a dynamic node: (connection, receiver, queue)."""
    conn = BlockingConnection(f"amqp://127.0.0.1:{port}", timeout=WAIT)
    receiver = conn.create_receiver(None, dynamic=True)
    address = receiver.link.remote_source.address
    assert address.startswith("queue://AMQ."), address
    return conn, receiver, address[len("queue://"):]


def _removed(watcher, queue: str) -> dict:
    """The first Removed event for ``queue`` the watcher gets."""

    def removed(message: Received) -> dict | None:
        event = json.loads(message.payload)
        return event if message.topic.endswith("/Removed") and event.get("queue") == queue else None

    return watcher.inbox.first(removed, WAIT, f"Removed event for {queue}")


def _regsub(queue: str, options: str = "") -> str:
    return f"<Command>RegSub</Command><Topic>Plant/#</Topic><QName>{queue}</QName>{options}"


def test_item_20_temporary_dynamic_subscriber_queue_requires_nonpers(tmp_path):
    """pubsub.md item 20; seed 003 l.6428-6430: a RegSub naming a temporary dynamic queue is
    refused unless its persistence option is NonPers (the last one given wins, item 20); the
    seed names no reason code: 3083 REG_OPTIONS_ERROR. A permanent queue takes any option."""
    broker, port = _broker(tmp_path)
    try:
        conn, _receiver, queue = _temporary_queue(port)
        rest = Rest(broker)
        assert rest.command(CONTROL, _regsub(queue)) == ("error", [r.REG_OPTIONS_ERROR])  # PersAsPub default
        assert rest.command(CONTROL, _regsub(queue, "<RegOpt>Pers</RegOpt>")) == ("error", [r.REG_OPTIONS_ERROR])
        assert rest.command(CONTROL, _regsub(queue, "<RegOpt>NonPers Pers</RegOpt>")) == ("error", [r.REG_OPTIONS_ERROR])
        assert admin(broker, "GET", {"queue": queue})[1]["subscriptions"] == []
        assert rest.command(CONTROL, _regsub(queue, "<RegOpt>Pers NonPers</RegOpt>")) == ("ok", [])
        # kept options (no RegOpt) stay NonPers: accepted; options that drop NonPers are not
        assert rest.command(CONTROL, _regsub(queue)) == ("ok", [])
        assert rest.command(CONTROL, _regsub(queue, "<RegOpt>Pers</RegOpt>")) == ("error", [r.REG_OPTIONS_ERROR])
        assert rest.command(CONTROL, _regsub("APP.SUBS", "<RegOpt>Pers</RegOpt>")) == ("ok", [])
        conn.close()
    finally:
        broker.cleanup()


def test_item_19_temporary_dynamic_queue_closed_with_its_connection_removes_its_subscriptions(tmp_path):
    """pubsub.md item 19; seed 003 l.2830-2836, 5487-5493: publications reach the temporary
    dynamic queue; when its connection ends the queue is deleted and its subscriptions are
    removed at once, announced with cause queue_deleted (the queue manager's deletion event:
    the periodic sweep no longer looks for deleted queues), while a permanent queue's stays."""
    broker, port = _broker(tmp_path)
    try:
        watcher = paho_client(broker, "v5", "events")
        watcher.subscribe("$SYS/Broker/B1/Subscriptions/#", 1)
        conn, receiver, queue = _temporary_queue(port)
        rest = Rest(broker)
        assert rest.command(CONTROL, _regsub(queue, "<RegOpt>NonPers</RegOpt>")) == ("ok", [])
        assert rest.command(CONTROL, _regsub("APP.SUBS")) == ("ok", [])
        sensor = paho_client(broker, "v5", "sensor")
        sensor.publish("Plant/boiler", b"71", 1)
        got = receiver.receive(timeout=WAIT)
        receiver.accept()
        assert got.body in (b"71", "71")
        assert [s["queue"] for s in admin(broker, "GET", {"queue": queue})[1]["subscriptions"]] == [queue]
        conn.close()
        event = _removed(watcher, queue)
        assert (event["cause"], event["topic"], event["qmgr"]) == ("queue_deleted", "Plant/#", "QM1")
        assert admin(broker, "GET", {"queue": queue})[1]["subscriptions"] == []
        assert [s["queue"] for s in admin(broker, "GET")[1]["subscriptions"]] == ["APP.SUBS"]
        assert rest.get(queue, wait_ms=0)[0] == 404  # the queue went with its connection
        sensor.disconnect()
        watcher.disconnect()
    finally:
        broker.cleanup()


def test_item_19_temporary_dynamic_queue_deleted_by_closing_its_link(tmp_path):
    """pubsub.md item 19; seed 003 l.5489-5493 (deleted "explicitly"): closing the dynamic
    node's link deletes the queue while the connection stays; its subscription goes with it."""
    broker, port = _broker(tmp_path)
    try:
        watcher = paho_client(broker, "v5", "events")
        watcher.subscribe("$SYS/Broker/B1/Subscriptions/#", 1)
        conn, receiver, queue = _temporary_queue(port)
        assert Rest(broker).command(CONTROL, _regsub(queue, "<RegOpt>NonPers</RegOpt>")) == ("ok", [])
        receiver.close()
        assert _removed(watcher, queue)["cause"] == "queue_deleted"
        _conn2, _receiver2, other = _temporary_queue(port)
        assert other != queue  # every open makes a new name
        conn.close()
        _conn2.close()
        watcher.disconnect()
    finally:
        broker.cleanup()
