"""The methods ``dataclasses`` writes for a class (``__init__``, ``__repr__``, ``__eq__`` ...),
compiled once and kept between runs beside the byte code, as the modules' own code is.

Why: on Python 3.11 and 3.12 ``@dataclass`` writes each method it adds as source text and
compiles it with ``exec``, at every import of the class. A default ``relaymq serve`` creates
about 90 dataclasses before its port opens, 344 methods parsed and compiled at every start:
a quarter of the instructions of a start (issue 16, bench/compare row 9; bench/README.md).

How: ``dataclasses._create_fn`` calls ``exec(text, globals, ns)``, and ``install`` gives the
``dataclasses`` module a global ``exec`` that looks ``text`` up first. The code kept for a text
is what compiling that text gives (the same file name, ``<string>``, and the same flags: none,
as ``dataclasses.py`` has no ``__future__`` import), so a class is built exactly as it is
without the cache. Only relaymq's modules are kept (the ``__name__`` of ``globals``), each in a
file of its own, ``<module>.dataclasses.<cache tag>.marshal`` in ``relaymq``'s ``__pycache__``,
holding the texts that module used the last time it had to compile one: a changed class leaves
no stale entry behind. Only the file of the module creating classes is held, so a start does
not end up bigger (holding every module's until started cost 0.7 MB resident). The files are written where and when byte code is (not under
``PYTHONDONTWRITEBYTECODE`` or ``-B``): by ``save``, which the server calls once it has started
and which runs at exit; one that cannot be read or written is as if it were not there.
``keep_package`` writes them for every module of the package, as ``compileall`` writes byte
code (bench/compare runs it: its brokers write no byte code).
On a Python whose ``dataclasses`` builds its methods otherwise, nothing is installed.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib
import importlib.util
import marshal
import os
import pkgutil
import sys
from types import CodeType
from typing import Any

_PREFIX = "relaymq."
_PACKAGE_INIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")

#: [module, {text: code} of its file]: of the module creating classes now only (a module's
#: classes are created one after the other, at its import): a class holds the method it was
#: given, not the code that made it, so a start does not end up holding every module's code.
_kept: list[Any] = [None, {}]
#: module -> the hashes of the texts this process used for it (read or compiled).
_seen: dict[str, set[int]] = {}
#: module -> {text: code} compiled in this process where its file had no such text.
_compiled: dict[str, dict[str, CodeType]] = {}


def cache_path(module: str) -> str | None:
    """The file of ``module``'s methods, None where this interpreter keeps no byte code."""
    try:
        directory = os.path.dirname(importlib.util.cache_from_source(_PACKAGE_INIT))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return os.path.join(directory, f"{module}.dataclasses.{sys.implementation.cache_tag}.marshal")


def _read(module: str) -> dict[str, CodeType]:
    path = cache_path(module)
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            found = marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {text: code for text, code in found.items() if isinstance(text, str) and isinstance(code, CodeType)}


def code_for(text: str, module: str | None) -> CodeType:
    """The code of ``text``: kept for ``module`` by an earlier run, else compiled (and kept)."""
    if module is None or not module.startswith(_PREFIX):
        return compile(text, "<string>", "exec", dont_inherit=True)
    if _kept[0] != module:
        _kept[:] = [module, _read(module)]
    code = _kept[1].get(text)
    seen = _seen.setdefault(module, set())
    if code is None:
        code = compile(text, "<string>", "exec", dont_inherit=True)
        if hash(text) not in seen:  # not a second class with the same method as one before it
            if not _compiled:
                atexit.register(save)
            _compiled.setdefault(module, {})[text] = code
    seen.add(hash(text))
    return code


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: dict[str, Any] | None = None) -> None:
    """``exec`` as ``dataclasses._create_fn`` calls it, with the text's kept code."""
    if isinstance(source, str):
        source = code_for(source, (globals or {}).get("__name__"))
    exec(source, globals, locals)


def save() -> None:
    """Write the file of each module that compiled a text its file did not hold: the texts it
    used in this process (nothing when byte code is not written). Then forget what was read."""
    if not sys.dont_write_bytecode:
        for module in sorted(_compiled):
            _write(module, _texts_used(module))
    _forget()


def _texts_used(module: str) -> dict[str, CodeType]:
    """{text: code} of every text ``module`` used in this process: its file's and compiled."""
    seen = _seen.get(module, set())
    texts = {text: code for text, code in _read(module).items() if hash(text) in seen}
    texts.update(_compiled.get(module, {}))
    return texts


def _forget() -> None:
    _kept[:] = [None, {}]
    _seen.clear()
    _compiled.clear()


def _write(module: str, texts: dict[str, CodeType]) -> None:
    path = cache_path(module)
    if path is None:
        return
    scratch = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(scratch, "wb") as fh:
            fh.write(marshal.dumps(texts))
        os.replace(scratch, path)  # a reader sees the old file or the new one, never half of one
    except OSError:
        try:
            os.unlink(scratch)
        except OSError:
            pass


def install() -> bool:
    """Give ``dataclasses`` the kept code; False (nothing done) where it does not compile its
    methods with ``exec`` in ``_create_fn``."""
    create = getattr(dataclasses, "_create_fn", None)
    if create is None or "exec" not in create.__code__.co_names:
        return False
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    return True


def keep_package(package: str = "relaymq") -> int:
    """Import every module of ``package`` and write the files of those that create dataclasses,
    even where byte code is not written by default; how many files were written. A module that
    cannot be imported here (an optional dependency missing) is left out."""
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if info.name.endswith(".__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # an optional part missing: its classes compile at its import
            continue
    modules = sorted(_seen)
    for module in modules:
        _write(module, _texts_used(module))
    _forget()
    return len(modules)
