"""``relaymq flow``: deploy, undeploy and list message flows on a running broker, and check a
flow file offline (flows-http.md item 1; issue 6).

The broker is reached through its HTTP admin routes (relaymq.flows.admin): ``--url``, else
``$RELAYMQ_HTTP_URL``, else ``http://127.0.0.1:<port>`` with the port of ``[http]`` in
``--config`` (8080 by default). ``deploy`` reads the YAML and the Compute files it names and
sends one self-contained definition, so the broker needs no access to your files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any
from urllib.parse import quote

from relaymq.cli.http_auth import authorization

_EPILOG = """\
examples:
  relaymq flow check examples/telemetry-flow/telemetry.yaml
  relaymq flow deploy examples/telemetry-flow/telemetry.yaml --group telemetry
  relaymq flow list
  relaymq flow undeploy telemetry

exit status: 0 success, 1 failure (one line on stderr), 2 usage or invalid flow file."""

TIMEOUT = 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "flow", help="deploy, undeploy and list message flows",
        description="Manage the message flows of a running broker (through its HTTP admin routes).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="flow_command", metavar="SUBCOMMAND", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", help="the broker's HTTP address (default: $RELAYMQ_HTTP_URL or [http] port of --config)")
        p.add_argument("--config", help="the broker's configuration file, to find its HTTP port")
        p.add_argument("-u", "--username", help="user for the HTTP server's authentication")
        p.add_argument("-P", "--password", help="password (default: $RELAYMQ_PASSWORD)")
        p.set_defaults(func=run)

    deploy = sub.add_parser("deploy", help="deploy (or redeploy) a flow file")
    deploy.add_argument("file", metavar="FILE", help="the flow definition (YAML)")
    deploy.add_argument("--group", "-g", help="execution group (default: the broker's [flows] default_group)")
    common(deploy)
    undeploy = sub.add_parser("undeploy", help="stop and remove a deployed flow")
    undeploy.add_argument("name", metavar="NAME")
    common(undeploy)
    listing = sub.add_parser("list", help="list deployed flows")
    listing.add_argument("--json", action="store_true", help="print the broker's JSON answer")
    common(listing)
    check = sub.add_parser("check", help="validate a flow file without a broker")
    check.add_argument("file", metavar="FILE")
    check.set_defaults(func=run)


def base_url(args: argparse.Namespace) -> str:
    if args.url:
        return args.url.rstrip("/")
    env = os.environ.get("RELAYMQ_HTTP_URL")
    if env:
        return env.rstrip("/")
    port = 8080
    if args.config:
        from relaymq.config import load_config

        port = load_config(args.config).section("http").port
    return f"http://127.0.0.1:{port}"


def _headers(args: argparse.Namespace, content_type: str | None = None) -> list[tuple[str, str]]:
    headers = [("accept", "application/json")]
    if content_type:
        headers.append(("content-type", content_type))
    headers += authorization(base_url(args), args.username, args.password)
    return headers


def _call(method: str, url: str, headers: list[tuple[str, str]], body: bytes = b"") -> tuple[int, Any]:
    from relaymq.http.client import request

    response = asyncio.run(request(method, url, headers=headers, body=body, timeout=TIMEOUT))
    try:
        value = json.loads(response.body.decode("utf-8")) if response.body else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        value = {"error": response.body.decode("utf-8", "replace").strip()}
    return response.status, value


def _fail(command: str, reason: object, status: int = 1) -> int:
    print(f"relaymq flow {command}: error: {reason}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    from relaymq.flows.definition import build_flow, dump_definition, load_definition
    from relaymq.flows.errors import FlowDefinitionError

    command = args.flow_command
    if command in ("check", "deploy"):
        try:
            definition = load_definition(args.file)
            flow = build_flow(definition, args.file)
        except FlowDefinitionError as err:
            return _fail(command, err, 2)
        if command == "check":
            inputs = ", ".join(f"{n.name} ({n.KIND})" for n in flow.input_nodes())
            print(f"{flow.name}: {len(flow.nodes)} nodes, {len(flow.connections)} connections, inputs: {inputs}")
            return 0
    try:
        url = base_url(args)
        if command == "deploy":
            query = f"?source={quote(os.path.basename(args.file))}"
            if args.group:
                query += f"&group={quote(args.group)}"
            status, value = _call("POST", f"{url}/relaymq/flows{query}", _headers(args, "application/yaml"),
                                  dump_definition(definition).encode("utf-8"))
        elif command == "undeploy":
            status, value = _call("DELETE", f"{url}/relaymq/flows/{quote(args.name, safe='')}", _headers(args))
        else:
            status, value = _call("GET", f"{url}/relaymq/flows", _headers(args))
    except Exception as err:  # noqa: BLE001 - connection refused, time-out, bad config: one line
        return _fail(command, err)
    if status >= 300:
        return _fail(command, value.get("error", f"HTTP {status}") if isinstance(value, dict) else f"HTTP {status}")
    if command == "deploy":
        verb = "redeployed" if value.get("redeployed") else "deployed"
        print(f"{value['name']}: {verb} to group {value['group']} (inputs: {', '.join(value['inputs'])})")
    elif command == "undeploy":
        print(f"{value['name']}: undeployed from group {value['group']}")
    elif args.json:
        print(json.dumps(value, indent=1))
    else:
        flows = value.get("flows", [])
        if not flows:
            print("no flows deployed")
        for f in flows:
            s = f["stats"]
            print(f"{f['group']}/{f['name']}: {len(f['nodes'])} nodes, {f['instances']} instance(s), "
                  f"inputs {', '.join(f['inputs'])}; completed {s['completed']}, backouts {s['backouts']}, "
                  f"failures {s['failures']}")
    return 0
