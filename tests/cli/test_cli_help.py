"""``relaymq --help``, ``relaymq COMMAND --help`` and ``--version``, run as real subprocesses.

Requirement (CLI brief): the help must be genuinely helpful (a description and examples for
every command), ``relaymq --version`` works, and ``python -m relaymq`` is the same program as
the ``relaymq`` console script.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import PROCESS_TIMEOUT, RunCli
from relaymq import __version__, native

OWN_COMMANDS = ("serve", "pub", "sub", "passwd")


def test_top_level_help_lists_every_command_with_examples(run_cli: RunCli) -> None:
    """Brief: `relaymq --help` names every sub-command and shows examples."""
    result = run_cli("--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    for command in OWN_COMMANDS:
        assert f"\n    {command} " in text, command
    assert "examples:" in text
    assert "relaymq sub -t 'sensors/#' -v" in text


@pytest.mark.parametrize("command", OWN_COMMANDS)
def test_each_command_help_has_description_and_examples(command: str, run_cli: RunCli) -> None:
    """Brief: every `relaymq CMD --help` has a description and examples in the epilog."""
    result = run_cli(command, "--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith(f"usage: relaymq {command} ")
    assert "examples:" in text
    assert f"  relaymq {command} " in text.split("examples:", 1)[1]


def test_pub_help_documents_mosquitto_flags(run_cli: RunCli) -> None:
    """Brief: pub has mosquitto_pub's flags, -h being the host (help is --help)."""
    text = run_cli("pub", "--help").stdout.decode()
    for flag in ("-h HOST", "-p PORT", "-t TOPIC", "-m MESSAGE", "-f FILE", "-n, --null-message", "-l, --stdin-line", "-q {0,1,2}", "-r, --retain",
                 "-i ID", "-u USER", "-P PASSWORD", "-k SECONDS", "-V {31,311,5}", "-d, --debug",
                 "--will-topic", "--will-payload", "--will-qos", "--will-retain",
                 "--cafile", "--cert", "--key", "--insecure", "--ws", "-x SECONDS"):
        assert flag in text, flag


def test_version(run_cli: RunCli) -> None:
    """Brief: `relaymq --version` prints the package version, and (issue 16, the compiled
    codec) whether the compiled modules run: the same answer this process got."""
    result = run_cli("--version")
    assert (result.returncode, result.stdout.decode()) == (0, f"relaymq {__version__} ({native.status.describe()})\n")


def test_no_command_prints_help_and_fails(run_cli: RunCli) -> None:
    """Brief: exit status 2 for a command-line mistake; no command is one."""
    result = run_cli()
    assert result.returncode == 2
    assert "usage: relaymq" in result.stderr


def test_console_script_is_the_same_program() -> None:
    """pyproject: the console script `relaymq = relaymq.cli.main:main` runs the same parser."""
    script = shutil.which("relaymq", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the relaymq console script is not installed next to this interpreter")
    done = subprocess.run([script, "--version"], capture_output=True, timeout=PROCESS_TIMEOUT,
                          env=dict(os.environ))
    assert (done.returncode, done.stdout.decode()) == (0, f"relaymq {__version__} ({native.status.describe()})\n")


def test_running_a_command_imports_only_that_command() -> None:
    """Issue 16 row 6 (a smaller base process: import what is not used only when it is):
    `relaymq serve` parses its arguments without importing the other commands' modules (the
    MQTT client library of pub/sub, the load generator of bench), while `relaymq --help`
    still lists them all."""
    code = ("import sys\n"
            "from relaymq.cli.main import build_parser, chosen_command\n"
            "build_parser(chosen_command(['serve', '--check'])).parse_args(['serve', '--check'])\n"
            "print(sorted(m for m in ('relaymq.cli.pub', 'relaymq.bench', 'paho.mqtt.client') if m in sys.modules))\n"
            "build_parser(chosen_command(['--help']))\n"
            "print('relaymq.cli.pub' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=PROCESS_TIMEOUT, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]
