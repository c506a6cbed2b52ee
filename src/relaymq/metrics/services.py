"""Metrics of the services beside the MQTT broker, read from ``context.services`` at scrape
time: queue depths (the queue manager), psc subscriptions (the pub/sub engine), flow counters
(the flow manager), archive partitions and their lag (the archive), channel states (the
queue manager's channels). A service that does not run gives no metrics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from relaymq.metrics.mqtt import PREFIX

#: FlowStats field -> (metric name suffix, help).
FLOW_COUNTERS = {
    "received": ("received", "Messages a flow's input took"),
    "completed": ("completed", "Flow runs that completed"),
    "backouts": ("backouts", "Flow runs backed out"),
    "failures": ("failures", "Flow runs that failed"),
    "backout_queue": ("backout_queue", "Messages a flow put to its backout queue"),
    "discarded": ("discarded", "Messages a flow discarded"),
}


class ServicesCollector:
    """Reads the running services (the registry the services fill at start) on each collect()."""

    def __init__(self, services: Mapping[str, Any]) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        yield from self._queues()
        yield from self._pubsub()
        yield from self._flows()
        yield from self._archive()
        yield from self._channels()

    def _queues(self) -> Iterator[Metric]:
        qm = self.services.get("qmgr")
        if qm is None:
            return
        depth = GaugeMetricFamily(f"{PREFIX}_queue_depth", "Messages on the queue, in any state",
                                  labels=["qmgr", "queue"])
        for name in qm.queue_names():
            try:
                depth.add_metric([qm.name, name], qm.depth(name))
            except Exception:  # noqa: BLE001 - deleted between the list and the depth
                continue
        yield depth

    def _pubsub(self) -> Iterator[Metric]:
        service = self.services.get("pubsub")
        if service is None:
            return
        yield GaugeMetricFamily(f"{PREFIX}_psc_subscriptions", "Queue subscriptions of the publish/subscribe engine",
                                value=len(service.engine.subscriptions))
        yield CounterMetricFamily(f"{PREFIX}_psc_put_failures_total", "Publications a subscriber queue refused",
                                  value=service.put_failures)

    def _flows(self) -> Iterator[Metric]:
        manager = self.services.get("flows")
        if manager is None:
            return
        families = {field: CounterMetricFamily(f"{PREFIX}_flow_{suffix}_total", text, labels=["flow", "group"])
                    for field, (suffix, text) in FLOW_COUNTERS.items()}
        instances = GaugeMetricFamily(f"{PREFIX}_flow_instances", "Instances a deployed flow runs",
                                      labels=["flow", "group"])
        nodes = GaugeMetricFamily(f"{PREFIX}_flow_nodes", "Nodes of a deployed flow", labels=["flow", "group"])
        evaluations = CounterMetricFamily(f"{PREFIX}_flow_node_evaluations_total",
                                          "Messages a node of a deployed flow was given", labels=["flow", "group", "node"])
        failures = CounterMetricFamily(f"{PREFIX}_flow_node_failures_total",
                                       "Evaluations of a node that raised an exception", labels=["flow", "group", "node"])
        for deployed in list(manager.flows.values()):
            labels = [deployed.flow.name, deployed.group]
            counts = deployed.runtime.stats.as_dict()
            for field, family in families.items():
                family.add_metric(labels, counts.get(field, 0))
            instances.add_metric(labels, deployed.runtime.instances)
            nodes.add_metric(labels, len(deployed.flow.nodes))
            for node, (evaluated, failed) in deployed.flow.node_counts.snapshot().items():
                evaluations.add_metric([*labels, node], evaluated)
                failures.add_metric([*labels, node], failed)
        yield from families.values()
        yield instances
        yield nodes
        yield evaluations
        yield failures

    def _archive(self) -> Iterator[Metric]:
        archive = self.services.get("archive")
        if archive is None:
            return
        entries = GaugeMetricFamily(f"{PREFIX}_archive_entries", "Entries kept in an archive partition",
                                    labels=["partition"])
        next_offset = GaugeMetricFamily(f"{PREFIX}_archive_next_offset", "The offset the next entry gets",
                                        labels=["partition"])
        lag = GaugeMetricFamily(f"{PREFIX}_archive_lag_entries",
                                "Entries after the highest offset a reader fetched over HTTP",
                                labels=["partition"])
        served = archive.served_offsets()
        for name, info in archive.log.partitions().items():
            entries.add_metric([name], info.size)
            next_offset.add_metric([name], info.next_seq)
            lag.add_metric([name], info.next_seq - max(served.get(name, info.first_seq), info.first_seq))
        yield entries
        yield next_offset
        yield lag

    def _channels(self) -> Iterator[Metric]:
        channels = self.services.get("channels")
        if channels is None:
            return
        up = GaugeMetricFamily(f"{PREFIX}_channel_up", "1 while the channel to the queue manager is connected",
                               labels=["channel"])
        delivered = CounterMetricFamily(f"{PREFIX}_channel_messages_delivered_total",
                                        "Messages the channel delivered to the other queue manager", labels=["channel"])
        pulled = CounterMetricFamily(f"{PREFIX}_channel_messages_pulled_total",
                                     "Messages the channel pulled from the other queue manager", labels=["channel"])
        for name, link in sorted(channels.links.items()):
            up.add_metric([name], 1 if link.connected else 0)
            delivered.add_metric([name], link.delivered)
            pulled.add_metric([name], link.pulled)
        yield up
        yield delivered
        yield pulled
        listening = GaugeMetricFamily(f"{PREFIX}_channel_listener_up", "1 while the channel listener accepts",
                                      value=1 if channels.listener is not None else 0)
        yield listening
