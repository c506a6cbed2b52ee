"""The telemetry analytics example end to end (issue 7 "Example" and its crash test; flows-http.md
items 10-13 for the batch format and the split; audit items 1, 2 and 7).

Device batches are published to a broker with the example's archive rule; the example job
(examples/telemetry-analytics/telemetry_job.py) reads them from the log, splits them with the
telemetry flow's Compute code, writes per unit and 15-minute window the state-change count,
heartbeat count and longest heartbeat gap as Parquet, and publishes one alert per silence of
30 minutes. The expected values are computed here by ``expected``, a plain-Python reading of
the definitions in the job's docstring over the simulator's events - not the job's code.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pipeline_helpers import EXAMPLE_DIR, Subscriber, become_subreaper, kill_session, wait_for_entries

sys.path.insert(0, str(EXAMPLE_DIR))
import devices  # noqa: E402

EXAMPLE_FLOW = str(EXAMPLE_DIR.parent / "telemetry-flow" / "telemetry.yaml")
JOB = str(EXAMPLE_DIR / "telemetry_job.py")
CRASH_JOB = str(Path(__file__).resolve().parent / "crash_job.py")
#: The seed's sample batch (flows-http.md item 11).
SEED_BATCH = b"""<events d_tstamp="20040417103118">
  <StateChange topic="LCUnit/12345/StateChange" d_tstamp="20040417104439" i_state="1" i_old_state="0"><![CDATA[Changing state from 'Starting' to 'Payload' because 'The startup routine is complete']]></StateChange>
  <Heartbeat topic="LCUnit/12345/Heartbeat" d_tstamp="20040417105126" i_state="1"><d_tstamp>20040417104948</d_tstamp><i_state>1</i_state></Heartbeat>
</events>"""

LATENESS = timedelta(minutes=15)
SILENCE = timedelta(minutes=30)
WINDOW = timedelta(minutes=15)


def window_of(t: datetime) -> datetime:
    return t.replace(minute=t.minute - t.minute % 15, second=0, microsecond=0)


def expected(plan) -> tuple[dict, set[tuple[str, datetime]]]:
    """What the job must produce from the simulated events, by the definitions of the example:

    * a window (unit, start) for every 15-minute window with an event of the unit, written once
      the final watermark (newest event - 15 min lateness) reaches its end: (state changes,
      heartbeats, longest gap in s or None) where a gap runs from a heartbeat to the unit's
      next heartbeat (in any window) and belongs to the window of the later one;
    * an alert (unit, last_seen) for each event after which the unit has no event for more than
      30 minutes, once the watermark reaches last_seen + 30 min."""
    events = [e for _u, _b, evs in plan for e in evs]
    watermark = max(e.time for e in events) - LATENESS
    by_unit: dict[int, list] = defaultdict(list)
    for e in events:
        by_unit[e.unit].append(e)
    windows: dict[tuple[str, datetime], list] = {}
    alerts: set[tuple[str, datetime]] = set()
    for unit, evs in by_unit.items():
        evs.sort(key=lambda e: e.time)
        for e in evs:
            row = windows.setdefault((str(unit), window_of(e.time)), [0, 0, None])
            row[0] += e.kind == "StateChange"
            row[1] += e.kind == "Heartbeat"
        beats = [e.time for e in evs if e.kind == "Heartbeat"]
        for previous, current in zip(beats, beats[1:], strict=False):
            row = windows[(str(unit), window_of(current))]
            gap = int((current - previous).total_seconds())
            row[2] = gap if row[2] is None else max(row[2], gap)
        times = [e.time for e in evs]
        for last, following in zip(times, times[1:] + [None], strict=False):
            if (following is None or following - last > SILENCE) and last + SILENCE <= watermark:
                alerts.add((str(unit), last))
    closed = {key: tuple(row) for key, row in windows.items() if key[1] + WINDOW <= watermark}
    return closed, alerts


def check_outputs(spark, out: Path, alerts: list, plan, expect_alerts: set[tuple[str, datetime]]) -> None:
    closed, alerted = expected(plan)
    assert alerted == expect_alerts  # the simulation shows what it should
    rows = spark.read.parquet(str(out / "windows")).collect()
    got = {(r.unit, r.window_start.replace(tzinfo=None)): (r.state_changes, r.heartbeats, r.longest_heartbeat_gap_s)
           for r in rows}
    assert len(rows) == len(got)  # no duplicate window rows
    missing, extra = set(closed) - set(got), set(got) - set(closed)
    assert not missing and not extra, (sorted(missing)[:5], sorted(extra)[:5])
    wrong = {k: (got[k], closed[k]) for k in closed if got[k] != closed[k]}
    assert not wrong, list(wrong.items())[:5]
    received = []
    for message in alerts:
        body = json.loads(message.payload)
        assert message.topic == f"alerts/LCUnit/{body['unit']}" and body["silent_minutes"] == 30
        received.append((body["unit"], datetime.strptime(body["last_seen"], "%Y-%m-%dT%H:%M:%SZ")))
    assert sorted(received) == sorted(alerted)  # each alert exactly once


def publish_plan(broker, plan) -> list:
    assert devices.publish("127.0.0.1", broker.port, plan) == len(plan)
    from relaymq.pipeline.fetch import HttpAccess

    wait_for_entries(HttpAccess(broker.http_url), len(plan))
    return plan


def job_args(broker, out: Path, *extra: str) -> list[str]:
    return ["--log", str(broker.data_dir), "--broker", f"127.0.0.1:{broker.port}", "--out", str(out), "--once", *extra]


def test_seed_sample_split_matches_spec() -> None:
    """flows-http.md item 13: the sample batch splits into the two expected publications."""
    from relaymq.flows.definition import load_flow
    from relaymq.message.mqtt_mapping import from_mqtt, usr_properties

    ports = load_flow(EXAMPLE_FLOW).run_sync(from_mqtt("LCUnit/12345/batch", SEED_BATCH, 1, domain="XMLNS"))
    assert [(t, dict(usr_properties(m))["d_tstamp"]) for t, m, *_ in ports.publications] == [
        ("LCUnit/12345/StateChange", "20040417104439"), ("LCUnit/12345/Heartbeat", "20040417105126")]


def test_simulated_batches_never_hold_events_from_after_they_were_sent() -> None:
    """The example's lateness (15 min) holds for the simulator: every event of batch b lies in
    [START + 15b, START + 15(b+1)), the batch's d_tstamp is the end of that period."""
    for unit, batch, evs in devices.schedule(50, 8, {7}, 3):
        begin = devices.START + timedelta(minutes=15 * batch)
        assert all(begin <= e.time < begin + WINDOW for e in evs), (unit, batch)


README_PLAN = dict(units=50, batches=8, silent={7}, silent_after=3)
README_RULES = [{"name": "telemetry", "topics": ["LCUnit/+/batch"], "partitions": 4}]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_example_at_readme_scale_with_admission_control(spark, archive_broker_factory, tmp_path) -> None:
    """issue 7 example + audit item 1: the README's simulation (50 units, 8 batches, unit 7 silent
    from batch 3, 4 partitions) through the job with --max-records 16 gives exactly the
    independently computed windows and one alert (admission control must not let partitions
    run ahead of each other in time: the watermark would drop events as late)."""
    broker = archive_broker_factory(README_RULES)
    sub = Subscriber(broker.port, "alerts/#")
    plan = publish_plan(broker, devices.schedule(README_PLAN["units"], README_PLAN["batches"],
                                                 README_PLAN["silent"], README_PLAN["silent_after"]))
    out = tmp_path / "out"
    runpy.run_path(JOB, run_name="telemetry_job")["run"](spark, job_args(broker, out, "--max-records", "16"))
    alerts = sub.settle()
    sub.close()
    last_of_7 = max(e.time for u, _b, evs in plan if u == 7 for e in evs)
    check_outputs(spark, out, alerts, plan, {("7", last_of_7)})


CRASH_PLAN = dict(units=6, batches=7, silent={3, 5}, silent_after=2, resume_at=5)
CRASH_RULES = [{"name": "telemetry", "topics": ["LCUnit/+/batch"], "partitions": 2}]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_example_survives_a_kill_between_sink_commit_and_spark_commit(spark, archive_broker_factory, tmp_path) -> None:
    """issue 7 crash test: the job (run with `relaymq pipeline run`) is killed with SIGKILL - the
    driver, its JVM and its Python workers - after the relaymq sink delivered a batch and
    recorded it in its ledger, before Spark recorded the batch; the Parquet query is cut off
    wherever it was. After a restart: no duplicate alert (checked after the alerts stop
    coming, not at the expected count), no missing and no duplicate Parquet row."""
    broker = archive_broker_factory(CRASH_RULES)
    sub = Subscriber(broker.port, "alerts/#")
    plan = publish_plan(broker, devices.schedule(CRASH_PLAN["units"], CRASH_PLAN["batches"], CRASH_PLAN["silent"],
                                                 CRASH_PLAN["silent_after"], resume_at=CRASH_PLAN["resume_at"]))
    out, marker = tmp_path / "out", tmp_path / "crash-marker"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, RELAYMQ_TEST_CRASH_MARKER=str(marker))
    become_subreaper()
    with open(tmp_path / "job.log", "wb") as job_log:  # the child keeps its own descriptor
        job = subprocess.Popen(
            [sys.executable, "-m", "relaymq", "pipeline", "run", CRASH_JOB, "--master", "local[2]",
             "--conf", "spark.sql.shuffle.partitions=2", "--", *job_args(broker, out, "--max-records", "8")],
            env=env, stdout=subprocess.DEVNULL, stderr=job_log, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():
            assert job.poll() is None, (tmp_path / "job.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the sink never delivered a batch"
            time.sleep(0.2)
    finally:
        kill_session(job.pid)
        job.wait()
    crashed_batch = int(marker.read_text())
    ledger = out / "checkpoints" / "alerts" / "relaymq-ledger" / "telemetry-alerts"
    commits = out / "checkpoints" / "alerts" / "commits"
    assert (ledger / f"batch-{crashed_batch}.json").exists()  # the sink committed batch N ...
    assert not (commits / str(crashed_batch)).exists()  # ... and Spark did not record it
    assert len(sub.wait_for(1)) >= 1  # its alerts went out before the kill

    runpy.run_path(JOB, run_name="telemetry_job")["run"](spark, job_args(broker, out, "--max-records", "8"))
    assert (commits / str(crashed_batch)).exists()  # Spark re-ran batch N, the sink skipped it
    alerts = sub.settle()
    sub.close()
    expect = {(str(u), max(e.time for uu, b, evs in plan if uu == u and b < CRASH_PLAN["silent_after"] for e in evs))
              for u in CRASH_PLAN["silent"]}
    check_outputs(spark, out, alerts, plan, expect)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_example_on_a_standalone_cluster_with_spark_submit(spark, archive_broker_factory, tmp_path) -> None:
    """issue 7 runner: the same job file runs under spark-submit on a standalone master and worker
    (loopback, web UIs on free ports: Spark's defaults 8080/8081 are the broker's HTTP and
    channel ports); executors read the log over the broker's HTTP fetch endpoint (Arrow IPC)."""
    from standalone import StandaloneCluster

    broker = archive_broker_factory(CRASH_RULES)
    sub = Subscriber(broker.port, "alerts/#")
    plan = publish_plan(broker, devices.schedule(CRASH_PLAN["units"], CRASH_PLAN["batches"], CRASH_PLAN["silent"],
                                                 CRASH_PLAN["silent_after"], resume_at=CRASH_PLAN["resume_at"]))
    out = tmp_path / "out"
    with StandaloneCluster(tmp_path / "cluster") as cluster:
        done = cluster.submit(JOB, ["--log", broker.http_url, "--broker", f"127.0.0.1:{broker.port}",
                                    "--out", str(out), "--once"])
    assert done.returncode == 0, done.stderr[-3000:]
    alerts = sub.settle()
    sub.close()
    expect = {(str(u), max(e.time for uu, b, evs in plan if uu == u and b < CRASH_PLAN["silent_after"] for e in evs))
              for u in CRASH_PLAN["silent"]}
    check_outputs(spark, out, alerts, plan, expect)
