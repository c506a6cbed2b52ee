"""``relaymq acl``: show and change the topic ACLs (pubsub.md item 38; seed 003 l.1288-1332).

Why a file: the seed's administrator edits ACLs in the Topics Hierarchy editor and deploys
them; here the rows of ``[[pubsub.acl]]`` in the configuration are the base, and ``set`` /
``remove`` / ``group`` write the ACL file named by ``[pubsub] acl_file`` (default
``<broker.data_dir>/topic-acl.json``), whose rows override the configuration's. A running
broker re-reads the file within a few seconds (docs/pubsub.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from relaymq.config import ConfigError, load_config
from relaymq.pubsub.settings import load_acl_file
from relaymq.pubsub.topicacl import ALLOW, DENY, INHERIT, PERMISSIONS, AclEntry, TopicAcl, normalise_topic

_EPILOG = """\
examples:
  relaymq acl show                                   # every row, config and file
  relaymq acl show --user alice --topic Sport/Soccer # alice's effective permissions there
  relaymq acl set "" PublicGroup --publish deny --subscribe deny --persistent deny
  relaymq acl set '$SYS/STREAM/StreamX' PStreamX --publish allow
  relaymq acl group PStreamX alice bob
  relaymq acl remove '$SYS/STREAM/StreamX' PStreamX

exit status: 0 success, 1 failure (one line on stderr), 2 usage."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "acl", help="show or change topic ACLs (publish/subscribe/persistent per topic)",
        description="Show or change the topic ACLs of the pub/sub engine.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", "-c", help="the broker's configuration file")
    common.add_argument("--data-dir", help="the broker's data directory (overrides the configuration)")
    common.add_argument("--file", help="the ACL file (default: [pubsub] acl_file or <data_dir>/topic-acl.json)")
    sub = parser.add_subparsers(dest="acl_command", metavar="SUBCOMMAND", required=True)
    show = sub.add_parser("show", parents=[common], help="print the ACL rows, or one user's permissions")
    show.add_argument("--user", help="print this user's effective permissions on --topic")
    show.add_argument("--topic", default="", help="topic for --user (default: the root)")
    set_ = sub.add_parser("set", parents=[common], help="set a principal's row on a topic")
    set_.add_argument("topic", help='the topic node ("" is the root)')
    set_.add_argument("principal", help="a user or group name (PublicGroup: everyone)")
    for perm in PERMISSIONS:
        set_.add_argument(f"--{perm}", choices=(ALLOW, DENY, INHERIT))
    remove = sub.add_parser("remove", parents=[common], help="remove a principal's row from a topic")
    remove.add_argument("topic")
    remove.add_argument("principal")
    group = sub.add_parser("group", parents=[common], help="set a group's members (none: delete the group)")
    group.add_argument("name")
    group.add_argument("members", nargs="*")
    for p in (show, set_, remove, group):
        p.set_defaults(func=run)


def _locate(args: argparse.Namespace) -> tuple[Any, str]:
    """(pubsub settings, ACL file path) from the configuration and the options."""
    config = load_config(args.config, {"data_dir": args.data_dir} if args.data_dir else None)
    settings = config.section("pubsub")
    return settings, args.file or settings.acl_path(config.broker.data_dir)


def _read_file(path: str) -> dict[str, Any]:
    return load_acl_file(path) if os.path.exists(path) else {"groups": {}, "acl": []}


def _write_file(path: str, data: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    try:
        settings, path = _locate(args)
        if args.acl_command == "show":
            acl = TopicAcl.from_data({"groups": settings.groups, "acl": list(settings.acl)}, enabled=True)
            acl.merge(_read_file(path))
            if args.user:
                print(json.dumps({"user": args.user, "topic": args.topic, **acl.explain(args.user, args.topic)}))
            else:
                print(json.dumps({"topic_security": settings.topic_security, "file": path, **acl.to_data()}, indent=2))
            return 0
        data = _read_file(path)
        file_acl = TopicAcl()
        file_acl.merge(data)
        if args.acl_command == "set":
            table = file_acl.entries.get(normalise_topic(args.topic), {})
            old = table.get(args.principal)
            values = {p: getattr(args, p) or (getattr(old, p) if old else INHERIT) for p in PERMISSIONS}
            file_acl.set(AclEntry(args.topic, args.principal, **values))
        elif args.acl_command == "remove":
            if not file_acl.remove(args.topic, args.principal):
                print(f"relaymq acl remove: error: no row for {args.principal!r} on {args.topic!r} in {path}",
                      file=sys.stderr)
                return 1
        elif args.acl_command == "group":
            if args.members:
                file_acl.groups[args.name] = set(args.members)
            else:
                file_acl.groups.pop(args.name, None)
        _write_file(path, file_acl.to_data())
        return 0
    except (ConfigError, OSError, ValueError, KeyError) as error:
        print(f"relaymq acl {args.acl_command}: error: {error}", file=sys.stderr)
        return 1
