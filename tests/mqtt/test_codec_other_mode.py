"""The compiled modules' tests (tests/mqtt, tests/conformance, tests/broker for the broker's
per-message path, tests/store for the storage engine and the broker's store, and the message
log's columns and entries) in the other mode: the run itself uses the compiled modules when they are
built (bin/test builds them where a C compiler is), so this runs them again as pure Python
(``RELAYMQ_PURE=1``), or compiled when the run was told to be pure. Both modes are thus tested
on every machine that can compile; where none is built it is skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relaymq import native, native_build

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_the_compiled_modules_tests_pass_in_the_other_mode():
    if not native_build.up_to_date(Path(native.build_dir())):
        pytest.skip(f"only pure Python here: {native.status.reason}")
    pure_now = not native.status.compiled
    env = {**os.environ, native.PURE_ENV: "" if pure_now else "1", "PYTHONPATH": str(ROOT / "src")}
    mode = subprocess.run([sys.executable, "-c", "from relaymq import native; print(native.status.describe())"],
                          env=env, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert mode.startswith("compiled: yes" if pure_now else "compiled: no"), mode
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0",
         "tests/mqtt", "tests/conformance", "tests/broker", "tests/store",
         "tests/pipeline/test_log_entries.py", "tests/pipeline/test_log.py",
         f"--ignore={Path(__file__).relative_to(ROOT)}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=560, check=False)
    assert result.returncode == 0, f"{mode}\n{result.stdout[-5000:]}{result.stderr[-2000:]}"
