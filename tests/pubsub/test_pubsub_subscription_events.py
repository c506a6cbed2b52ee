"""Subscription Removed events carry the cause the broker gives when it removes the
subscription (pubsub.md item 45; seed 003 l.4523-4556), not one guessed from the session's
state afterwards: a real ``relaymq serve`` process, paho MQTT 5 clients, the admin route
that discards a session.
"""

from __future__ import annotations

import json

from interop.clients import PahoClient, Received, paho_client

from psc_process import http, start

WAIT = 15.0
EVENTS = "$SYS/Broker/B1/Subscriptions/#"


def _removed(watcher, topic: str) -> dict:
    """The first Removed event for the subscription ``topic`` the watcher gets."""

    def removed(message: Received) -> dict | None:
        event = json.loads(message.payload)
        return event if message.topic.endswith("/Removed") and event["topic"] == topic else None

    return watcher.inbox.first(removed, WAIT, f"Removed event for {topic}")


def _persistent(broker, client_id: str, topic: str, expiry: int = 3600) -> PahoClient:
    client = PahoClient(broker, "v5", client_id, clean=False, session_expiry=expiry).connect()
    assert client.subscribe(topic, 1) == [1]
    return client


def test_item_45_removal_causes_come_from_the_broker(tmp_path):
    """pubsub.md item 45, items 19 (expiry, administrator): a clean-start reconnect that takes
    a live session over says clean_start (a cause inferred from the session's state said
    session_ended, as for a clean disconnect); a session that expires says expired; a
    session an administrator discards says administrator; UNSUBSCRIBE says unsubscribed and
    a clean session's end session_ended."""
    broker = start(tmp_path, {"pubsub": {"broker_name": "B1"}})
    try:
        watcher = paho_client(broker, "v5", "events")
        watcher.subscribe(EVENTS, 1)

        _persistent(broker, "taken", "taken/#")
        newcomer = PahoClient(broker, "v5", "taken", clean=True).connect()  # clean start, same id
        assert _removed(watcher, "taken/#")["cause"] == "clean_start"

        brief = _persistent(broker, "brief", "brief/#", expiry=1)
        brief.disconnect()
        event = _removed(watcher, "brief/#")
        assert (event["cause"], event["clientId"]) == ("expired", "brief")

        kept = _persistent(broker, "kept", "kept/#")
        kept.disconnect()
        status, _, _ = http(broker, "DELETE", "/relaymq/mqtt/sessions/kept", headers=broker.admin_headers())
        assert status in (200, 204)
        assert _removed(watcher, "kept/#")["cause"] == "administrator"

        plain = paho_client(broker, "v5", "plain")
        plain.subscribe("gone/#", 1)
        plain.subscribe("left/#", 1)
        plain.client.unsubscribe("gone/#")
        assert _removed(watcher, "gone/#")["cause"] == "unsubscribed"
        plain.disconnect()
        assert _removed(watcher, "left/#")["cause"] == "session_ended"
        newcomer.disconnect()
        watcher.disconnect()
    finally:
        broker.cleanup()
