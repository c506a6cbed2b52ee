"""``relaymq pipeline``: run a Spark job over the message log (docs/pipeline.md).

Why a command when spark-submit exists: a user with only ``pip install relaymq[spark]`` has no
Spark installation to submit to; ``relaymq pipeline run job.py`` starts a local Spark
(``local[*]``) or connects to a standalone master (``--master spark://host:7077``) with the
``relaymq`` format registered. The same job file runs unchanged under ``spark-submit``.
"""

from __future__ import annotations

import argparse
import sys

_EPILOG = """\
examples:
  relaymq pipeline run job.py                                  # local[*]
  relaymq pipeline run job.py --master spark://10.0.0.5:7077 --conf spark.executor.memory=2g
  relaymq pipeline run telemetry_job.py --master local[2] -- --log ./data --broker 127.0.0.1:1883 --out ./out

--master and --conf may come before or after FILE; the job's own arguments follow "--".

exit status: 0 success, 1 the job failed (one line on stderr), 2 usage."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pipeline run``."""
    parser = subparsers.add_parser(
        "pipeline", help="run Spark jobs over the message log",
        description="Run a PySpark job (a file with run(spark, args)) with the relaymq data source.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="pipeline_command", metavar="SUBCOMMAND", required=True)
    run_parser = sub.add_parser("run", help="run a job file locally or on a Spark cluster")
    run_parser.add_argument("file", metavar="FILE", help="the job: a Python file defining run(spark, args)")
    run_parser.add_argument("--master", default="local[*]", help="local[*] (default), local[N] or spark://host:port")
    run_parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                            help="a Spark setting (repeatable)")
    run_parser.add_argument("job_args", nargs=argparse.REMAINDER, metavar="...", help="the job's own arguments (everything after FILE)")
    run_parser.set_defaults(func=run)


def split_runner_options(args: argparse.Namespace) -> list[str]:
    """``run FILE --master M -- job args``: runner options may follow FILE (as the issue writes
    it); they end at ``--`` or at the first token that is not ``--master``/``--conf``. The rest
    belongs to the job. Returns the job's arguments; updates ``args.master``/``args.conf``."""
    rest = list(args.job_args)
    while rest:
        head = rest[0]
        if head == "--":
            return rest[1:]
        name, eq, value = head.partition("=")
        if name not in ("--master", "--conf"):
            break
        if not eq:
            if len(rest) < 2:
                raise ValueError(f"{name} needs a value")
            value, rest = rest[1], rest[2:]
        else:
            rest = rest[1:]
        if name == "--master":
            args.master = value
        else:
            args.conf.append(value)
    return rest


def run(args: argparse.Namespace) -> int:
    try:
        job_args = split_runner_options(args)
    except ValueError as error:
        print(f"relaymq pipeline run: error: {error}", file=sys.stderr)
        return 2
    conf: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"relaymq pipeline run: error: --conf expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        conf[key] = value
    try:
        from relaymq.pipeline.runner import JobError, run_job
    except ImportError as error:
        print(f"relaymq pipeline run: error: Spark is not installed ({error}); pip install 'relaymq[spark]'",
              file=sys.stderr)
        return 1
    try:
        return run_job(args.file, args.master, job_args, conf)
    except JobError as error:
        print(f"relaymq pipeline run: error: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - one line, not a Py4J trace, for the operator
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"relaymq pipeline run: error: {type(error).__name__}: {first}", file=sys.stderr)
        return 1
