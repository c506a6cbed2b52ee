"""The statistics report's drop and cut-through counts (pubsub.md item 44; seed 003
l.3199-3370) in a real ``relaymq serve`` process with paho MQTT clients: a subscriber that
stops reading (its network thread held in ``on_message``) on a listener with
``overflow = "drop-new"`` loses messages, counted as Messages/Bytes Dropped when the broker
keeps it connected and as Disconnect Messages/Bytes Dropped when it disconnects it; a
subscriber that keeps up gets publications at once: Bytes Cut Through.
"""

from __future__ import annotations

import calendar
import threading
import time
import xml.etree.ElementTree as ET

from interop.clients import PahoClient, Received, paho_client

from psc_process import start

PAYLOAD = 64
WAIT = 20.0
STATS = "$SYS/Broker/B1/ExecutionGroup/+/Statistics"


def _config(limits: dict) -> dict:
    return {"listener": [{"name": "default", "host": "127.0.0.1", "overflow": "drop-new"}],
            "limits": limits, "pubsub": {"broker_name": "B1", "stats_interval_ms": 200}}


def _stuck_subscriber(broker, client_id: str, topic: str, *, clean: bool) -> tuple[PahoClient, threading.Event]:
    """A QoS 1 subscriber whose network thread stops in its first on_message until the event
    is set: from then on it reads and acknowledges nothing."""
    release = threading.Event()
    sub = PahoClient(broker, "v311", client_id, clean=clean)
    sub.client.on_message = lambda client, userdata, message: release.wait(60)
    sub.connect()
    assert sub.subscribe(topic, 1) == [1]
    return sub, release


def _publish(pub: PahoClient, topic: str, count: int) -> None:
    for _ in range(count):
        pub.client.publish(topic, b"x" * PAYLOAD, 1).wait_for_publish(WAIT)


def _report_after(watcher: PahoClient, moment: float) -> ET.Element:
    """The first statistics report stamped after ``moment`` (wall clock)."""

    def after(message: Received) -> ET.Element | None:
        report = ET.fromstring(message.payload)
        stamp = report.find("Broker").get("TimeStamp")
        return report if calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) > moment else None

    return watcher.inbox.first(after, WAIT, "statistics report")


def _connections(report: ET.Element) -> dict[str, dict[str, str]]:
    return {c.get("ClientId"): c.attrib for c in report.find("Client").findall("Connection")}


def test_item_44_bytes_dropped_and_bytes_cut_through_per_client(tmp_path):
    """pubsub.md item 44; seed 003 l.3226-3229 (Bytes Cut Through), 3249-3259 (Messages and
    Bytes Dropped, the client not disconnected): per Connection and in the Client totals."""
    broker = start(tmp_path, _config({"max_queued_messages": 5}))
    try:
        watcher = paho_client(broker, "v5", "stats-watcher")
        watcher.subscribe(STATS, 0)
        fast = paho_client(broker, "v5", "fast")
        fast.subscribe("cut/#", 1)
        slow, release = _stuck_subscriber(broker, "slow", "flood/#", clean=True)
        pub = paho_client(broker, "v311", "publisher")
        _publish(pub, "cut/a", 3)
        fast.inbox.wait_for(3, WAIT)
        _publish(pub, "flood/a", 40)  # drop-new: never held back, what does not fit is dropped
        report = _report_after(watcher, time.time() + 1)
        rows = _connections(report)
        assert rows["fast"]["BytesCutThrough"] == str(3 * PAYLOAD)  # written at once, never queued
        assert rows["fast"]["MessagesDropped"] == rows["fast"]["BytesDropped"] == "0"
        dropped = int(rows["slow"]["MessagesDropped"])
        assert 0 < dropped < 40
        assert rows["slow"]["BytesDropped"] == str(dropped * PAYLOAD)
        assert rows["slow"]["DisconnectMessagesDropped"] == rows["slow"]["DisconnectBytesDropped"] == "0"
        totals = report.find("Client").attrib
        assert int(totals["MessagesDropped"]) >= dropped and int(totals["BytesDropped"]) >= dropped * PAYLOAD
        assert int(totals["BytesCutThrough"]) >= 3 * PAYLOAD
        assert totals["DisconnectMessagesDropped"] == totals["DisconnectBytesDropped"] == "0"
        release.set()
        for client in (watcher, fast, slow, pub):
            client.disconnect()
    finally:
        broker.cleanup()


def test_item_44_drops_followed_by_a_disconnection_are_counted_apart(tmp_path):
    """pubsub.md item 44; seed 003 l.3260-3267 (Disconnect Messages/Bytes Dropped): a full
    persistent session on a drop-new listener drops the message that does not fit and the
    broker disconnects its client; the reconnected client's Connection row and the Client
    totals count that drop apart from the ones while it was away."""
    broker = start(tmp_path, _config({"max_queued_messages": 2, "max_stored_messages": 4, "max_inflight": 1}))
    try:
        watcher = paho_client(broker, "v5", "stats-watcher")
        watcher.subscribe(STATS, 0)
        slow, release = _stuck_subscriber(broker, "slow", "flood/#", clean=False)
        pub = paho_client(broker, "v311", "publisher")
        _publish(pub, "flood/a", 10)  # 4 fit (1 in flight, 3 waiting); the 5th disconnects
        release.set()
        slow.disconnect()
        again = PahoClient(broker, "v311", "slow", clean=False).connect()
        report = _report_after(watcher, time.time() + 1)
        row = _connections(report)["slow"]
        assert (row["DisconnectMessagesDropped"], row["DisconnectBytesDropped"]) == ("1", str(PAYLOAD))
        dropped = int(row["MessagesDropped"])  # those that came while it was disconnected
        assert row["BytesDropped"] == str(dropped * PAYLOAD) and dropped == 10 - 4 - 1
        totals = report.find("Client").attrib
        assert (totals["DisconnectMessagesDropped"], totals["DisconnectBytesDropped"]) == ("1", str(PAYLOAD))
        for client in (watcher, pub, again):
            client.disconnect()
    finally:
        broker.cleanup()
