"""The layer contract (issue 19 "Layers import each other in one loop"; docs/architecture.md,
"Layers"): import-linter checks the contract written in pyproject.toml, and every part of the
package has a place in it, so a new package or module cannot slip past the check unplaced."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import relaymq
import relaymq.pubsub

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def _layer_modules() -> set[str]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    names: set[str] = set()
    for layer in contract["layers"]:
        names.update(part.strip() for part in layer.replace("|", ":").split(":"))
    return names


def test_no_module_imports_a_layer_above_its_own():
    """Issue 19: every import goes down the layers of pyproject.toml [tool.importlinter]
    (upward edges such as qmgr -> server.app, http -> qmgr.rest, qmgr -> flows are gone).
    In a process of its own: import-linter reconfigures logging, which the broker tests read."""
    script = ("import sys; from importlinter.cli import lint_imports; "
              f"sys.exit(lint_imports(config_filename={str(PYPROJECT)!r}, no_cache=True))")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_every_package_and_pubsub_module_has_a_layer():
    """Issue 19: the contract covers every subpackage of relaymq (and each pub/sub module, whose
    package spans two layers), so the check above cannot pass by leaving a part out."""
    placed = _layer_modules()
    top = {f"relaymq.{info.name}" for info in pkgutil.iter_modules(relaymq.__path__)} - {"relaymq.__main__"}
    pubsub = {f"relaymq.pubsub.{info.name}" for info in pkgutil.iter_modules(relaymq.pubsub.__path__)}
    assert top - {"relaymq.pubsub"} <= placed, sorted(top - {"relaymq.pubsub"} - placed)
    assert pubsub <= placed, sorted(pubsub - placed)
