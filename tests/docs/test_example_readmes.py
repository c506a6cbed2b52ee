"""Every example's README is run by a test, as written (issue 18, "the first hour": a newcomer
followed the README and every example). This module names the test of each example and runs
the ones no other module runs; a new example without a README or without such a test fails
here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from harness import free_port, port_accepts

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: example -> the tests that run its README's commands (module, function).
README_TESTS: dict[str, list[tuple[str, str]]] = {
    "soap": [("tests/flows/test_flow_examples.py", "test_soap_example_runs_from_its_readme")],
    "telemetry-flow": [("tests/flows/test_flow_examples.py", "test_telemetry_example_runs_from_its_readme")],
    "telemetry-analytics": [("tests/pipeline/test_example.py", "test_example_at_readme_scale_with_admission_control"),
                            ("tests/pipeline/test_example.py", "test_example_on_a_standalone_cluster_with_spark_submit"),
                            ("tests/docs/test_example_readmes.py", "test_analytics_readme_says_what_the_run_gives")],
    "qmgr-rules": [("tests/docs/test_example_readmes.py", "test_qmgr_rules_readme_as_written")],
    "systemd": [("tests/docs/test_systemd_example.py", "test_the_unit_start_reload_and_stop"),
                ("tests/docs/test_systemd_example.py", "test_readme_check_step_on_the_example_configuration")],
    "monitoring": [("tests/metrics/test_metrics_endpoint.py",
                    "test_example_dashboard_and_scrape_config_name_real_metrics"),
                   ("tests/docs/test_example_readmes.py", "test_monitoring_readme_curl")],
}


def shell_blocks(readme: Path) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", readme.read_text(), re.S)


def test_every_example_has_a_readme_run_by_a_test() -> None:
    examples = sorted(path.name for path in EXAMPLES.iterdir() if path.is_dir())
    assert examples == sorted(README_TESTS), "an example without a README test (or a test of a gone example)"
    for name in examples:
        assert (EXAMPLES / name / "README.md").is_file(), f"examples/{name} has no README.md"
        for module, function in README_TESTS[name]:
            assert f"def {function}(" in (ROOT / module).read_text(), f"{module} has no {function}"


def test_analytics_readme_says_what_the_run_gives() -> None:
    """The README's alert shows unit 7's real last_seen for the README's simulation (the run
    gave 10:40:56Z where it said 10:44), and says the alert ledger is per --out directory."""
    readme = (EXAMPLES / "telemetry-analytics" / "README.md").read_text()
    found = re.search(r"devices\.py --units (\d+) --batches (\d+) --silent (\d+) --silent-after (\d+)", readme)
    assert found, "the README's devices.py command"
    units, batches, silent, after = map(int, found.groups())
    sys.path.insert(0, str(EXAMPLES / "telemetry-analytics"))
    try:
        import devices
    finally:
        sys.path.pop(0)
    events = [event for unit, _, batch in devices.schedule(units, batches, {silent}, after) if unit == silent
              for event in batch]
    last_seen = max(event.time for event in events).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f'"unit": "{silent}", "silent_minutes": 30, "last_seen": "{last_seen}"' in readme
    assert "<out>/checkpoints/alerts/relaymq-ledger" in readme and "belongs to each `--out` directory" in readme


def test_monitoring_readme_curl(broker_factory) -> None:
    """examples/monitoring/README.md's curl, on a broker's HTTP port."""
    import shutil

    assert shutil.which("curl"), "curl is needed"
    broker = broker_factory()
    (block,) = shell_blocks(EXAMPLES / "monitoring" / "README.md")
    script = block.replace("127.0.0.1:8080", f"127.0.0.1:{broker.http_port}")
    from interop.clients import paho_client, unique

    client = paho_client(broker, "v5", unique("readme"))
    result = subprocess.run(["bash", "-eo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60)
    client.disconnect()
    assert result.returncode == 0, result.stderr
    assert 'relaymq_mqtt_connections{listener="default",protocol_level="5"} 1.0' in result.stdout


def test_qmgr_rules_readme_as_written(tmp_path: Path) -> None:
    """examples/qmgr-rules/README.md: its four blocks (two brokers, then the commands), with
    only the ports moved to free ones and `relaymq` run by this interpreter. The rule module is
    found beside the configuration: no PYTHONPATH beyond the one that finds relaymq."""
    folder = tmp_path / "examples" / "qmgr-rules"
    folder.mkdir(parents=True)
    source = EXAMPLES / "qmgr-rules"
    for name in ("qm1.toml", "qm2.toml", "pending_threshold.py", "cheap_rate.py"):
        (folder / name).write_text((source / name).read_text())
    ports = {port: free_port() for port in (1883, 8080, 8081, 1893, 8093, 8092)}

    def moved(text: str) -> str:
        for old, new in ports.items():
            text = re.sub(rf"\b{old}\b", str(new), text)
        return text.replace("relaymq ", f"{sys.executable} -m relaymq ")

    for name in ("qm1.toml", "qm2.toml"):
        (folder / name).write_text(moved((folder / name).read_text()))
    with (folder / "qm1.toml").open("a") as qm1:  # QM1 uses the default ports: the moved ones here
        qm1.write(f'\n[[listener]]\nname = "default"\nport = {ports[1883]}\n\n[http]\nport = {ports[8080]}\n')
    terminal1, terminal2, terminal3, later = shell_blocks(source / "README.md")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    brokers = [subprocess.Popen(["bash", "-c", moved(block)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=(tmp_path / f"broker{n}.log").open("wb"), start_new_session=True)
               for n, block in enumerate((terminal1, terminal2))]
    try:
        deadline = time.monotonic() + 60
        while not (port_accepts("127.0.0.1", ports[8080]) and port_accepts("127.0.0.1", ports[8093])):
            assert time.monotonic() < deadline and all(b.poll() is None for b in brokers), \
                [(tmp_path / f"broker{n}.log").read_text() for n in range(2)]
            time.sleep(0.1)
        shown = subprocess.run(["bash", "-e", "-c", moved(terminal3)], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
        assert shown.returncode == 0, shown.stderr
        depths = re.findall(r'"currentDepth": (\d+)', shown.stdout)
        assert depths == ["10", "0"], shown.stdout  # QM1 holds ten; none reached QM2
        first_line = moved(later.splitlines()[0])
        deadline = time.monotonic() + 60
        while True:
            check = subprocess.run(["bash", "-c", first_line], cwd=tmp_path, env=env, capture_output=True,
                                   text=True, timeout=60)
            if '"currentDepth": 11' in check.stdout:
                break
            assert time.monotonic() < deadline, check.stdout + check.stderr
            time.sleep(0.2)
        done = subprocess.run(["bash", "-e", "-c", moved(later)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert '"currentDepth": 11' in done.stdout and '"body": "order 1"' in done.stdout, done.stdout
    finally:
        for proc in brokers:
            os.killpg(proc.pid, 2)  # Ctrl-C, as the README stops them
        for proc in brokers:
            proc.wait(30)
