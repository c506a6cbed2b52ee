"""The statistics report of pubsub.md item 44 (seed 003 l.2871-2932, 3199-3370).

Why a pure function: the service calls it every ``stats_interval_ms`` and publishes the result
on ``$SYS/Broker/<broker>/ExecutionGroup/<eg>/Statistics``; tests call it directly.

The seed publishes the report "in XML format" in three sections, Broker, Client and Neighbor
(3201-3209), and names their fields without giving the XML; relaymq writes one element per
section with the seed's field names as attributes::

    <?xml version='1.0' encoding='UTF-8'?>
    <Statistics>
      <Broker Name="B1" ExecutionGroup="default" ClientCount="2" NeighborCount="0"
              SubscriptionCount="7" TimeStamp="2026-11-23T23:50:00.123Z"/>
      <Client BytesQueued="0" MessagesSent="12" BytesSent="480" BytesCutThrough="96"
              MessagesReceived="5" BytesReceived="310" MessagesDropped="0" BytesDropped="0"
              DisconnectMessagesDropped="0" DisconnectBytesDropped="0">
        <Connection ClientId="sensor-1" UserId="alice" BytesQueued="0" MessagesQueued="0"
                    MessagesDropped="0" BytesDropped="0" DisconnectMessagesDropped="0"
                    DisconnectBytesDropped="0" MessagesSent="4" BytesSent="160"
                    BytesCutThrough="32" MessagesReceived="5" BytesReceived="310"/>
      </Client>
      <Neighbor>
        <Connection Name="B2" Relation="collective" Connected="true" ProxySubscriptions="3"
                    MessagesReceived="40" MessagesDropped="0"/>
      </Neighbor>
    </Statistics>

What is counted and what is not (nothing is reported as a made-up 0):

* Broker: SubscriptionCount is every subscription the broker holds: each MQTT session's
  (connected or not, shared ones per member) plus every queue subscription, at every
  subscription point. NeighborCount is the number of configured neighbours (relaymq.network),
  and Neighbor has one Connection per neighbour: Name, Relation, Connected, ProxySubscriptions
  (held there for this broker), MessagesReceived from it, MessagesDropped (copies that came
  another way, loops, Local publications).
* Client, the totals over all clients since start: messages and bytes sent and received (the
  bytes of every MQTT packet), bytes cut through (payload bytes of publications written to a
  client at once, never queued), messages and payload bytes dropped (queue overflow, limits)
  where the client was not disconnected because of it, and the Disconnect ones, where the
  broker disconnected it (a full persistent session with ``overflow = "drop-new"``); bytes
  queued now.
* Client/Connection, per connected client: what the broker keeps per session (bytes and
  messages queued, messages and bytes dropped, with and without a disconnection) and what
  the current connection moved (messages and bytes sent and received, bytes cut through; a
  client that reconnected starts again from 0).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

CONTENT_TYPE = "application/xml"


def statistics_topic(broker_name: str, execution_group: str) -> str:
    return f"$SYS/Broker/{broker_name}/ExecutionGroup/{execution_group}/Statistics"


def subscription_count(broker: Any, queue_subscriptions: int) -> int:
    """Every subscription held: MQTT sessions' (connected or not) plus queue subscriptions."""
    return sum(len(session.subscriptions) for session in broker.sessions.values()) + queue_subscriptions


def _timestamp(now: float) -> str:
    moment = _dt.datetime.fromtimestamp(now, tz=_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_statistics(broker: Any, *, broker_name: str, execution_group: str, queue_subscriptions: int,
                     now: float, neighbors: Sequence[Mapping[str, str]] = ()) -> ET.Element:
    """The report as an element tree (3199-3370)."""
    import xml.etree.ElementTree as ET  # only when reports are on (stats_interval_ms): 0.2 MB

    connected = [s for s in broker.sessions.values() if s.connection is not None]
    root = ET.Element("Statistics")
    ET.SubElement(root, "Broker", {
        "Name": broker_name,
        "ExecutionGroup": execution_group,
        "ClientCount": str(len(connected)),
        "NeighborCount": str(len(neighbors)),
        "SubscriptionCount": str(subscription_count(broker, queue_subscriptions)),
        "TimeStamp": _timestamp(now),
    })
    stats = broker.stats
    client = ET.SubElement(root, "Client", {
        "BytesQueued": str(sum(s.queued_bytes for s in broker.sessions.values())),
        "MessagesSent": str(stats.messages_sent),
        "BytesSent": str(stats.bytes_sent),
        "BytesCutThrough": str(stats.bytes_cut_through),
        "MessagesReceived": str(stats.messages_received),
        "BytesReceived": str(stats.bytes_received),
        "MessagesDropped": str(stats.publish_dropped - stats.disconnect_dropped),
        "BytesDropped": str(stats.bytes_dropped - stats.disconnect_bytes_dropped),
        "DisconnectMessagesDropped": str(stats.disconnect_dropped),
        "DisconnectBytesDropped": str(stats.disconnect_bytes_dropped),
    })
    for session in sorted(connected, key=lambda s: s.client_id):
        conn = session.connection
        ET.SubElement(client, "Connection", {
            "ClientId": session.client_id,
            "UserId": session.username or "",
            "BytesQueued": str(session.queued_bytes),
            "MessagesQueued": str(len(session.queue) + len(session.inflight)),
            "MessagesDropped": str(session.dropped - session.disconnect_dropped),
            "BytesDropped": str(session.dropped_bytes - session.disconnect_dropped_bytes),
            "DisconnectMessagesDropped": str(session.disconnect_dropped),
            "DisconnectBytesDropped": str(session.disconnect_dropped_bytes),
            "MessagesSent": str(conn.messages_sent),
            "BytesSent": str(conn.bytes_sent),
            "BytesCutThrough": str(conn.bytes_cut_through),
            "MessagesReceived": str(conn.messages_received),
            "BytesReceived": str(conn.bytes_received),
        })
    neighbor = ET.SubElement(root, "Neighbor")
    for row in neighbors:  # relaymq.network: one per [[network.neighbor]]
        ET.SubElement(neighbor, "Connection", dict(row))
    return root


def statistics_payload(broker: Any, *, broker_name: str, execution_group: str, queue_subscriptions: int,
                       now: float, neighbors: Sequence[Mapping[str, str]] = ()) -> bytes:
    import xml.etree.ElementTree as ET

    return ET.tostring(build_statistics(broker, broker_name=broker_name, execution_group=execution_group,
                                        queue_subscriptions=queue_subscriptions, now=now, neighbors=neighbors),
                       encoding="UTF-8", xml_declaration=True)
