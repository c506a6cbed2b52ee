"""The admin REST API for MQTT objects (issue 18 "What to build", second item; docs/rest.md
"MQTT objects"), through real HTTP against a real broker with real paho clients: clients
(list, search, disconnect), sessions (queued count, expiry, discard), subscriptions, retained
messages (browse, clear), listeners (state, stop, start: seed 000 l.415's listener control),
$SYS as JSON, all behind the admin guard."""

from __future__ import annotations

import socket
import urllib.parse

from harness import BrokerProcess, port_accepts
from interop.clients import PahoClient, paho_client, unique
from operator_http import call, call_json, wait_until

MQTT = "/relaymq/mqtt"


def ids(items: list[dict], key: str = "clientId") -> list[str]:
    return [item[key] for item in items]


def test_clients_list_search_show_and_disconnect(broker: BrokerProcess) -> None:
    """Issue 18 item 2: list and search clients, kick one (MQTT 5 DISCONNECT 0x98, its will
    published unless will=false)."""
    tag = unique("adm")
    v5 = PahoClient(broker, "v5", f"{tag}-five", will=(f"{tag}/will", b"gone", 0, False))
    v5.client.reconnect_delay_set(60, 60)  # no reconnect while the test looks
    v5.connect()
    v311 = paho_client(broker, "v311", f"{tag}-four")
    watcher = paho_client(broker, "v311", unique("w"))
    watcher.subscribe(f"{tag}/will", 0)
    status, body = call_json(broker, "GET", f"{MQTT}/clients?search={tag}")
    assert status == 200 and body["total"] == 2
    assert ids(body["clients"]) == [f"{tag}-five", f"{tag}-four"]
    assert [c["protocolLevel"] for c in body["clients"]] == [5, 4]
    assert body["clients"][0]["listener"] == "default" and body["clients"][0]["peer"].startswith("127.0.0.1")
    status, one = call_json(broker, "GET", f"{MQTT}/clients/{tag}-four")
    assert status == 200 and one["clientId"] == f"{tag}-four" and one["keepAlive"] == 60
    limited = call_json(broker, "GET", f"{MQTT}/clients?search={tag}&limit=1")[1]
    assert ids(limited["clients"]) == [f"{tag}-five"] and limited["total"] == 2

    status, answer = call_json(broker, "DELETE", f"{MQTT}/clients/{tag}-five")
    assert status == 200 and answer == {"clientId": f"{tag}-five", "disconnected": True}
    assert v5.disconnected.wait(10) and v5.disconnect_reason == "Administrative action"
    assert watcher.inbox.wait_for(1)[0].payload == b"gone"  # an unexpected close: the will goes out
    assert ids(call_json(broker, "GET", f"{MQTT}/clients?search={tag}")[1]["clients"]) == [f"{tag}-four"]
    assert call_json(broker, "DELETE", f"{MQTT}/clients/{tag}-five")[0] == 404
    v5.client.loop_stop()
    for client in (v311, watcher):
        client.disconnect()


def test_disconnect_without_the_will(broker: BrokerProcess) -> None:
    """Issue 18 item 2: ``?will=false`` disconnects without publishing the will."""
    tag = unique("nw")
    client = PahoClient(broker, "v311", f"{tag}-c", will=(f"{tag}/will", b"gone", 0, False))
    client.client.reconnect_delay_set(60, 60)
    client.connect()
    watcher = paho_client(broker, "v311", unique("w"))
    watcher.subscribe(f"{tag}/#", 0)
    assert call_json(broker, "DELETE", f"{MQTT}/clients/{tag}-c?will=maybe")[0] == 400
    assert call_json(broker, "DELETE", f"{MQTT}/clients/{tag}-c?will=false")[0] == 200
    assert client.disconnected.wait(10)
    watcher.publish(f"{tag}/marker", b"after", 0)  # arrives after a will would have
    assert [m.payload for m in watcher.inbox.wait_for(1)] == [b"after"]
    client.client.loop_stop()
    watcher.disconnect()


def test_sessions_queued_expiry_and_discard(broker: BrokerProcess) -> None:
    """Issue 18 item 2: sessions with their queued count and expiry; deleting one discards its
    subscriptions and queue, so the client's next connect finds no session."""
    tag = unique("ses")
    sleeper = paho_client(broker, "v5", f"{tag}-sleeper", clean=False, session_expiry=600)
    sleeper.subscribe(f"{tag}/t", 1)
    sleeper.disconnect()
    publisher = paho_client(broker, "v311", f"{tag}-pub")
    for n in range(3):
        publisher.publish(f"{tag}/t", f"m{n}".encode(), 1)
    status, body = call_json(broker, "GET", f"{MQTT}/sessions?search={tag}&state=offline")
    assert status == 200 and body["total"] == 1
    session = body["sessions"][0]
    assert session["clientId"] == f"{tag}-sleeper" and session["online"] is False
    assert session["queued"] == 3 and session["subscriptions"] == 1 and session["expiryInterval"] == 600
    assert 0 < session["expiresInSeconds"] <= 600
    online = call_json(broker, "GET", f"{MQTT}/sessions?search={tag}&state=online")[1]
    assert ids(online["sessions"]) == [f"{tag}-pub"] and online["sessions"][0]["expiresInSeconds"] is None
    assert call_json(broker, "GET", f"{MQTT}/sessions?state=asleep")[0] == 400

    assert call_json(broker, "DELETE", f"{MQTT}/sessions/{tag}-sleeper")[0] == 200
    assert call_json(broker, "GET", f"{MQTT}/sessions?search={tag}-sleeper")[1]["total"] == 0
    assert call_json(broker, "DELETE", f"{MQTT}/sessions/{tag}-sleeper")[0] == 404
    back = paho_client(broker, "v5", f"{tag}-sleeper", clean=False, session_expiry=600)
    assert back.session_present is False
    publisher.publish(f"{tag}/t", b"later", 1)
    back.inbox.wait_quiet(0.5)
    assert back.inbox.messages == []  # its subscription went with the session
    for client in (back, publisher):
        client.disconnect()


def test_subscriptions_listed(broker: BrokerProcess) -> None:
    """Issue 18 item 2: subscriptions, shared ones with their group."""
    tag = unique("sub")
    client = paho_client(broker, "v5", f"{tag}-c")
    client.subscribe(f"{tag}/plain/#", 1)
    client.subscribe(f"$share/grp/{tag}/shared", 0)
    status, body = call_json(broker, "GET", f"{MQTT}/subscriptions?clientId={tag}-c")
    assert status == 200 and body["total"] == 2
    by_filter = {s["topicFilter"]: s for s in body["subscriptions"]}
    assert by_filter[f"{tag}/plain/#"]["qos"] == 1 and by_filter[f"{tag}/plain/#"]["shareGroup"] is None
    assert by_filter[f"{tag}/shared"]["shareGroup"] == "grp"
    assert call_json(broker, "GET", f"{MQTT}/subscriptions?search={tag}/plain")[1]["total"] == 1
    client.disconnect()


def test_retained_browse_and_clear(broker: BrokerProcess) -> None:
    """Issue 18 item 2: browse retained messages (text, and binary as base64), clear one: a new
    subscriber gets nothing, and after a restart it stays cleared (its row went too)."""
    tag = unique("ret")
    publisher = paho_client(broker, "v311", unique("p"))
    publisher.publish(f"{tag}/a/state", b"on", 1, retain=True)
    publisher.publish(f"{tag}/b/raw", b"\xff\x00\x01", 1, retain=True)
    publisher.disconnect()
    status, body = call_json(broker, "GET", f"{MQTT}/retained?filter={urllib.parse.quote(tag + '/#')}")
    assert status == 200 and body["total"] == 2
    assert body["retained"][0] == {"topic": f"{tag}/a/state", "qos": 1, "size": 2, "payload": "on",
                                   "truncated": False, "expiresAt": None}
    assert body["retained"][1]["payloadBase64"] == "/wAB"
    sys_only = call_json(broker, "GET", f"{MQTT}/retained?filter={urllib.parse.quote('$SYS/#')}")[1]
    assert all(r["topic"].startswith("$SYS/") for r in sys_only["retained"])
    assert call_json(broker, "GET", f"{MQTT}/retained?filter=a/%23/b")[0] == 400

    path = f"{MQTT}/retained/{urllib.parse.quote(tag + '/a/state', safe='')}"
    assert call_json(broker, "DELETE", path)[0] == 200
    assert call_json(broker, "DELETE", path)[0] == 404
    broker.restart()
    subscriber = paho_client(broker, "v311", unique("s"))
    subscriber.subscribe(f"{tag}/#", 1)
    assert [m.topic for m in subscriber.inbox.wait_for(1)] == [f"{tag}/b/raw"]
    subscriber.inbox.wait_quiet(0.3)
    assert len(subscriber.inbox.messages) == 1
    subscriber.disconnect()


def test_listener_stop_and_start(broker: BrokerProcess) -> None:
    """Issue 18 item 2: listeners with their state; stop and start one by name (seed 000
    l.415's listener control, the same mechanism as $SYS/SCADA/MQIsdpListener)."""
    status, body = call_json(broker, "GET", f"{MQTT}/listeners")
    assert status == 200
    assert body["listeners"] == [{"name": "default", "protocol": "mqtt", "url": f"mqtt://127.0.0.1:{broker.port}",
                                  "port": broker.port, "state": "listening", "connections": 0}]
    assert call_json(broker, "POST", f"{MQTT}/listeners/nope/stop")[0] == 404
    assert call_json(broker, "POST", f"{MQTT}/listeners/default/pause")[0] == 404
    assert call_json(broker, "POST", f"{MQTT}/listeners/default/stop") == (202, {"listener": "default",
                                                                               "requested": "stop"})
    wait_until(lambda: call_json(broker, "GET", f"{MQTT}/listeners")[1]["listeners"][0]["state"] == "stopped",
               "the listener stopped")
    assert not port_accepts(broker.host, broker.port)
    assert call_json(broker, "POST", f"{MQTT}/listeners/default/start")[0] == 202
    wait_until(lambda: port_accepts(broker.host, broker.port), "the listener accepting again")
    paho_client(broker, "v311", unique("back")).disconnect()


def test_sys_as_json(broker: BrokerProcess) -> None:
    """Issue 18 item 2: what $SYS/broker/... says, as JSON."""
    client = paho_client(broker, "v311", unique("sys"))
    client.publish("sys/test", b"x", 1)
    status, body = call_json(broker, "GET", f"{MQTT}/sys")
    assert status == 200
    assert body["$SYS/broker/version"].startswith("relaymq ")
    assert body["$SYS/broker/clients/connected"] == "1"
    assert int(body["$SYS/broker/messages/received"]) >= 1
    assert body["$SYS/broker/store/state"] == "ok"
    client.disconnect()


def test_admin_guard(broker: BrokerProcess) -> None:
    """Issue 18 item 2: behind the admin guard of docs/rest.md: without the administrator's
    credentials 403 (no password file: anonymous is somebody, but no administrator), wrong
    ones 401."""
    for method, path in (("GET", f"{MQTT}/clients"), ("DELETE", f"{MQTT}/sessions/x"), ("GET", f"{MQTT}/sys"),
                         ("POST", f"{MQTT}/listeners/default/stop")):
        status, body = call_json(broker, method, path, admin=False)
        assert status == 403 and "administrator" in body["error"], (path, body)
    assert call(broker, "GET", f"{MQTT}/clients", credentials=("admin", "wrong"))[0] == 401
    assert call_json(broker, "GET", f"{MQTT}/listeners")[1]["listeners"][0]["state"] == "listening"
    with socket.create_connection(broker.address, timeout=5):
        pass  # the listener was not stopped by the refused call
