"""A small coverage-guided fuzzer for the broker's decoders (issue 15: "a fuzz test of every
front end's decoder ... with coverage guidance").

Why our own: atheris has no build for this project's Python set-up (it is not in the
project's extras and needs a compiler toolchain the set-up does not install), and hypothesis
searches by shrinking, not by coverage. The loop here is the classic one (AFL, libFuzzer):

1. a corpus starts from hand-made seeds (valid packets, frames, messages);
2. each execution takes a corpus entry, mutates it (bit and byte flips, interesting values,
   inserts, deletes, splices with another entry, a slice repeated many times, dictionary
   tokens), and runs the target on it under ``sys.settrace``, recording the (file, previous
   line, line) arcs executed in relaymq's own modules;
3. an input that executes an arc never seen before joins the corpus;
4. an input that makes the target raise anything but its typed protocol error, recurse too
   deep, or run longer than ``slow`` seconds is a finding (kept, shrunk, reported).

Tracing costs about ten times the untraced run; coverage is the guidance, so every execution
is traced (a "slow" verdict is confirmed untraced). Deterministic for a given seed.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff", b"\x00\x00", b"\xff\xff\xff\x7f",
               b"\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"]


@dataclass
class Target:
    """``run(data)`` must only ever raise one of ``allowed``."""

    name: str
    run: Callable[[bytes], object]
    allowed: tuple[type[BaseException], ...]
    seeds: list[bytes]
    tokens: list[bytes] = field(default_factory=list)
    #: source files whose lines count as coverage (path fragments)
    watch: tuple[str, ...] = ("relaymq",)


@dataclass
class Finding:
    data: bytes
    error: str


@dataclass
class Result:
    target: str
    executions: int = 0
    seconds: float = 0.0
    arcs: int = 0
    seed_arcs: int = 0
    corpus: int = 0
    findings: dict[str, Finding] = field(default_factory=dict)  # error kind -> first input

    def line(self) -> str:
        return (f"{self.target}: {self.executions:,} executions in {self.seconds:.1f} s, "
                f"{self.arcs:,} arcs covered ({self.seed_arcs:,} by the seeds), corpus "
                f"{self.corpus}, {len(self.findings)} finding(s)")


class _Tracer:
    def __init__(self, watch: tuple[str, ...]) -> None:
        self.watch = watch
        self.arcs: set[tuple[str, int, int]] = set()
        self._files: dict[str, bool] = {}

    def _wanted(self, filename: str) -> bool:
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = any(w in filename for w in self.watch)
        return known

    def global_trace(self, frame, event, arg):  # noqa: ANN001 - sys.settrace protocol
        if event != "call" or not self._wanted(frame.f_code.co_filename):
            return None
        filename = frame.f_code.co_filename
        last = [frame.f_lineno]
        arcs = self.arcs

        def local(frame, event, arg):  # noqa: ANN001
            if event == "line":
                line = frame.f_lineno
                arcs.add((filename, last[0], line))
                last[0] = line
            return local

        return local


def mutate(data: bytes, rng: random.Random, corpus: list[bytes], tokens: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 4, 8))):
        op = rng.randrange(10)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif op == 2:
            value = rng.choice(INTERESTING)
            buf[pos:pos + len(value)] = value
        elif op == 3:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif op == 4 and buf:
            end = min(len(buf), pos + rng.randrange(1, 17))
            del buf[pos:end]
        elif op == 5 and corpus:
            other = rng.choice(corpus)
            cut = rng.randrange(len(other) + 1)
            buf = buf[:pos] + other[cut:cut + rng.randrange(1, 64)] + buf[pos:]
        elif op == 6 and buf:  # a slice many times: nesting, long runs
            start = rng.randrange(len(buf))
            piece = buf[start:start + rng.randrange(1, 8)]
            buf[pos:pos] = piece * rng.choice((16, 256, 4096))
        elif op == 7 and tokens:  # a dictionary token, once or many times (nesting)
            buf[pos:pos] = rng.choice(tokens) * rng.choice((1, 1, 2, 64, 4096))
        elif op == 8 and buf:  # arithmetic on a byte (lengths)
            i = rng.randrange(len(buf))
            buf[i] = (buf[i] + rng.choice((-2, -1, 1, 2, 16, -16))) % 256
        elif op == 9 and len(buf) > 1:  # truncate
            del buf[rng.randrange(len(buf)):]
    return bytes(buf[:1 << 20])


def _call(target: Target, data: bytes, slow: float) -> str | None:
    """None when the target behaved, else what went wrong (one line)."""
    started = time.perf_counter()
    try:
        target.run(data)
    except target.allowed:
        pass
    except RecursionError:
        return "RecursionError"
    except Exception as error:  # noqa: BLE001 - that is what a fuzzer looks for
        frame = error.__traceback__
        while frame is not None and frame.tb_next is not None:
            frame = frame.tb_next
        where = f"{frame.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.tb_lineno}" if frame else "?"
        return f"{type(error).__name__} at {where}: {str(error)[:120]}"
    elapsed = time.perf_counter() - started
    if elapsed > slow:
        return f"slow: {elapsed:.2f} s for {len(data)} bytes"
    return None


def _kind(error: str) -> str:
    return error.split(":", maxsplit=1)[0] if not error.startswith("slow") else "slow"


def shrink(target: Target, data: bytes, kind: str, slow: float, budget: int = 2000) -> bytes:
    """A shorter input with the same kind of finding (greedy chunk removal)."""
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and budget > 0:
        i = 0
        while i < len(data) and budget > 0:
            candidate = data[:i] + data[i + chunk:]
            budget -= 1
            error = _call(target, candidate, slow)
            if error is not None and _kind(error) == kind:
                data = candidate
            else:
                i += chunk
        chunk //= 2
    return data


def fuzz(target: Target, seconds: float, seed: int = 0, slow: float = 1.0,
         max_executions: int | None = None, corpus_in: Iterable[bytes] = ()) -> tuple[Result, list[bytes]]:
    """Fuzz ``target`` for ``seconds``; returns the result and the final corpus."""
    rng = random.Random(seed)
    tracer = _Tracer(target.watch)
    result = Result(target.name)
    corpus: list[bytes] = []
    limit = sys.getrecursionlimit()
    started = time.monotonic()

    def execute(data: bytes) -> None:
        before = len(tracer.arcs)
        sys.settrace(tracer.global_trace)
        try:
            error = _call(target, data, slow * 10)  # tracing is slow: judged untraced below
        finally:
            sys.settrace(None)
            sys.setrecursionlimit(limit)
        result.executions += 1
        if error is not None and error.startswith("slow"):
            error = _call(target, data, slow)
        if error is not None:
            kind = _kind(error)
            if kind not in result.findings:
                small = shrink(target, data, kind, slow)
                result.findings[kind] = Finding(small, _call(target, small, slow) or error)
        elif len(tracer.arcs) > before:
            corpus.append(data)

    for data in [*target.seeds, *corpus_in]:
        execute(data)
        if data not in corpus:
            corpus.append(data)  # every seed stays: each stands for a shape worth mutating
    result.seed_arcs = len(tracer.arcs)
    if not corpus:
        corpus.append(b"")
    while time.monotonic() - started < seconds:
        if max_executions is not None and result.executions >= max_executions:
            break
        execute(mutate(rng.choice(corpus), rng, corpus, target.tokens))
    result.seconds = time.monotonic() - started
    result.arcs = len(tracer.arcs)
    result.corpus = len(corpus)
    return result, corpus
