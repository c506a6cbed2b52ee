"""The telemetry analytics example end to end (issue 7 item 6 and its crash test; flows-http.md
items 10-13 for the batch format and the split).

Device batches are published to a broker with an archive rule, the example job
(examples/telemetry-analytics/telemetry_job.py) reads them from the log, splits them with the
telemetry flow's Compute code, writes per unit and 15-minute window the state-change count and
longest heartbeat gap as Parquet, and publishes one alert per silent unit. The expected values
are computed here from the simulator's events, independently of Spark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pipeline_helpers import EXAMPLE_DIR, Subscriber, wait_for_entries

sys.path.insert(0, str(EXAMPLE_DIR))
import devices  # noqa: E402

EXAMPLE_FLOW = str(EXAMPLE_DIR.parent / "telemetry-flow" / "telemetry.yaml")
JOB = str(EXAMPLE_DIR / "telemetry_job.py")
#: The seed's sample batch (flows-http.md item 11).
SEED_BATCH = b"""<events d_tstamp="20040417103118">
  <StateChange topic="LCUnit/12345/StateChange" d_tstamp="20040417104439" i_state="1" i_old_state="0"><![CDATA[Changing state from 'Starting' to 'Payload' because 'The startup routine is complete']]></StateChange>
  <Heartbeat topic="LCUnit/12345/Heartbeat" d_tstamp="20040417105126" i_state="1"><d_tstamp>20040417104948</d_tstamp><i_state>1</i_state></Heartbeat>
</events>"""

UNITS, BATCHES, SILENT, SILENT_AFTER = 6, 6, {3, 5}, 2
RULES = [{"name": "telemetry", "topics": ["LCUnit/+/batch"], "partitions": 2}]
LATENESS = timedelta(minutes=15)
SILENCE = timedelta(minutes=30)


def expected(plan) -> tuple[dict, set[str]]:
    """Closed windows (unit, start) -> (state changes, heartbeats, longest gap s), and the alerted units."""
    events = [e for _u, _b, evs in plan for e in evs]
    watermark = max(e.time for e in events) - LATENESS
    windows: dict = defaultdict(lambda: [0, []])
    last_seen: dict[int, datetime] = {}
    for e in events:
        start = e.time.replace(minute=e.time.minute - e.time.minute % 15, second=0)
        if e.kind == "StateChange":
            windows[(e.unit, start)][0] += 1
        else:
            windows[(e.unit, start)][1].append(e.time)
        last_seen[e.unit] = max(last_seen.get(e.unit, e.time), e.time)
    closed = {}
    for (unit, start), (changes, beats) in windows.items():
        if start + timedelta(minutes=15) <= watermark:
            beats = sorted(beats)
            gap = max((int((b - a).total_seconds()) for a, b in zip(beats, beats[1:])), default=0)
            closed[(str(unit), start)] = (changes, len(beats), gap)
    alerted = {str(u) for u, t in last_seen.items() if t + SILENCE < watermark}
    return closed, alerted


def check_outputs(spark, out: Path, alerts: list, plan) -> None:
    closed, alerted = expected(plan)
    assert alerted == {str(u) for u in SILENT}  # the simulation is meaningful
    rows = spark.read.parquet(str(out / "windows")).collect()
    got = {(r.unit, r.window_start.replace(tzinfo=None)): (r.state_changes, r.heartbeats, r.longest_heartbeat_gap_s)
           for r in rows}
    assert len(rows) == len(got)  # no duplicate window rows
    assert got == closed  # no missing row, no wrong value
    assert sorted(m.topic for m in alerts) == sorted(f"alerts/LCUnit/{u}" for u in alerted)  # exactly once each


def publish_plan(broker) -> list:
    plan = devices.schedule(UNITS, BATCHES, SILENT, SILENT_AFTER)
    assert devices.publish("127.0.0.1", broker.port, plan) == len(plan)
    from relaymq.pipeline.fetch import HttpAccess

    wait_for_entries(HttpAccess(broker.http_url), len(plan))
    return plan


def job_args(broker, out: Path, *extra: str) -> list[str]:
    return ["--log", str(broker.data_dir), "--broker", f"127.0.0.1:{broker.port}", "--out", str(out), "--once", *extra]


def test_seed_sample_split_matches_spec() -> None:
    """flows-http.md item 13: the sample batch splits into the two expected publications."""
    from relaymq.flows.definition import load_flow
    from relaymq.flows.mqtt_mapping import from_mqtt, usr_properties

    ports = load_flow(EXAMPLE_FLOW).run_sync(from_mqtt("LCUnit/12345/batch", SEED_BATCH, 1, domain="XMLNS"))
    assert [(t, dict(usr_properties(m))["d_tstamp"]) for t, m, *_ in ports.publications] == [
        ("LCUnit/12345/StateChange", "20040417104439"), ("LCUnit/12345/Heartbeat", "20040417105126")]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_example_survives_a_crash_between_sink_commit_and_spark_commit(spark, archive_broker_factory, tmp_path) -> None:
    """issue 7 crash test: the job (run with `relaymq pipeline run`) dies after the relaymq sink
    delivered and recorded a batch but before Spark recorded it; the restarted job sends no
    duplicate alert and the Parquet output has every closed window exactly once."""
    from relaymq.pipeline.sink import FAULT_ENV

    broker = archive_broker_factory(RULES)
    sub = Subscriber(broker.port, "alerts/#")
    plan = publish_plan(broker)
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, **{FAULT_ENV: "first-delivery"})
    crashed = subprocess.run(
        [sys.executable, "-m", "relaymq", "pipeline", "run", JOB, "--master", "local[2]",
         "--conf", "spark.sql.shuffle.partitions=2", "--", *job_args(broker, out, "--max-records", "16")],
        env=env, capture_output=True, text=True, timeout=400)
    assert crashed.returncode != 0, crashed.stderr[-2000:]
    ledger_dir = out / "checkpoints" / "alerts" / "relaymq-ledger" / "telemetry-alerts"
    delivered = sorted(int(p.stem.split("-")[1]) for p in ledger_dir.glob("batch-*.json"))
    commits = out / "checkpoints" / "alerts" / "commits"
    recorded = {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() else set()
    assert delivered and delivered[-1] not in recorded, crashed.stderr[-3000:]  # the crash hit the window
    first_alerts = len(sub.wait_for(1))
    assert first_alerts >= 1

    import runpy

    runpy.run_path(JOB, run_name="telemetry_job")["run"](spark, job_args(broker, out, "--max-records", "16"))
    alerts = sub.wait_for(len(SILENT))
    sub.close()
    check_outputs(spark, out, alerts, plan)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_example_on_a_standalone_cluster_with_spark_submit(spark, archive_broker_factory, tmp_path) -> None:
    """issue 7 runner: the same job file runs under spark-submit on a standalone master and worker
    (loopback); executors read the log over the broker's HTTP fetch endpoint (Arrow IPC)."""
    from standalone import StandaloneCluster

    broker = archive_broker_factory(RULES)
    sub = Subscriber(broker.port, "alerts/#")
    plan = publish_plan(broker)
    out = tmp_path / "out"
    with StandaloneCluster(tmp_path / "cluster") as cluster:
        done = cluster.submit(JOB, ["--log", broker.http_url, "--broker", f"127.0.0.1:{broker.port}",
                                    "--out", str(out), "--once"])
    assert done.returncode == 0, done.stderr[-3000:]
    alerts = sub.wait_for(len(SILENT))
    sub.close()
    check_outputs(spark, out, alerts, plan)
