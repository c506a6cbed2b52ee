"""``relaymq serve`` configuration handling, as a real subprocess.

Requirement (CLI brief, `serve`): load the config; a ConfigError prints its one line to stderr
and exits 2; --port/--data-dir/--store/--log-level override the file. `--check` validates
without starting the server, so these tests do not need relaymq's server.
"""

from __future__ import annotations

from pathlib import Path

from cli_helpers import RunCli

EXAMPLE = Path(__file__).resolve().parents[2] / "relaymq.example.toml"


def test_bad_config_is_one_line_and_status_2(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: a ConfigError stops start-up with ONE line naming the key, exit status 2."""
    config = tmp_path / "relaymq.toml"
    config.write_text('[limits]\nmax_inflight = "ten"\n')
    result = run_cli("serve", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr == 'config error: limits.max_inflight: expected an integer in 1..65535, got "ten"\n'


def test_command_line_overrides_are_validated_too(run_cli: RunCli) -> None:
    """Brief: overrides come from the command line; an out-of-range port is rejected by the
    same rule as in the file, naming the key it overrides."""
    result = run_cli("serve", "--port", "70000", "--check")
    assert result.returncode == 2
    assert result.stderr == "config error: listener[0].port: expected an integer in 0..65535, got 70000\n"


def test_check_accepts_the_example_with_overrides(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: the example file loads; --port replaces the first listener's port."""
    result = run_cli("serve", "--config", str(EXAMPLE), "--port", "1884", "--store", "memory", "--check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == f"config ok: {EXAMPLE} (default=mqtt://localhost:1884)\n"


def test_port_in_use_is_one_line_and_status_2(run_cli: RunCli, tmp_path: Path) -> None:
    """Issue 2 ("an unusable port stops start-up with one line naming the problem"): a port
    already taken gives exactly one line naming the listener's key, its address and the
    reason, exit status 2 as for any configuration error, and nothing was started: no store
    file was created."""
    import socket

    from harness import free_port

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    config = tmp_path / "relaymq.toml"
    config.write_text(f'[[listener]]\nhost = "127.0.0.1"\n[http]\nhost = "127.0.0.1"\nport = {free_port()}\n'
                      f'[qmgr]\nchannel_host = "127.0.0.1"\nchannel_port = {free_port()}\n')
    try:
        result = run_cli("serve", "--config", str(config), "--port", str(port), "--data-dir", str(tmp_path / "data"))
    finally:
        taken.close()
    assert result.returncode == 2
    assert result.stderr == (f"config error: listener[0].port: cannot listen on 127.0.0.1:{port} "
                             f"(listener 'default'): address already in use\n")
    assert not (tmp_path / "data" / "relaymq.db").exists()


def test_busy_http_and_channel_ports_are_found_before_anything_starts(run_cli: RunCli, tmp_path: Path) -> None:
    """Issue 18 "the first hour": a busy HTTP or channel port is, like a busy MQTT port, one
    line per port and exit status 2 before the store opens - every busy port at once, not
    one per attempt."""
    import socket

    from harness import free_port

    taken = [socket.socket() for _ in range(3)]
    for sock in taken:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
    mqtt, http, channel = (sock.getsockname()[1] for sock in taken)
    config = tmp_path / "relaymq.toml"
    config.write_text(f'[[listener]]\nhost = "127.0.0.1"\n[http]\nhost = "127.0.0.1"\nport = {http}\n'
                      f'[qmgr]\nchannel_host = "127.0.0.1"\nchannel_port = {channel}\n')
    try:
        both = run_cli("serve", "--config", str(config), "--port", str(mqtt), "--data-dir", str(tmp_path / "data"))
        http_only = run_cli("serve", "--config", str(config), "--port", str(free_port()),
                            "--channel-port", str(free_port()), "--data-dir", str(tmp_path / "data"))
    finally:
        for sock in taken:
            sock.close()
    assert both.returncode == 2
    assert both.stderr == (f"config error: listener[0].port: cannot listen on 127.0.0.1:{mqtt} (listener 'default'):"
                           f" address already in use\n"
                           f"config error: http.port: cannot listen on 127.0.0.1:{http} (HTTP server):"
                           f" address already in use\n"
                           f"config error: qmgr.channel_port: cannot listen on 127.0.0.1:{channel} (channel listener):"
                           f" address already in use\n")
    assert http_only.returncode == 2
    assert http_only.stderr == (f"config error: http.port: cannot listen on 127.0.0.1:{http} (HTTP server):"
                                f" address already in use\n")
    assert not (tmp_path / "data" / "relaymq.db").exists()


def test_check_imports_the_rules(run_cli: RunCli, tmp_path: Path) -> None:
    """Issue 18 "the first hour": ``serve --check`` said ``config ok`` for a ``[qmgr] rule``
    whose module cannot be imported; now it names the key (a queue's rule too), exit 2, and
    an importable rule passes."""
    modules = tmp_path / "rules"
    modules.mkdir()
    (modules / "good_rules.py").write_text(
        "from relaymq.qmgr.rules import QueueManagerRule, QueueRule\n"
        "class Quiet(QueueManagerRule):\n    pass\n"
        "class Gate(QueueRule):\n    pass\n")
    bad = tmp_path / "bad.toml"
    bad.write_text('[qmgr]\nrule = "no_such_rules:Quiet"\n[[qmgr.queue]]\nname = "A"\n[[qmgr.queue]]\n'
                   'name = "B"\nrule = "good_rules:Quiet"\n')
    result = run_cli("serve", "--config", str(bad), "--check")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "config error: qmgr.rule: cannot load rule 'no_such_rules:Quiet': No module named 'no_such_rules'"
        "",
        "config error: qmgr.queue[1].rule: cannot load rule 'good_rules:Quiet': No module named 'good_rules'"
        ""]
    import os
    import subprocess

    from cli_helpers import PROCESS_TIMEOUT, relaymq_command

    def check_with_rules_on_path(config: Path) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")]))
        return subprocess.run(relaymq_command("serve", "--config", str(config), "--check"), capture_output=True,
                              text=True, timeout=PROCESS_TIMEOUT, env={**os.environ, "PYTHONPATH": path})

    good = tmp_path / "good.toml"
    good.write_text('[qmgr]\nrule = "good_rules:Quiet"\n[[qmgr.queue]]\nname = "B"\nrule = "good_rules:Gate"\n')
    result = check_with_rules_on_path(good)
    assert result.returncode == 0, result.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[qmgr]\nrule = "good_rules:Gate"\n')
    result = check_with_rules_on_path(wrong)
    assert result.returncode == 2
    assert result.stderr == ("config error: qmgr.rule: rule 'good_rules:Gate' is not a QueueManagerRule"
                             "\n")
    beside = modules / "relaymq.toml"  # a rule module beside the configuration needs no PYTHONPATH
    beside.write_text('[qmgr]\nrule = "good_rules:Quiet"\n')
    result = run_cli("serve", "--config", str(beside), "--check")
    assert result.returncode == 0, result.stderr
