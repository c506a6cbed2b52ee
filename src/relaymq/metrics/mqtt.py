"""The MQTT broker's metrics, read from the broker at scrape time (docs/monitoring.md).

Connections by listener and protocol level, messages and payload bytes in and out by QoS, wire
bytes, drops by reason, retained messages, sessions online and offline, queued and in-flight
messages, subscriptions, and the storage engine's commits with their latency histogram."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from relaymq import __version__
from relaymq.broker.broker import Broker

PREFIX = "relaymq"
QOS_LEVELS = ("0", "1", "2")


def _by_qos(name: str, documentation: str, values: list[int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=["qos"])
    for qos, value in zip(QOS_LEVELS, values, strict=True):
        family.add_metric([qos], value)
    return family


class MqttCollector:
    """Reads ``broker`` (and the MQTT listeners, when given) on each ``collect()``; must be
    called on the broker's event loop, as the HTTP handlers are."""

    def __init__(self, broker: Broker, listeners: Any = None) -> None:
        self.broker = broker
        self.listeners = listeners

    def collect(self) -> Iterator[Metric]:
        broker, stats = self.broker, self.broker.stats
        info = GaugeMetricFamily(f"{PREFIX}_build_info", "relaymq's version (always 1)", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        yield GaugeMetricFamily(f"{PREFIX}_uptime_seconds", "Seconds since the broker started",
                                value=broker.clock.monotonic() - broker.started_at)
        yield from self._listeners()
        connected: Counter[tuple[str, str]] = Counter(
            (str(c.listener), str(c.level)) for c in broker.connections if c.connected)
        connections = GaugeMetricFamily(f"{PREFIX}_mqtt_connections", "MQTT clients connected now",
                                        labels=["listener", "protocol_level"])
        for (listener, level), n in sorted(connected.items()):
            connections.add_metric([listener, level], n)
        yield connections
        yield CounterMetricFamily(f"{PREFIX}_mqtt_connections_accepted_total",
                                  "MQTT connections accepted since start", value=stats.connections_total)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_connections_maximum", "Most MQTT clients connected at once",
                                value=stats.clients_maximum)
        yield _by_qos(f"{PREFIX}_mqtt_messages_received_total", "PUBLISH packets received from clients",
                      stats.received_by_qos)
        yield _by_qos(f"{PREFIX}_mqtt_messages_sent_total", "PUBLISH packets sent to clients", stats.sent_by_qos)
        yield _by_qos(f"{PREFIX}_mqtt_payload_received_bytes_total", "Payload bytes of the PUBLISH packets received",
                      stats.payload_received_by_qos)
        yield _by_qos(f"{PREFIX}_mqtt_payload_sent_bytes_total", "Payload bytes of the PUBLISH packets sent",
                      stats.payload_sent_by_qos)
        yield CounterMetricFamily(f"{PREFIX}_mqtt_received_bytes_total", "Bytes of every MQTT packet received",
                                  value=stats.bytes_received)
        yield CounterMetricFamily(f"{PREFIX}_mqtt_sent_bytes_total", "Bytes of every MQTT packet sent",
                                  value=stats.bytes_sent)
        dropped = CounterMetricFamily(f"{PREFIX}_mqtt_messages_dropped_total",
                                      "Messages not delivered to a subscriber, by reason", labels=["reason"])
        for reason, value in stats.dropped_by_reason.items():
            dropped.add_metric([reason], value)
        yield dropped
        yield CounterMetricFamily(f"{PREFIX}_mqtt_publications_held_total",
                                  "Client publications held back by a full session", value=stats.publications_held)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_retained_messages", "Retained messages (including $SYS)",
                                value=len(broker.retained))
        yield from self._sessions()
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_subscriptions", "MQTT subscriptions", value=len(broker.subscriptions))
        yield from self._store()

    def _listeners(self) -> Iterator[Metric]:
        if self.listeners is None:
            return
        up = GaugeMetricFamily(f"{PREFIX}_mqtt_listener_up", "1 while the MQTT listener accepts connections",
                               labels=["listener", "url"])
        sockets = GaugeMetricFamily(f"{PREFIX}_mqtt_listener_sockets", "Open connections of the listener",
                                    labels=["listener"])
        for item in self.listeners.items:
            up.add_metric([item.config.name, item.url], 1 if item.server is not None else 0)
            sockets.add_metric([item.config.name], len(item.protocols))
        yield up
        yield sockets

    def _sessions(self) -> Iterator[Metric]:
        online = offline = queued = inflight = 0
        for session in self.broker.sessions.values():
            if session.connection is not None:
                online += 1
            else:
                offline += 1
            queued += len(session.queue) + session.in_store_only()
            inflight += len(session.inflight)
        sessions = GaugeMetricFamily(f"{PREFIX}_mqtt_sessions", "MQTT sessions, by state", labels=["state"])
        sessions.add_metric(["online"], online)
        sessions.add_metric(["offline"], offline)
        yield sessions
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_queued_messages",
                                "Messages waiting in session queues (in memory and in the store only)", value=queued)
        yield GaugeMetricFamily(f"{PREFIX}_mqtt_inflight_messages", "Messages sent and not yet acknowledged",
                                value=inflight)

    def _store(self) -> Iterator[Metric]:
        engine = getattr(self.broker.store, "engine", None)
        if engine is None:  # the memory store
            return
        yield CounterMetricFamily(f"{PREFIX}_store_commits_total", "Transactions the storage engine committed",
                                  value=engine.commits)
        yield CounterMetricFamily(f"{PREFIX}_store_statements_written_total", "Statements written in them",
                                  value=engine.written)
        yield CounterMetricFamily(f"{PREFIX}_store_write_retries_total", "Commits tried again after a write error",
                                  value=engine.write_retries)
        yield GaugeMetricFamily(f"{PREFIX}_store_writable", "0 while commits fail (a full disk)",
                                value=0 if engine.write_error is not None else 1)
        latency = engine.commit_latency
        buckets = [("+Inf" if bound == float("inf") else repr(bound), n) for bound, n in latency.cumulative()]
        yield HistogramMetricFamily(f"{PREFIX}_store_commit_duration_seconds",
                                    "Seconds from BEGIN to COMMIT of each commit", buckets=buckets,
                                    sum_value=latency.total)
