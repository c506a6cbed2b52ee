"""``relaymq pipeline run`` without starting Spark: argument handling and failures (issue 7
"Runner: relaymq pipeline run FILE [--master local[*]|spark://host:port], local[*] by default";
lead brief: exit 1 with one line on stderr, 2 for usage)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from relaymq.cli.main import build_parser, main
from relaymq.cli.pipeline import split_runner_options


@pytest.mark.parametrize(("argv", "master", "conf", "job"), [
    (["J"], "local[*]", [], []),
    (["J", "--master", "spark://h:7077", "--", "--log", "x"], "spark://h:7077", [], ["--log", "x"]),
    (["--master", "local[2]", "J", "--out", "o"], "local[2]", [], ["--out", "o"]),
    (["J", "--conf=a=b", "--conf", "c=d", "--", "--master", "job-own"], "local[*]", ["a=b", "c=d"],
     ["--master", "job-own"]),
])
def test_runner_options_before_or_after_file(argv, master, conf, job) -> None:
    """issue 7 runner syntax: --master may follow FILE; the job's own arguments follow --."""
    args = build_parser().parse_args(["pipeline", "run", *argv])
    assert split_runner_options(args) == job
    assert (args.master, args.conf) == (master, conf)


def test_missing_job_and_bad_conf(tmp_path, capsys) -> None:
    """lead brief: one line on stderr, exit 1 (failure) or 2 (usage)."""
    assert main(["pipeline", "run", str(tmp_path / "nope.py")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such job file" in err[0]
    assert main(["pipeline", "run", "x.py", "--conf", "novalue"]) == 2
    job = tmp_path / "job.py"
    job.write_text("x = 1\n")
    assert main(["pipeline", "run", str(job)]) == 1
    assert "has no run(spark, args) function" in capsys.readouterr().err


def test_help_lists_the_command() -> None:
    """issue 7: the command is offered by `relaymq --help` (cli.main COMMAND_MODULES)."""
    out = subprocess.run([sys.executable, "-m", "relaymq", "pipeline", "run", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--master" in out.stdout and "spark://" in out.stdout


@pytest.mark.parametrize(("java", "message"), [
    (None, "Spark needs Java 17 or newer and none was found"),
    ('openjdk version "1.8.0_292"', "the java found is version 8"),
    ('openjdk version "11.0.2" 2019-01-15', "the java found is version 11"),
])
def test_missing_or_old_java_is_one_clear_line(tmp_path, monkeypatch, capsys, java, message) -> None:
    """audit item 10: without Java 17+ `relaymq pipeline run` says so in one line (exit 1) instead
    of PySpark's "Java gateway process exited"."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    if java is not None:
        fake = home / "bin" / "java"
        fake.write_text(f"#!/bin/sh\necho '{java}' >&2\n")
        fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))
    job = tmp_path / "job.py"
    job.write_text("def run(spark, args):\n    return 0\n")
    assert main(["pipeline", "run", str(job)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
