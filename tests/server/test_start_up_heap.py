"""``relaymq serve`` starts with the garbage collector off and turns it on once started
(relaymq.server.app.settle_heap; issue 16, bench/compare row 9: with the default thresholds a
start with 100,000 queued ran some 200 collections over objects that all live on), and what the
restore made is frozen as soon as it is made (``restore_frozen``: the one collection at start
need not scan a backlog's ids)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc, os, signal, sys
from relaymq.server import app

seen = []
frozen = []
settle = app.settle_heap

def settle_and_stop():
    seen.append(gc.isenabled())
    frozen.append(gc.get_freeze_count())
    settle()
    seen.append(gc.isenabled())
    os.kill(os.getpid(), signal.SIGTERM)  # taken once everything has started

app.settle_heap = settle_and_stop
from relaymq.cli.main import main

code = main(["serve", "--port", "0", "--data-dir", sys.argv[1], "--http-port", "0", "--channel-port", "0"])
print(code, seen, gc.get_threshold() == app.GC_THRESHOLDS, frozen[0] > 1000)
"""


def test_the_collector_is_off_until_started_then_on_with_the_serving_thresholds(tmp_path):
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0 [False, True] True True", result.stdout + result.stderr[-2000:]
