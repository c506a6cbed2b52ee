"""What a default ``relaymq serve`` imports (issue 16, bench/compare rows 9 and 6: a smaller,
faster-starting base process): the modules of features it does not run are not among them.
Each is imported when its feature is configured or first used (docs/architecture.md)."""

from __future__ import annotations

import subprocess
import sys

#: Modules of features a default start does not use: the selector language (no selector yet),
#: the JMS mapping and message domains (no body looked into), the flow node library and
#: definitions and the ports the flows' nodes reach the broker through (no flow deployed), the
#: bridge client and the network's links (no [[bridge]], no neighbour), the real-time listener ([realtime] off), the memory store (--store sqlite);
#: importlib.resources, zipfile and pathlib (the console's files are read from their directory); the
#: schemas of the parts that are off unless configured ([amqp], [multicast], [realtime],
#: [archive]: relaymq.config.Config.configured) and the TOML parser (no configuration file);
#: h11 (the HTTP grammar: the HTTP port's first connection loads it, and the queue manager's
#: HTTP channel client its first exchange); the [[bridge]] schema (a network's names and hosts
#: are checked by relaymq.config); the JMS mapping of the REST interface (its first message
#: with user properties); the code pages of relaymq.message.ccsid (the first text in one); the
#: password file's bcrypt and the ACL (neither file configured); the queue manager's channel
#: protocol (the listener is open, the protocol comes with its first connection or request).
NOT_AT_START = (
    "relaymq.bridge.settings", "relaymq.message.jms", "encodings.cp037", "encodings.cp437",
    "encodings.cp500", "encodings.cp850", "encodings.cp1140", "encodings.cp1252",
    "relaymq.auth.passwords", "relaymq.auth.acl", "bcrypt",
    "relaymq.amqp.settings", "relaymq.multicast.settings", "relaymq.realtime.settings",
    "relaymq.pipeline.settings", "tomllib",
    "relaymq.selector.compiled", "relaymq.message.jms_mq", "relaymq.message.domains.registry",
    "relaymq.flows.definition", "relaymq.flows.registry", "relaymq.flows.ports", "relaymq.flows.context",
    "relaymq.bridge.bridge", "relaymq.network.link",
    "relaymq.realtime.server", "relaymq.store.memory", "difflib", "uuid",
    "importlib.resources", "zipfile", "pathlib", "h11", "relaymq.http.exchange", "relaymq.http.client",
    "relaymq.qmgr.channel", "relaymq.qmgr.channel_transport",
)

SCRIPT = """
import asyncio, os, signal, sys
from relaymq.config import load_config
from relaymq.server.app import serve

config = load_config(None, {"port": 0, "data_dir": sys.argv[1], "http_port": 0, "channel_port": 0})

async def main():
    ready = asyncio.Event()
    task = asyncio.create_task(serve(config, ready))
    await ready.wait()
    print(sorted(name for name in sys.argv[2:] if name in sys.modules))
    os.kill(os.getpid(), signal.SIGTERM)
    return await task

sys.exit(asyncio.run(main()))
"""


def test_a_default_start_does_not_import_unused_features(tmp_path):
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "data"), *NOT_AT_START],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout
