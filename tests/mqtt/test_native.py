"""The compiled codec (relaymq.native, relaymq.native_build): an edited source is run as written,
never an old binary built from it; ``RELAYMQ_PURE=1`` forces pure Python; a fresh build is used.

The manifest logic runs on copies of the real sources with a stand-in extension file (no
compiler needed); the end-to-end cases import the real build from a copy of the tree, and are
skipped where nothing is built (no C compiler: docs/architecture.md, "Compiled modules")."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import relaymq.mqtt.decoder
from relaymq import native, native_build

SRC = Path(native.SOURCE_ROOT)
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def copy_sources(root: Path) -> None:
    """The sources a build reads (the compiled modules, what they import, the builder) under ``root``."""
    for name in [*native_build.imported_sources(native_build.MODULES), "relaymq/native_build.py"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(SRC / name, root / name)


def fake_build(directory: Path, root: Path) -> None:
    """A build directory as native_build leaves it: extension files and the manifest last."""
    (directory / "relaymq" / "mqtt").mkdir(parents=True)
    (directory / "relaymq" / "mqtt" / f"decoder{SUFFIX}").write_bytes(b"")
    (directory / f"{native_build.GROUP}__mypyc{SUFFIX}").write_bytes(b"")
    (directory / native.MANIFEST).write_text(native_build.manifest_text(root))


def test_the_build_reads_the_codec_and_what_it_imports():
    sources = native_build.imported_sources(native_build.MODULES)
    assert set(native_build.MODULES) <= set(sources)
    # mypyc may inline the Final constants of the modules the codec imports: they are listed too
    assert {"relaymq/mqtt/reason_codes.py", "relaymq/mqtt/errors.py", "relaymq/mqtt/packets.py"} <= set(sources)


def test_an_edited_source_turns_the_build_off(tmp_path, monkeypatch):
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    root, build = tmp_path / "src", tmp_path / "build"
    copy_sources(root)
    fake_build(build, root)
    modules, reason = native.find(build, root)
    assert set(modules) == {"relaymq.mqtt.decoder", f"{native_build.GROUP}__mypyc"}, reason
    assert native_build.up_to_date(build, root)

    # an edit to a module the codec imports (not compiled itself) is enough: all or nothing
    edited = root / "relaymq/mqtt/reason_codes.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    modules, reason = native.find(build, root)
    assert modules == {}
    assert "relaymq/mqtt/reason_codes.py" in reason
    assert not native_build.up_to_date(build, root)

    edited.write_text(edited.read_text().removesuffix("\n# edited\n"))  # the same content again
    assert native.find(build, root)[0]

    (root / "relaymq/mqtt/wire.py").unlink()
    assert native.find(build, root) == ({}, "sources changed since the build: relaymq/mqtt/wire.py; "
                                            "bin/relaymq or bin/test rebuilds")


def test_pure_and_unbuilt(tmp_path, monkeypatch):
    root, build = tmp_path / "src", tmp_path / "build"
    copy_sources(root)
    fake_build(build, root)
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert native.find(build, root) == ({}, "RELAYMQ_PURE is set")
    monkeypatch.setenv(native.PURE_ENV, "0")
    assert native.find(build, root)[0]
    assert native.find(tmp_path / "nothing", root)[0] == {}


def _built() -> Path:
    directory = Path(native.build_dir())
    if not native_build.up_to_date(directory):
        pytest.skip(f"no compiled codec matching these sources in {directory}: {native.status.reason}")
    return directory


def test_a_fresh_build_is_what_runs():
    _built()
    if os.environ.get(native.PURE_ENV, "") not in ("", "0"):
        assert relaymq.mqtt.decoder.__file__.endswith(".py")
        assert not native.status.compiled
    else:
        assert relaymq.mqtt.decoder.__file__.endswith(SUFFIX)
        assert set(native.status.modules) == {
            name.removesuffix(".py").replace("/", ".") for name in native_build.MODULES}


def _decoder_in(root: Path, build: Path, **env: str) -> str:
    script = "import relaymq.mqtt.decoder as d; print(d.__file__, getattr(d, 'EDITED', False))"
    environment = {**os.environ, "PYTHONPATH": str(root), native.DIR_ENV: str(build), native.PURE_ENV: "", **env}
    return subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


def test_an_edit_to_the_real_tree_runs_the_edit(tmp_path):
    """A copy of the tree and of its build: the build runs until decoder.py is edited, then the edit."""
    build = tmp_path / "build"
    shutil.copytree(_built(), build)
    shutil.copytree(SRC / "relaymq", tmp_path / "src" / "relaymq",
                    ignore=shutil.ignore_patterns("__pycache__", "static"))
    root = tmp_path / "src"
    assert _decoder_in(root, build) == f"{build / 'relaymq/mqtt' / ('decoder' + SUFFIX)} False"
    assert _decoder_in(root, build, RELAYMQ_PURE="1") == f"{root / 'relaymq/mqtt/decoder.py'} False"
    decoder = root / "relaymq/mqtt/decoder.py"
    decoder.write_text(decoder.read_text() + "\nEDITED = True\n")
    assert _decoder_in(root, build) == f"{decoder} True"
