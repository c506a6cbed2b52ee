"""Compile the hot modules with mypyc into the virtual environment (``relaymq.native`` loads them).

``python -m relaymq.native_build`` is what ``bin/_env.sh`` runs after installing: it does
nothing while the build matches the sources, nothing (quietly) without a C compiler or Python's
headers, and otherwise compiles ``MODULES`` as one mypyc group into a new directory that then
replaces the old one, writing the manifest last: the CRC-32 and size of each compiled module, of every
``relaymq`` module they import (mypyc may inline their ``Final`` constants and native classes),
and of this file (it decides what is compiled and how). It never fails the install: a failed
compile leaves the previous build out of use (its sources differ) and says where its log is.

Why these modules: docs/architecture.md, "Compiled modules".
"""

from __future__ import annotations

import ast
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from relaymq.native import MANIFEST, SOURCE_ROOT, build_dir, changed_sources, fingerprint, read_manifest

SRC = Path(SOURCE_ROOT)

#: The modules compiled, as paths under ``src/``: the MQTT codec and its framing, and the broker's
#: per-message path (a QoS 1 PUBLISH read, routed, delivered, stored and acknowledged), as one
#: group so their calls to each other stay native (issue 16, rows 2 and 5; compiled one at a time,
#: ``routing.py`` gave -0.7%: its time went to calls into interpreted code). Their records and
#: ``Session``/``Delivery`` are plain slotted classes, not dataclasses, so construction is native
#: too; so are the codec's packets (``packets.py``) and the records stored per message
#: (``store/records.py``), plain records (``plain.py``): as native classes, dataclasses had kept
#: an interpreted ``__init__`` and cost more than left as Python (decode_in of a PUBLISH: 12,400
#: instructions against 11,500; 16,200 all pure); as plain records, issue 16 row 3's event loop
#: 123,300-124,600 -> 104,100-104,500 instructions per QoS 2 message. With them what the path
#: calls per message: the store's submission of its rows (``serialize.py``, ``batch.py``,
#: ``sqlite_ops.py``), the topic tree's ``match``, the publication's view for content filters
#: (``lazy_view.py``) and the server's link and protocol, through which every read arrives and
#: every write leaves (``link.py``, ``mqtt_protocol.py``). Not ``broker.py`` (``flows.scada``
#: subclasses ``Broker``, which a native class forbids)
#: nor ``no_entries.py`` (a native ``dict`` subclass ignores the overrides that guard it). The
#: storage engine (``store/engine.py``: the submission, the units of work, the writer thread)
#: and the broker's store on it (``store/sqlite.py``; ``SQLiteStore`` subclasses the ``Store``
#: ABC, so it is compiled as a Python class with native methods) are compiled together: alone,
#: ``sqlite.py`` had measured the same (106,800 against 106,600 instructions per message on
#: bench_core row 5), as its calls went on to the interpreted ``Engine.submit``. The engine's
#: ``Ticket`` stays Python (``store/ticket.py``): the queue manager's subclasses it. And the
#: injected clock (``clock.py``), read for every delivery put in flight and every read.
#: And the message log's writer thread: the stored columns of the archived publications
#: (``log_entries.py``) and their encoding (``log_columns.py``), issue 14's message-log append
#: (not ``record.py``: ``LogRecord`` is a slotted dataclass).
MODULES = (
    "relaymq/plain.py",
    "relaymq/mqtt/packets.py",
    "relaymq/mqtt/wire.py",
    "relaymq/mqtt/properties.py",
    "relaymq/mqtt/decoder.py",
    "relaymq/mqtt/encoder.py",
    "relaymq/mqtt/reader.py",
    "relaymq/store/records.py",
    "relaymq/broker/records.py",
    "relaymq/broker/session.py",
    "relaymq/broker/ack_watch.py",
    "relaymq/broker/persistence.py",
    "relaymq/broker/delivery.py",
    "relaymq/broker/routing.py",
    "relaymq/broker/handle_publish.py",
    "relaymq/broker/connection.py",
    "relaymq/store/serialize.py",
    "relaymq/store/batch.py",
    "relaymq/store/sqlite_ops.py",
    "relaymq/store/engine.py",
    "relaymq/store/sqlite.py",
    "relaymq/clock.py",
    "relaymq/server/link.py",
    "relaymq/server/mqtt_protocol.py",
    "relaymq/pubsub/topictree.py",
    "relaymq/pubsub/lazy_view.py",
    "relaymq/store/log_columns.py",
    "relaymq/pipeline/log_entries.py",
)
GROUP = "relaymq_native"  # the shared library: relaymq_native__mypyc


def imported_sources(modules: tuple[str, ...], root: Path = SRC) -> list[str]:
    """``modules`` and every ``relaymq`` module they import, directly or not (paths under ``root``)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        package = name.split("/")[:-1]
        for node in ast.walk(ast.parse((root / name).read_text(), name)):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                module = base + (node.module.split(".") if node.module else [])
                targets = [module, *(module + [alias.name] for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name.split(".") for alias in node.names]
            for parts in targets:
                path = "/".join(parts) + ".py"
                if parts[:1] == ["relaymq"] and (root / path).is_file():
                    todo.append(path)
    return sorted(seen)


def manifest_text(root: Path = SRC) -> str:
    """The manifest of a build from the sources under ``root`` now: a line per source."""
    names = [*imported_sources(MODULES, root), "relaymq/native_build.py"]
    return "".join(f"{fingerprint(root / name)} {name}\n" for name in names)


def up_to_date(directory: Path, root: Path = SRC) -> bool:
    manifest = read_manifest(directory)
    return (manifest is not None and not changed_sources(manifest, root)
            and set(manifest) == {*imported_sources(MODULES, root), "relaymq/native_build.py"})


def missing_toolchain() -> str | None:
    """What compiling would lack here (a C compiler, Python's headers, mypyc), or None."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h)"
    try:
        import mypyc.build  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError:
        return "mypyc or setuptools not installed (the native extra)"
    return None


def compile_into(target: Path) -> None:
    """Compile ``MODULES`` into ``target`` (a fresh directory) and write its manifest there."""
    from mypyc.build import mypycify
    from setuptools import setup

    manifest = manifest_text()  # before compiling: an edit meanwhile makes the build stale
    with tempfile.TemporaryDirectory(prefix="relaymq-native-") as scratch:
        os.chdir(SRC)  # mypy names the modules by their paths from here
        extensions = mypycify([*MODULES, "--cache-dir", f"{scratch}/mypy-cache", "--config-file", os.devnull],
                              target_dir=f"{scratch}/c", group_name=GROUP, opt_level="3")
        setup(name="relaymq-native", ext_modules=extensions, script_name="relaymq.native_build",
              script_args=["-q", "build_ext", "--build-lib", str(target), "--build-temp", f"{scratch}/o",
                           "--parallel", str(os.cpu_count() or 1)])
    (target / MANIFEST).write_text(manifest)


def ensure_built(directory: Path) -> int:
    """Build into ``directory`` unless it is up to date or this machine cannot; always 0."""
    if up_to_date(directory):
        return 0
    lacking = missing_toolchain()
    if lacking is not None:
        print(f"relaymq: not compiling the MQTT codec and broker ({lacking}): they run as pure Python", file=sys.stderr)
        return 0
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two set-ups at once: the second finds it built
        if up_to_date(directory):
            return 0
        staging = directory.with_name(directory.name + ".new")
        log = directory.with_name(directory.name + ".log")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        print("relaymq: compiling the MQTT codec and broker with mypyc (again only when their sources change)",
              file=sys.stderr)
        started = time.monotonic()
        with open(log, "w") as out:
            done = subprocess.run([sys.executable, "-m", "relaymq.native_build", "--into", str(staging)],
                                  stdout=out, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0 or not (staging / MANIFEST).is_file():
            shutil.rmtree(staging, ignore_errors=True)
            print(f"relaymq: compiling failed (log: {log}); they run as pure Python", file=sys.stderr)
            return 0
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
        print(f"relaymq: compiled in {time.monotonic() - started:.0f} s into {directory}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--into"]:
        compile_into(Path(argv[1]))
        return 0
    return ensure_built(Path(build_dir()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
