"""GET /metrics on a real broker after real MQTT traffic, parsed with prometheus_client's own
parser (issue 18 "What to build", first item: connections by listener and protocol level,
messages and bytes in/out by QoS, drops by reason, retained count, sessions online/offline,
queued messages, store commits and a commit-latency histogram, queue depths, psc
subscriptions, flow counters, archive lag per partition, channel states)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from harness import BrokerProcess
from interop.clients import paho_client, unique
from operator_http import call, wait_until

CONFIG = {"archive": {"rule": [{"name": "telemetry", "topics": ["metrics/#"], "partitions": 1}]}}


def scrape(broker: BrokerProcess, **options: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample as {(name, sorted labels): value}."""
    status, headers, body = call(broker, "GET", "/metrics", **options)  # type: ignore[arg-type]
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_metrics_after_mqtt_traffic(broker_factory) -> None:
    """Issue 18 item 1: each family reads the broker's live state at scrape time."""
    broker = broker_factory(config=CONFIG)
    before = scrape(broker)
    assert value(before, "relaymq_mqtt_messages_received_total", qos="1") == 0
    # An MQTT 5 subscriber with a persistent session, then gone: what is published waits for it.
    offline = paho_client(broker, "v5", unique("off"), clean=False)
    offline.subscribe("metrics/#", 1)
    offline.disconnect()
    watcher = paho_client(broker, "v311", unique("watch"))
    watcher.subscribe("metrics/#", 2)
    publisher = paho_client(broker, "v5", unique("pub"))
    publisher.publish("metrics/a", b"zero", 0)
    publisher.publish("metrics/b", b"one!", 1, retain=True)
    publisher.publish("metrics/c", b"two!!", 2)
    watcher.inbox.wait_for(3)
    assert call(broker, "POST", "/ibmmq/rest/v3/messaging/qmgr/QM1/queue/SYSTEM.DEFAULT.LOCAL.QUEUE/message",
                b"on the queue", headers={"Content-Type": "text/plain"})[0] == 201

    def delivered() -> dict | None:
        current = scrape(broker)
        return current if value(current, "relaymq_mqtt_messages_sent_total", qos="2") >= 1 else None

    samples = wait_until(delivered, "the QoS 2 delivery counted")
    assert value(samples, "relaymq_mqtt_connections", listener="default", protocol_level="5") == 1
    assert value(samples, "relaymq_mqtt_connections", listener="default", protocol_level="4") == 1
    for qos in ("0", "1", "2"):
        assert value(samples, "relaymq_mqtt_messages_received_total", qos=qos) == 1
    assert value(samples, "relaymq_mqtt_payload_received_bytes_total", qos="2") == len(b"two!!")
    assert value(samples, "relaymq_mqtt_payload_sent_bytes_total", qos="1") >= len(b"one!")
    assert value(samples, "relaymq_mqtt_received_bytes_total") > value(before, "relaymq_mqtt_received_bytes_total")
    # the QoS 0 message found the persistent subscriber offline: dropped, by that reason
    assert value(samples, "relaymq_mqtt_messages_dropped_total", reason="qos0_not_connected") == 1
    assert value(samples, "relaymq_mqtt_messages_dropped_total", reason="queue_full") == 0
    assert value(samples, "relaymq_mqtt_sessions", state="online") == 2
    assert value(samples, "relaymq_mqtt_sessions", state="offline") == 1
    assert value(samples, "relaymq_mqtt_queued_messages") == 2  # the QoS 1 and 2 for the offline session
    assert value(samples, "relaymq_mqtt_retained_messages") >= 1
    assert value(samples, "relaymq_mqtt_subscriptions") == 2
    assert value(samples, "relaymq_mqtt_listener_up", listener="default",
                 url=f"mqtt://127.0.0.1:{broker.port}") == 1
    commits = value(samples, "relaymq_store_commits_total")
    assert commits > value(before, "relaymq_store_commits_total")
    assert value(samples, "relaymq_store_commit_duration_seconds_count") >= commits - 1
    assert value(samples, "relaymq_store_commit_duration_seconds_bucket", le="+Inf") == \
        value(samples, "relaymq_store_commit_duration_seconds_count")
    assert value(samples, "relaymq_store_commit_duration_seconds_sum") > 0
    assert value(samples, "relaymq_queue_depth", qmgr="QM1", queue="SYSTEM.DEFAULT.LOCAL.QUEUE") == 1
    assert value(samples, "relaymq_psc_subscriptions") == 0
    assert value(samples, "relaymq_archive_next_offset", partition="telemetry-0") == 3
    assert value(samples, "relaymq_archive_lag_entries", partition="telemetry-0") == 3
    assert value(samples, "relaymq_channel_listener_up") == 1
    assert value(samples, "relaymq_process_resident_memory_bytes") > 0
    for client in (watcher, publisher):
        client.disconnect()


def test_archive_lag_falls_as_a_reader_fetches(broker_factory) -> None:
    """Issue 18 item 1, "archive lag per partition": entries after what readers fetched."""
    broker = broker_factory(config=CONFIG)
    publisher = paho_client(broker, "v311", unique("pub"))
    for n in range(5):
        publisher.publish("metrics/x", str(n).encode(), 1)
    publisher.disconnect()
    assert value(scrape(broker), "relaymq_archive_lag_entries", partition="telemetry-0") == 5
    status, _, _ = call(broker, "GET", "/archive/partitions/telemetry-0?start=0&end=3")
    assert status == 200
    assert value(scrape(broker), "relaymq_archive_lag_entries", partition="telemetry-0") == 2


def test_metrics_need_the_http_authentication(broker_factory, tmp_path) -> None:
    """Issue 18: /metrics is behind the HTTP server's authentication (docs/monitoring.md)."""
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    passwords.set("prometheus", "scrape-pw", cost=4)
    path = tmp_path / "passwd"
    passwords.save(str(path))
    broker = broker_factory(config={"access": {"allow_anonymous": False, "password_file": str(path)}})
    assert call(broker, "GET", "/metrics", admin=False)[0] == 401
    assert call(broker, "GET", "/metrics", credentials=("prometheus", "wrong"))[0] == 401
    assert value(scrape(broker, credentials=("prometheus", "scrape-pw")), "relaymq_mqtt_sessions", state="online") == 0


def test_example_dashboard_and_scrape_config_name_real_metrics(broker_factory) -> None:
    """Issue 18 item 1: examples/monitoring's Grafana dashboard queries only metrics the broker
    exposes, and its Prometheus config scrapes the broker's /metrics."""
    import json
    import re
    from pathlib import Path

    import yaml

    examples = Path(__file__).resolve().parents[2] / "examples" / "monitoring"
    scrape_config = yaml.safe_load((examples / "prometheus.yml").read_text())
    job = scrape_config["scrape_configs"][0]
    assert job["metrics_path"] == "/metrics" and job["static_configs"][0]["targets"] == ["127.0.0.1:8080"]
    dashboard = json.loads((examples / "grafana-dashboard.json").read_text())
    used = {re.sub(r"_(bucket|count|sum)$", "", name) for panel in dashboard["panels"]
            for target in panel["targets"] for name in re.findall(r"relaymq_[a-z_]+", target["expr"])}
    broker = broker_factory(config={**CONFIG, "qmgr": {"connection": [{"name": "QM2", "address": "127.0.0.1:1"}]}})
    text = call(broker, "GET", "/metrics")[2].decode()
    exposed = set(re.findall(r"^# TYPE (relaymq_[a-z_]+) ", text, re.M))  # families, with samples or not yet
    exposed |= {name + "_total" for name in exposed}  # the text format's TYPE line names a counter without it
    assert len(used) >= 12 and used <= exposed, used - exposed


NODES_FLOW = """flow: nodes
backout_threshold: 1
nodes:
  In: {type: MQInput, queue: NODES.IN}
  Check: {type: Compute, code: "def main(c):\\n    if c.input.mq.body == b'bad':\\n        raise ValueError('bad order')\\n    return c.copy_input()\\n"}
  Out: {type: MQOutput, queue: NODES.OUT}
  Failed: {type: MQOutput, queue: NODES.FAILED}
connections:
  - In.out -> Check
  - Check.out -> Out
  - In.failure -> Failed
"""


def test_flow_and_node_counters(broker_factory) -> None:
    """Issue 18 item 1, "flow and node counters": a deployed flow's counts and each node's
    evaluations and failures, after real queue traffic through it (two good orders, one that
    its Compute node refuses and the failure path takes)."""
    queues = [{"name": name} for name in ("NODES.IN", "NODES.OUT", "NODES.FAILED")]
    broker = broker_factory(config={"qmgr": {"queue": queues}})
    status, _, body = call(broker, "POST", "/relaymq/flows", NODES_FLOW.encode(),
                           headers={"Content-Type": "application/yaml"})
    assert status == 201, body
    for text in (b"good 1", b"bad", b"good 2"):
        assert call(broker, "POST", "/ibmmq/rest/v3/messaging/qmgr/QM1/queue/NODES.IN/message", text,
                    headers={"Content-Type": "text/plain"})[0] == 201

    flow = {"flow": "nodes", "group": "default"}

    def settled() -> dict | None:
        # the flow counts a message once its unit of work is committed, a moment after the
        # output queue shows it: wait for the three messages to be counted as finished too
        current = scrape(broker)
        done = value(current, "relaymq_queue_depth", qmgr="QM1", queue="NODES.OUT") == 2 and \
            value(current, "relaymq_queue_depth", qmgr="QM1", queue="NODES.FAILED") == 1 and \
            value(current, "relaymq_flow_completed_total", **flow) + \
            value(current, "relaymq_flow_backouts_total", **flow) >= 3
        return current if done else None

    samples = wait_until(settled, "two orders on NODES.OUT, one on NODES.FAILED, all three counted")
    assert value(samples, "relaymq_flow_received_total", **flow) == 3
    assert value(samples, "relaymq_flow_completed_total", **flow) == 2
    assert value(samples, "relaymq_flow_backouts_total", **flow) == 1  # the bad one, then the failure path
    evaluations = {node: value(samples, "relaymq_flow_node_evaluations_total", node=node, **flow)
                   for node in ("In", "Check", "Out", "Failed")}
    failures = {node: value(samples, "relaymq_flow_node_failures_total", node=node, **flow)
                for node in ("In", "Check", "Out", "Failed")}
    assert evaluations == {"In": 3, "Check": 3, "Out": 2, "Failed": 1}
    assert failures == {"In": 0, "Check": 1, "Out": 0, "Failed": 0}
