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
