"""``relaymq listener``: create, start, stop, delete and show the channel listeners of a
running broker's queue manager (everyplace.md item 29; docs/channels.md "Listeners").

Why a command of its own: the seed creates and starts listeners with administration messages
while the queue manager runs (seed 004 l.1607-1640); an operator does the same here without
writing a program. It talks to the broker's admin API (docs/rest.md "Listeners") and needs an
administrator, as ``relaymq queue define --url`` does. Output: one JSON object per listener.
"""

from __future__ import annotations

import argparse
import json
import sys

from relaymq.cli.queue import RemoteError, _emit, _quote, _remote_call

_EPILOG = """\
examples:
  relaymq listener create EDGE --port 1881 --url http://127.0.0.1:8080   # created stopped
  relaymq listener start EDGE --url http://127.0.0.1:8080               # peers can connect
  relaymq listener stop EDGE --url http://127.0.0.1:8080                # the port refuses
  relaymq listener show --url http://127.0.0.1:8080

A started listener is started again when the broker restarts; a stopped one stays stopped.
exit status: 0 success, 1 an error (one line on stderr), 2 usage."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "listener", help="create, start, stop and show channel listeners of a running broker",
        description="Channel listeners of a running broker's queue manager, through its admin API.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", required=True, help="the broker's HTTP address, e.g. http://127.0.0.1:8080")
    common.add_argument("--qmgr", default="QM1", help="queue manager name (default QM1)")
    common.add_argument("--user", help="HTTP basic authentication user (password: $RELAYMQ_PASSWORD)")
    common.add_argument("--timeout", type=float, default=30.0, help="seconds for a request (default 30)")
    sub = parser.add_subparsers(dest="listener_command", metavar="SUBCOMMAND", required=True)
    create = sub.add_parser("create", parents=[common], help="create a listener (it does not start)")
    create.add_argument("name")
    create.add_argument("--port", type=int, required=True)
    create.add_argument("--adapter", default="tcp", help="tcp (default), tls, http or module:Class")
    create.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    for action, text in (("start", "start listening"), ("stop", "stop listening"), ("delete", "stop and forget")):
        sub.add_parser(action, parents=[common], help=text).add_argument("name")
    show = sub.add_parser("show", parents=[common], help="the listeners and their states")
    show.add_argument("name", nargs="?")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    command = args.listener_command
    base = f"/admin/qmgr/{_quote(args.qmgr)}/listener"
    json_body = [("content-type", "application/json;charset=utf-8")]
    try:
        if command == "create":
            body = {"name": args.name, "port": args.port, "adapter": args.adapter, "host": args.host}
            response = _remote_call(args, "POST", base, headers=json_body, body=json.dumps(body).encode())
        elif command in ("start", "stop"):
            response = _remote_call(args, "POST", f"{base}/{_quote(args.name)}/{command}", headers=json_body)
        elif command == "delete":
            _remote_call(args, "DELETE", f"{base}/{_quote(args.name)}")
            return 0
        else:
            response = _remote_call(args, "GET", base + (f"/{_quote(args.name)}" if args.name else ""))
    except (RemoteError, OSError, ValueError) as exc:
        print(f"relaymq listener {command}: error: {exc}", file=sys.stderr)
        return 1
    for listener in json.loads(response.body)["listener"]:
        _emit(listener)
    return 0
