"""The README's "Try it" commands, run as written against a real broker.

A new user's first minutes are the README: these commands must keep working as the code
changes. The shell blocks of the "Try it" section are run by bash with `set -e`, with only the
ports moved to the test broker's free ones (the README uses the defaults 1883 and 8080) and
`bin/relaymq` replaced by this interpreter's `python -m relaymq` (bin/relaymq would only add
its install check). What they print is checked: the queue round trip over REST, the psc
RegSub response, and the MQTT publication arriving on the psc subscriber's queue with its
user property as the ibm-mq-usr header (README; pubsub.md items 17, 33, 35; issue 5 REST).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the README's commands use curl")


def try_it_blocks() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Try it"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def localised(script: str, broker: BrokerProcess) -> str:
    http = broker.http_port
    script = script.replace("localhost:8080", f"127.0.0.1:{http}").replace("127.0.0.1:8080", f"127.0.0.1:{http}")
    script = re.sub(r"bin/relaymq (pub|sub) ", rf"bin/relaymq \1 -p {broker.port} ", script)
    script = re.sub(r"bin/relaymq flow (\w+)\b", rf"bin/relaymq flow \1 --url http://127.0.0.1:{http}", script)
    return script.replace("bin/relaymq ", f"{sys.executable} -m relaymq ")


def test_try_it_commands_work_as_written(tmp_path: Path) -> None:
    blocks = try_it_blocks()
    assert len(blocks) >= 3, "the Try it section lost its command blocks"
    broker = BrokerProcess("relaymq", workdir=tmp_path / "broker").start()
    try:
        # Background subscribers ('&') are stopped however the script ends.
        script = ("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
                  + "\n".join(localised(b, broker) for b in blocks))
        # The commands run where `bin/relaymq serve` would have made ./data/admin.credentials;
        # the test broker keeps its data elsewhere, so the CLI is told where (issue 15).
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180,
                              env=broker.admin_env())
    finally:
        broker.cleanup()
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "hello queue" in out  # REST put then destructive get
    assert "<pscr><Completion>ok</Completion></pscr>" in out  # the RegSub's response
    delivered = out[out.rindex("HTTP/1.1 200"):out.index("greenpages: deployed")]
    assert delivered.rstrip().endswith("19.5")  # the MQTT publication, on the psc queue
    assert 'ibm-mq-usr: colour;"red";string' in delivered
    assert "sensors/t1 21.5" in out  # the first subscriber printed the retained reading
    assert "greenpages: deployed" in out and "default/greenpages: 3 nodes" in out  # flow deploy, list
