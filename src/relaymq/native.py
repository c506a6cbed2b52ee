"""Compiled modules (mypyc), loaded only while the sources they were built from are unchanged.

``relaymq.native_build`` (run by ``bin/_env.sh`` after installing) compiles a few hot modules
into a directory of the virtual environment, outside ``src/``: ``<build>/relaymq/mqtt/
decoder.<abi>.so`` and the group's shared library ``<build>/relaymq_native__mypyc.<abi>.so``,
with the manifest ``sources.crc``: the CRC-32 and size of every source the build read (paths
relative to ``src/``), written last.

Importing this module, which ``relaymq/__init__.py`` does before any other module of the
package, reads that manifest and checks those sources again. Only when every one of them
still matches does it put a finder first on ``sys.meta_path`` that answers the compiled
modules with their extension files; otherwise nothing is installed and every module is its
``.py``. It is all or nothing because the modules of one build call each other natively (an
edited ``wire.py`` next to a compiled ``decoder.py`` would not be seen by the decoder), so an
edit to any source the build read is run as written, never an old binary next to it.

It imports nothing the interpreter has not loaded already but ``binascii`` (start-up time):
paths are strings, the check a CRC-32, which an edit changes but for one in four billion.

``RELAYMQ_PURE=1`` forces pure Python; ``RELAYMQ_NATIVE_DIR`` names another build directory.
"""

from __future__ import annotations

import binascii
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from types import ModuleType

PURE_ENV = "RELAYMQ_PURE"
DIR_ENV = "RELAYMQ_NATIVE_DIR"
MANIFEST = "sources.crc"

#: ``src/``: the directory that holds the package, the root of the manifest's paths.
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

StrPath = str | os.PathLike[str]


def build_dir() -> str:
    """Where the compiled modules of this interpreter are built and looked for."""
    return os.environ.get(DIR_ENV) or os.path.join(sys.prefix, "relaymq-native", sys.implementation.cache_tag)


def fingerprint(path: StrPath) -> str:
    """A file's content as the manifest records it: CRC-32 and size."""
    with open(path, "rb") as fh:
        data = fh.read()
    return f"{binascii.crc32(data):08x}:{len(data)}"


def read_manifest(directory: StrPath) -> dict[str, str] | None:
    """The manifest's source path -> fingerprint, or None when there is no build."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    sources: dict[str, str] = {}
    for line in lines:
        mark, _, name = line.partition(" ")
        if name:
            sources[name] = mark
    return sources


def changed_sources(manifest: dict[str, str], root: StrPath = SOURCE_ROOT) -> list[str]:
    """The sources of the manifest whose content is not what the build read (or that are gone)."""
    changed = []
    for name, mark in manifest.items():
        try:
            if fingerprint(os.path.join(root, name)) != mark:
                changed.append(name)
        except OSError:
            changed.append(name)
    return changed


def compiled_modules(directory: StrPath) -> dict[str, str]:
    """Module name -> extension file, for every extension module under ``directory``."""
    modules: dict[str, str] = {}
    top = os.fspath(directory)
    for folder, _, files in os.walk(top):
        package = os.path.relpath(folder, top).replace(os.sep, ".").removeprefix(".")
        for file in files:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:  # the longest (ABI-tagged) first
                if file.endswith(suffix):
                    name = file[:-len(suffix)]
                    modules[f"{package}.{name}" if package else name] = os.path.join(folder, file)
                    break
    return modules


class Status:
    """What the import found: the compiled modules in use (none: pure Python), and why."""

    __slots__ = ("modules", "reason")

    def __init__(self, modules: tuple[str, ...], reason: str):
        self.modules = modules
        self.reason = reason

    @property
    def compiled(self) -> bool:
        return bool(self.modules)

    def describe(self) -> str:
        """One line for the start-up log and ``relaymq --version``."""
        if self.modules:
            return f"compiled: yes, {len(self.modules)} modules (mypyc)"
        return f"compiled: no, pure Python: {self.reason}"


class _Finder:
    """The meta path finder of the compiled modules (each an extension file of the build)."""

    def __init__(self, modules: dict[str, str]):
        self.modules = modules

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        location = self.modules.get(fullname)
        if location is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, location)
        return importlib.machinery.ModuleSpec(fullname, loader, origin=location)


def find(directory: StrPath, root: StrPath = SOURCE_ROOT) -> tuple[dict[str, str], str]:
    """The compiled modules usable with the sources under ``root`` (none, and why not)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return {}, f"{PURE_ENV} is set"
    manifest = read_manifest(directory)
    if manifest is None:
        return {}, f"nothing built in {os.fspath(directory)} (a C compiler and Python's headers are needed)"
    changed = changed_sources(manifest, root)
    if changed:
        return {}, f"sources changed since the build: {', '.join(changed)}; bin/relaymq or bin/test rebuilds"
    modules = compiled_modules(directory)
    if not modules:
        return {}, f"the build in {os.fspath(directory)} holds no module"
    return modules, "built from these sources"


def _install() -> Status:
    """Put the compiled modules first on the import path when they match their sources."""
    modules, reason = find(build_dir())
    if modules:
        sys.meta_path.insert(0, _Finder(modules))
    return Status(tuple(sorted(name for name in modules if name.startswith("relaymq."))), reason)


#: Done once, when ``relaymq/__init__.py`` imports this module.
status = _install()
