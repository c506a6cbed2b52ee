"""The methods dataclasses writes for relaymq's classes are compiled once and kept between runs
(relaymq.dataclass_code; issue 16, bench/compare row 9: compiling them at every start was a quarter
of a start's instructions)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest

from relaymq import dataclass_code

pytestmark = pytest.mark.skipif(not dataclass_code.install(), reason="dataclasses does not exec its methods here")

#: Builds a dataclass in a module of relaymq's name, then says how many texts were compiled
#: rather than read, what the class does, and writes what was compiled (as ``serve`` does).
PROBE = textwrap.dedent("""
    import dataclasses, sys, types
    import relaymq
    from relaymq import dataclass_code

    module = types.ModuleType("relaymq.probe_for_kept_code")
    sys.modules[module.__name__] = module
    exec('''
    from dataclasses import dataclass, field

    @dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 0
        tags: list = field(default_factory=list, compare=False)
    ''', module.__dict__)
    Point = module.Point
    p = Point(1)
    print(sorted(dataclass_code._compiled), repr(p), p == Point(1, 0), p < Point(2), hash(p) == hash(Point(1, 0)))
    try:
        p.x = 5
    except dataclasses.FrozenInstanceError:
        print("frozen")
    dataclass_code.save()
""")


def _run(tmp_path, *, write: bool = True) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-X", f"pycache_prefix={tmp_path}", "-c", PROBE]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=True)
    return result.stdout.splitlines()


def test_a_second_run_builds_the_same_class_from_the_kept_code(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first[0].startswith("['relaymq.probe_for_kept_code']"), first  # compiled, then written
    assert second[0].startswith("[] "), second  # every method read back, none compiled
    assert first[0].partition("] ")[2] == second[0].partition("] ")[2] == \
        "Point(x=1, y=0, tags=[]) True True True"
    assert first[1] == second[1] == "frozen"


def test_nothing_is_written_where_byte_code_is_not(tmp_path):
    _run(tmp_path, write=False)
    again = _run(tmp_path, write=False)
    assert again[0].startswith("['relaymq.probe_for_kept_code']"), again
    assert not list(tmp_path.rglob("*.dataclasses.*"))


def test_a_damaged_file_is_compiled_again(tmp_path):
    _run(tmp_path)
    (kept,) = tmp_path.rglob("relaymq.probe_for_kept_code.dataclasses.*")
    kept.write_bytes(kept.read_bytes()[:40])
    again = _run(tmp_path)
    assert again[0] == "['relaymq.probe_for_kept_code'] Point(x=1, y=0, tags=[]) True True True", again
    assert _run(tmp_path)[0].startswith("[] "), "the damaged file was not written again"


def test_other_packages_classes_are_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)

    @dataclasses.dataclass
    class Elsewhere:  # this test module is not relaymq's
        a: int

    assert Elsewhere(1) == Elsewhere(1)
    dataclass_code.save()
    # relaymq's own modules imported by earlier tests in this process may be written too
    written = [path.name for path in tmp_path.rglob("*.dataclasses.*")]
    assert all(name.startswith("relaymq.") for name in written), written
