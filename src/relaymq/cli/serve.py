"""``relaymq serve``: load and validate the configuration, then run the broker.

Why the server is imported inside ``run``: ``relaymq passwd`` or ``relaymq pub`` must work on
a machine (or in a checkout) where the server's dependencies are missing or broken, and
``serve --check`` must be able to validate a configuration without starting anything.
"""

from __future__ import annotations

import argparse
import gc
import sys

from relaymq.config import Config, ConfigError, load_config

_DESCRIPTION = """\
Run the relaymq broker. Without --config it uses the embedded defaults: one MQTT
listener on 0.0.0.0:1883, the SQLite store under ./data, anonymous clients allowed.

The configuration file is TOML (see relaymq.example.toml and docs/configuration.md). It is
checked completely before anything starts: an unknown key, a wrong type or an out-of-range
value stops start-up with one line naming the key, and exit status 2."""

_EPILOG = """\
examples:
  relaymq serve
  relaymq serve --config /etc/relaymq/relaymq.toml
  relaymq serve --port 1884 --store memory       # a throw-away broker for tests
  relaymq serve --config relaymq.toml --check    # validate the file and exit

options given here override the file: --port replaces the port of the first [[listener]]
(or creates the default listener on that port; 0 picks a free port)."""

def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``serve`` sub-command."""
    parser = subparsers.add_parser(
        "serve",
        help="run the broker",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", "-c", metavar="FILE", help="TOML configuration file (default: none, built-in defaults)")
    parser.add_argument("--port", "-p", type=int, metavar="N", help="port of the first listener (0 = any free port)")
    parser.add_argument("--data-dir", metavar="DIR", help="directory for the database (default ./data)")
    parser.add_argument("--store", choices=("sqlite", "memory"), help="message store (default sqlite)")
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), help="logging threshold (default info)"
    )
    parser.add_argument("--qmgr", metavar="NAME", help="name of the queue manager (default QM1)")
    parser.add_argument("--http-port", type=int, metavar="N",
                        help="port of the HTTP server: REST interface and HTTP flows (default 8080)")
    parser.add_argument("--channel-port", type=int, metavar="N",
                        help="port of the queue manager's channel listener (default 8081)")
    parser.add_argument("--check", action="store_true", help="only validate the configuration, then exit")
    parser.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> Config:
    """The configuration file plus the command-line overrides (raises ConfigError)."""
    overrides = {"port": args.port, "data_dir": args.data_dir, "store": args.store, "log_level": args.log_level,
                 "qmgr": args.qmgr, "http_port": args.http_port, "channel_port": args.channel_port}
    return load_config(args.config, {key: value for key, value in overrides.items() if value is not None})


def run(args: argparse.Namespace) -> int:
    """Validate the configuration and hand over to the server (which sets up logging)."""
    gc.disable()  # until started: relaymq.server.app.settle_heap collects once, then freezes
    try:
        config = config_from_args(args)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    from relaymq.network.config_check import network_problems
    from relaymq.qmgr.rule_check import rule_problems
    from relaymq.server.preflight import rules_beside_config

    rules_beside_config(config)  # examples/qmgr-rules: no PYTHONPATH needed (issue 18)
    problems = rule_problems(config)  # a rule module that cannot be imported (issue 18)
    problems += network_problems(config)  # an assured link without its channel (issue 17)
    if problems:
        for problem in problems:
            print(f"config error: {problem}", file=sys.stderr)
        return 2
    if args.check:
        listeners = ", ".join(f"{item.name}={item.protocol}://{item.host}:{item.port}" for item in config.listeners)
        print(f"config ok: {config.source or 'built-in defaults'} ({listeners})")
        return 0
    from relaymq.server.app import run as run_server

    return int(run_server(config))
