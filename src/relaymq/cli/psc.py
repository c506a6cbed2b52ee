"""``relaymq psc``: list and remove the queue subscriptions of the pub/sub engine (pubsub.md
item 19: subscriptions are removed by DeregSub, expiry, deletion of their queue, "or by an
administrator", seed 1840-1854, 5487-5501).

Why a command: a subscriber that is gone (its application retired, its queue left on another
queue manager) keeps receiving publications until someone removes its subscriptions; the
seed's administrator does that in the workbench. Two ways to reach them, as ``relaymq queue``:

* a running broker (``--url http://127.0.0.1:8080``), through its admin routes
  (relaymq.pubsub.admin): the removal is made durable by the broker and announced with the
  Removed event (cause ``administrator``, item 45);
* a local data directory (``--data-dir``, or the ``--config`` file's), while the broker that
  owns it is stopped: the broker's database ``relaymq.db`` is read and changed (no event is
  published: nobody is connected; the database's lock refuses a running broker's).

Output is JSON, one subscription per line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import urlencode

from relaymq.cli.http_auth import authorization

_EPILOG = """\
examples:
  relaymq psc list --url http://127.0.0.1:8080                 # every queue subscription
  relaymq psc list --url http://127.0.0.1:8080 --queue APP.SUBS
  relaymq psc remove --url http://127.0.0.1:8080 --queue OLD.APP.QUEUE --qmgr QM2
  relaymq psc remove --url http://127.0.0.1:8080 --name results-feed
  relaymq psc list --data-dir ./data                            # the broker stopped
  relaymq psc remove --data-dir ./data --owner bob

The admin routes need the loopback interface (unless [pubsub] admin_remote) and an
administrator: one of [access] administrators (-u USER, password in $RELAYMQ_PASSWORD) or,
when that list is empty, the broker's own, read from $RELAYMQ_ADMIN_CREDENTIALS or
./data/admin.credentials.

exit status: 0 success (remove: something was removed), 1 failure or nothing matched
(one line on stderr), 2 usage."""

#: Options -> the admin routes' query parameters (relaymq.pubsub.admin.CRITERIA).
_CRITERIA = (("topic", "topic"), ("sub_point", "subPoint"), ("filter", "filter"), ("qmgr", "qmgr"),
             ("queue", "queue"), ("correl_id", "correlId"), ("name", "subName"), ("owner", "user"))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "psc", help="list and remove pub/sub queue subscriptions (administrator)",
        description="List or remove the queue subscriptions of the publish/subscribe engine, on a running "
                    "broker (--url) or in a stopped broker's data directory (--data-dir).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_argument_group("where")
    where.add_argument("--url", help="a running broker's HTTP address")
    where.add_argument("--data-dir", help="a stopped broker's data directory (default: --config's, else ./data)")
    where.add_argument("--config", "-c", help="the broker's configuration file (its data directory)")
    where.add_argument("-u", "--username", help="user for the HTTP server's authentication")
    where.add_argument("--timeout", type=float, default=30.0, help="seconds for an HTTP request (default 30)")
    which = common.add_argument_group("which subscriptions (exact registered strings, all must match)")
    which.add_argument("--topic", help="the topic (filter) as registered")
    which.add_argument("--sub-point", help='the subscription point ("" is the default point)')
    which.add_argument("--filter", help="the content filter as registered")
    which.add_argument("--qmgr", help="the subscriber queue manager")
    which.add_argument("--queue", help="the subscriber queue")
    which.add_argument("--correl-id", help="the subscriber CorrelId (hex, CorrelAsId subscriptions)")
    which.add_argument("--name", help="the SubName")
    which.add_argument("--owner", help="the user that registered it")
    sub = parser.add_subparsers(dest="psc_command", metavar="SUBCOMMAND", required=True)
    sub.add_parser("list", parents=[common], help="print matching subscriptions").set_defaults(func=run)
    remove = sub.add_parser("remove", parents=[common], help="remove matching subscriptions")
    remove.add_argument("--all", action="store_true", help="remove every subscription (no criterion needed)")
    remove.set_defaults(func=run)


def _criteria(args: argparse.Namespace) -> dict[str, str]:
    """Query parameters of the given criteria."""
    return {param: getattr(args, option) for option, param in _CRITERIA if getattr(args, option) is not None}


def _fail(command: str, reason: object) -> int:
    print(f"relaymq psc {command}: error: {reason}", file=sys.stderr)
    return 1


def _remote(args: argparse.Namespace, query: dict[str, str]) -> tuple[int, Any]:
    from relaymq.http.client import request
    from relaymq.pubsub.admin import BASE

    if args.psc_command == "remove" and args.all:
        query = {**query, "all": "true"}
    url = args.url.rstrip("/") + BASE + ("?" + urlencode(query) if query else "")
    headers = [("accept", "application/json")]
    headers += authorization(args.url, args.username)
    method = "GET" if args.psc_command == "list" else "DELETE"
    response = asyncio.run(request(method, url, headers=headers, timeout=args.timeout))
    try:
        value = json.loads(response.body.decode("utf-8")) if response.body else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        value = {"error": response.body.decode("utf-8", "replace").strip() or f"HTTP {response.status}"}
    return response.status, value


def _local(args: argparse.Namespace, query: dict[str, str]) -> list[dict[str, Any]]:
    """List or remove in the database of a stopped broker (its lock refuses a running one)."""
    from relaymq.config import load_config
    from relaymq.pubsub.admin import criteria_from_query
    from relaymq.pubsub.engine import PubSubEngine
    from relaymq.pubsub.model import REMOVED_ADMIN
    from relaymq.pubsub.state import PubSubState
    from relaymq.store.engine import Engine
    from relaymq.store.factory import DATABASE_FILE

    data_dir = args.data_dir
    if data_dir is None:
        data_dir = load_config(args.config).broker.data_dir if args.config else "./data"
    path = os.path.join(data_dir, DATABASE_FILE)
    if not os.path.isfile(path):
        if not os.path.isdir(data_dir):
            raise OSError(f"no data directory {data_dir!r}")
        return []  # a broker that never ran here
    engine = Engine(path)
    try:
        state = PubSubState(engine, data_dir)
        pubsub = PubSubEngine("", events=False)
        pubsub.restore(state.load())
        pubsub.take_dirty()
        subs = pubsub.select(**criteria_from_query({k: [v] for k, v in query.items()}))
        described = [s.describe() for s in subs]
        if args.psc_command == "remove" and subs:
            for sub in subs:
                pubsub.remove(sub, REMOVED_ADMIN)
            state.save(pubsub)
    finally:
        engine.close()
    return described


def run(args: argparse.Namespace) -> int:
    from relaymq.config import ConfigError
    from relaymq.pubsub.admin import AdminError
    from relaymq.store.base import StoreError

    command = args.psc_command
    query = _criteria(args)
    if args.url and args.data_dir:
        return _fail(command, "give --url (a running broker) or --data-dir (a stopped one), not both")
    if command == "remove" and not query and not args.all:
        return _fail(command, "say which subscriptions (--topic, --queue, --name, --owner...) or --all")
    try:
        if args.url:
            status, value = _remote(args, query)
            if status >= 300:
                return _fail(command, value.get("error", f"HTTP {status}") if isinstance(value, dict) else f"HTTP {status}")
            found = value.get("subscriptions" if command == "list" else "removed", [])
        else:
            found = _local(args, query)
    except (AdminError, ConfigError, OSError, ValueError, KeyError, StoreError) as err:
        return _fail(command, err)
    for item in found:
        print(json.dumps(item, sort_keys=True))
    if command == "remove":
        if not found:
            return _fail(command, "no subscription matched")
        print(f"removed {len(found)} subscription(s)", file=sys.stderr)
    return 0
