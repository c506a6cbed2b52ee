"""``relaymq queue``: define, delete, show, put to, get from and browse queues.

Why: an operator needs to create a queue, look at its depth, and move a test message in and
out without writing Python. Two ways to reach the queues:

* a local data directory (``--data-dir``, the queue manager named by ``--qmgr``), while the
  broker that owns that directory is stopped (a running broker keeps its queues in memory and
  would not see the changes);
* a running broker (``--url http://host:8080``), through its REST interface (IBM MQ's
  messaging REST API v3 shape for put, get and browse; its admin shape for show, define and
  delete, which need an administrator calling from the broker's machine).

Output is JSON, one object per line, so scripts can read it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relaymq.cli.http_auth import authorization
from relaymq.message.message import Message
from relaymq.qmgr.admin import describe_definition
from relaymq.qmgr.definitions import KINDS
from relaymq.qmgr.errors import QueueError, StoreInUse
from relaymq.qmgr.manager import QueueManager

_EPILOG = """\
examples:
  relaymq queue define ORDERS --max-depth 10000 --data-dir ./data
  relaymq queue define TO.QM2 --type remote --queue-manager QM2 --mode async
  relaymq queue put ORDERS --message 'hello' --priority 7
  relaymq queue get ORDERS --wait 5
  relaymq queue browse ORDERS --selector "JMSPriority > 4"
  relaymq queue show            # every queue with its depth
  relaymq queue get ORDERS --url http://localhost:8080 --user app   # a running broker (REST);
                                # the password comes from RELAYMQ_PASSWORD
  relaymq queue define ORDERS --url http://localhost:8080 --user admin --max-depth 10000

exit status: 0 success, 1 a queue manager error (one line on stderr, with the reason code),
2 usage. `get` on an empty queue prints nothing and exits 1 with MQRC_NO_MSG_AVAILABLE."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``queue`` with define, delete, show, put, get and browse."""
    parser = subparsers.add_parser(
        "queue", help="define, show, put to, get from and browse queues",
        description="Queue manager operations on a local data directory (--data-dir) or a running broker (--url).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default="./data", help="the broker's data directory (default ./data)")
    common.add_argument("--qmgr", default="QM1", help="queue manager name (default QM1)")
    common.add_argument("--url", help="a running broker's HTTP address (REST), instead of --data-dir")
    common.add_argument("--user", help="HTTP basic authentication user (password: $RELAYMQ_PASSWORD)")
    common.add_argument("--timeout", type=float, default=30.0, help="seconds for a REST request (default 30)")
    sub = parser.add_subparsers(dest="queue_command", metavar="SUBCOMMAND", required=True)

    define = sub.add_parser("define", parents=[common], help="define a queue")
    define.add_argument("name")
    define.add_argument("--type", default="local", choices=KINDS, dest="kind")
    define.add_argument("--max-depth", type=int)
    define.add_argument("--max-message-size", type=int)
    define.add_argument("--expiry", type=int, help="milliseconds a message may stay (0: never expires)")
    define.add_argument("--priority", type=int, dest="default_priority", help="default priority 0-9")
    define.add_argument("--alias", action="append", dest="aliases", help="an alias name (repeatable)")
    define.add_argument("--mode", choices=("sync", "async"), help="remote queues: sync or async")
    define.add_argument("--queue-manager", help="remote/home-server: the queue manager owning the real queue")
    define.add_argument("--target", action="append", dest="target_queue_managers",
                        help="store-and-forward: a target queue manager (repeatable)")
    define.add_argument("--no-push", dest="push", action="store_const", const=False,
                        help="store-and-forward: hold messages for pull instead of pushing")
    define.add_argument("--poll-interval", type=int, help="home-server: ms between pulls")
    define.add_argument("--description")
    define.add_argument("--rule", help="'module:Class' of a queue rule")
    define.add_argument("--cryptor", help="a key name of [qmgr] key_file: messages kept and sent AES-GCM encrypted")
    define.add_argument("--compressor", choices=("zlib",), help="messages kept and sent compressed")
    define.add_argument("--authenticator", choices=("channel",),
                        help="over a channel, only from peers that authenticated")

    delete = sub.add_parser("delete", parents=[common], help="delete a queue definition")
    delete.add_argument("name")
    delete.add_argument("--on", dest="owner", help="queue manager owning a remote definition")
    delete.add_argument("--purge", action="store_true", help="delete its messages too")

    show = sub.add_parser("show", parents=[common], help="show queue definitions and depths")
    show.add_argument("name", nargs="?")
    show.add_argument("--on", dest="owner", help="queue manager owning a remote definition")

    put = sub.add_parser("put", parents=[common], help="put a message")
    put.add_argument("name")
    put.add_argument("--to-qmgr", help="destination queue manager (default: this one)")
    source = put.add_mutually_exclusive_group()
    source.add_argument("--message", "-m", help="the body text (UTF-8)")
    source.add_argument("--file", "-f", help="the body bytes from a file ('-' stdin)")
    put.add_argument("--priority", type=int, default=-1)
    put.add_argument("--correl-id", help="CorrelId as hex (up to 24 bytes)")
    put.add_argument("--format", default="MQSTR", help="MQMD.Format (default MQSTR)")

    for name, helptext in (("get", "get (remove) the next message"), ("browse", "show messages without removing")):
        p = sub.add_parser(name, parents=[common], help=helptext)
        p.add_argument("name")
        p.add_argument("--msg-id", help="MsgId as hex")
        p.add_argument("--correl-id", help="CorrelId as hex")
        p.add_argument("--selector", help="a JMS selector")
        if name == "get":
            p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a message")
        else:
            p.add_argument("--limit", type=int)
    for p in (define, delete, show, put, *sub.choices.values()):
        p.set_defaults(func=run)


def _hex(value: str | None) -> bytes | None:
    return bytes.fromhex(value) if value else None


def _message_json(uid: str, message: Message) -> dict[str, Any]:
    md = message.mq.md
    out: dict[str, Any] = {"uid": uid, "msg_id": md.MsgId.hex(), "correl_id": md.CorrelId.hex(),
                           "priority": md.Priority, "format": md.Format.strip()}
    try:
        out["body"] = message.mq.body.decode("utf-8")
    except UnicodeDecodeError:
        out["body_base64"] = base64.b64encode(message.mq.body).decode("ascii")
    return out


def _emit(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")


def _execute(qm: QueueManager, args: argparse.Namespace) -> int:
    command = args.queue_command
    if command == "define":
        props = {k: getattr(args, k) for k in ("max_depth", "max_message_size", "expiry", "default_priority",
                                               "aliases", "mode", "queue_manager", "target_queue_managers",
                                               "push", "poll_interval", "description", "rule", "cryptor",
                                               "compressor", "authenticator")
                 if getattr(args, k) is not None}
        _emit(describe_definition(qm, qm.define_queue(args.name, args.kind, **props)))
    elif command == "delete":
        qm.delete_queue(args.name, qmgr=args.owner, purge=args.purge)
    elif command == "show":
        defs = [qm.queue(args.name, qmgr=args.owner)] if args.name else qm.definitions()
        for d in sorted(defs, key=lambda d: (d.owner, d.name)):
            _emit(describe_definition(qm, d))
    elif command == "put":
        message = Message()
        md = message.mq.md
        md.Format, md.Priority = args.format, args.priority
        if args.correl_id:
            md.CorrelId = bytes.fromhex(args.correl_id).ljust(24, b"\0")[:24]
        if args.file:
            message.mq.body = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
        else:
            message.mq.body = (args.message or "").encode("utf-8")
        _emit({"msg_id": qm.put(args.name, message, qmgr=args.to_qmgr).hex()})
    elif command == "get":
        env = qm.get_envelope(args.name, wait=args.wait, msg_id=_hex(args.msg_id), correl_id=_hex(args.correl_id),
                              selector=args.selector)
        if env is None:
            print(f"relaymq queue get: no message available on {args.name} (reason 2033 MQRC_NO_MSG_AVAILABLE)",
                  file=sys.stderr)
            return 1
        _emit(_message_json(env.uid, env.message))
    else:
        for env in qm.browse_envelopes(args.name, msg_id=_hex(args.msg_id), correl_id=_hex(args.correl_id),
                                       selector=args.selector, limit=args.limit):
            _emit(_message_json(env.uid, env.message))
    return 0


class RemoteError(Exception):
    """A REST request failed; ``str()`` is the one line to show."""


def _remote_headers(args: argparse.Namespace, admin: bool) -> list[tuple[str, str]]:
    headers = [("ibm-mq-rest-csrf-token", "relaymq")]
    headers += authorization(args.url, args.user, admin=admin)
    return headers


def _remote_call(args: argparse.Namespace, method: str, path: str, query: dict[str, str] | None = None,
                 headers: list[tuple[str, str]] | None = None, body: bytes = b"") -> Any:
    from relaymq.http.client import HttpClientError, request

    url = args.url.rstrip("/") + "/ibmmq/rest/v3" + path + ("?" + urllib.parse.urlencode(query) if query else "")
    try:
        response = asyncio.run(request(method, url, headers=_remote_headers(args, path.startswith("/admin/")) + (headers or []), body=body,
                                       timeout=args.timeout))
    except HttpClientError as exc:
        raise RemoteError(str(exc)) from None
    if response.status >= 400:
        try:
            item = json.loads(response.body)["error"][0]
            reason = f" (reason {item['reasonCode']})" if "reasonCode" in item else ""
            raise RemoteError(f"HTTP {response.status}: {item['message']}{reason}")
        except (ValueError, KeyError, IndexError, TypeError):
            raise RemoteError(f"HTTP {response.status}: {response.body[:200]!r}") from None
    return response


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _remote_message(response: Any) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in response.headers}
    out: dict[str, Any] = {"msg_id": headers.get("ibm-mq-md-messageid", "").removeprefix("ID:"),
                           "correl_id": headers.get("ibm-mq-md-correlationid", "").removeprefix("ID:"),
                           "priority": int(headers.get("ibm-mq-md-priority", "-1"))}
    if "ibm-mq-usr" in headers:
        out["usr"] = headers["ibm-mq-usr"]
    if headers.get("content-type", "").startswith("text/"):
        out["body"] = response.body.decode("utf-8", "replace")
    else:
        out["body_base64"] = base64.b64encode(response.body).decode("ascii")
    return out


def _define_body(args: argparse.Namespace) -> dict[str, Any]:
    """The admin POST body (IBM's shape where it has the property, ``relaymq`` otherwise)."""
    body: dict[str, Any] = {"name": args.name, "type": args.kind}
    if args.description is not None:
        body["general"] = {"description": args.description}
    storage = {k: v for k, v in (("maximumDepth", args.max_depth), ("maximumMessageLength", args.max_message_size))
               if v is not None}
    if storage:
        body["storage"] = storage
    if args.queue_manager is not None:
        body["remote"] = {"qmgrName": args.queue_manager}
    extra = {k: getattr(args, k) for k in ("expiry", "default_priority", "aliases", "mode", "target_queue_managers",
                                           "push", "poll_interval", "rule", "cryptor", "compressor", "authenticator")
             if getattr(args, k) is not None}
    if extra:
        body["relaymq"] = extra
    return body


def _remote_define(args: argparse.Namespace, qmgr: str) -> int:
    response = _remote_call(args, "POST", f"/admin/qmgr/{qmgr}/queue", {"noReplace": ""},
                            headers=[("content-type", "application/json;charset=utf-8")],
                            body=json.dumps(_define_body(args)).encode("utf-8"))
    for queue in json.loads(response.body)["queue"]:
        _emit(queue)
    return 0


def _remote_delete(args: argparse.Namespace, qmgr: str) -> int:
    query = {"purge": "true" if args.purge else "false"}
    if args.owner:
        query["remoteQmgr"] = args.owner
    _remote_call(args, "DELETE", f"/admin/qmgr/{qmgr}/queue/{_quote(args.name)}", query)
    return 0


def _remote_show(args: argparse.Namespace, qmgr: str) -> int:
    path = f"/admin/qmgr/{qmgr}/queue" + (f"/{_quote(args.name)}" if args.name else "")
    for queue in json.loads(_remote_call(args, "GET", path).body)["queue"]:
        _emit(queue)
    return 0


def _remote_put(args: argparse.Namespace, qmgr: str) -> int:
    qmgr = _quote(args.to_qmgr) if args.to_qmgr else qmgr  # REST names the destination in the URL
    data = (sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()) if args.file \
        else (args.message or "").encode("utf-8")
    headers = [("content-type", "text/plain;charset=utf-8")]
    if args.priority >= 0:
        headers.append(("ibm-mq-md-priority", str(args.priority)))
    if args.correl_id:
        headers.append(("ibm-mq-md-correlationId", "ID:" + args.correl_id))
    response = _remote_call(args, "POST", f"/messaging/qmgr/{qmgr}/queue/{_quote(args.name)}/message",
                            headers=headers, body=data)
    _emit({"msg_id": dict((k.lower(), v) for k, v in response.headers)
           .get("ibm-mq-md-messageid", "").removeprefix("ID:")})
    return 0


def _remote_get(args: argparse.Namespace, qmgr: str) -> int:
    """get, or browse: the REST API shows the first matching message only."""
    command = args.queue_command
    query = {}
    if args.msg_id:
        query["messageId"] = "ID:" + args.msg_id
    if args.correl_id:
        query["correlationId"] = "ID:" + args.correl_id
    path = f"/messaging/qmgr/{qmgr}/queue/{_quote(args.name)}/message"
    if command == "get":
        query["wait"] = str(int(args.wait * 1000))
        response = _remote_call(args, "DELETE", path, query)
    else:
        response = _remote_call(args, "GET", path, query)
    if response.status == 204:
        if command == "get":
            print(f"relaymq queue get: no message available on {args.name} (reason 2033 MQRC_NO_MSG_AVAILABLE)",
                  file=sys.stderr)
            return 1
        return 0
    _emit(_remote_message(response))
    return 0


#: The REST form of each subcommand: messaging for put/get/browse, admin for the rest.
_REMOTE: dict[str, Callable[[argparse.Namespace, str], int]] = {
    "define": _remote_define, "delete": _remote_delete, "show": _remote_show, "put": _remote_put,
}


def _run_remote(args: argparse.Namespace) -> int:
    command = args.queue_command
    if command not in ("define", "delete") and getattr(args, "selector", None):
        print(f"relaymq queue {command}: error: --selector is not available with --url", file=sys.stderr)
        return 2
    return _REMOTE.get(command, _remote_get)(args, _quote(args.qmgr))


def run(args: argparse.Namespace) -> int:
    command = args.queue_command
    if args.url:
        try:
            return _run_remote(args)
        except (RemoteError, OSError, ValueError) as exc:
            print(f"relaymq queue {command}: error: {exc}", file=sys.stderr)
            return 1
    try:
        qm = QueueManager.open(args.qmgr, args.data_dir)
    except StoreInUse as exc:
        print(f"relaymq queue {command}: error: {exc.message}; use --url to talk to the running broker",
              file=sys.stderr)
        return 1
    except (QueueError, OSError, ValueError) as exc:
        print(f"relaymq queue {command}: error: {exc}", file=sys.stderr)
        return 1
    try:
        return _execute(qm, args)
    except QueueError as exc:
        print(f"relaymq queue {command}: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"relaymq queue {command}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    finally:
        qm.close()
