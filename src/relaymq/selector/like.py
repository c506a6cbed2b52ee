"""The LIKE operator's pattern matcher (JMS 1.1: ``_`` is one character, ``%`` any sequence,
an ESCAPE character makes the next one literal; seed 000 l.2744-2779, seed 004 l.6688-6697).

A pattern is translated once into *segments*: the runs between ``%`` signs, each a fixed-length
sequence of literal characters and ``_`` wildcards. Matching is then linear in the text for a
given pattern, whatever the pattern and the text - no backtracking regular expression is
involved, so ``s LIKE '%a%a%a%a%a%a%b'`` on a long run of ``a`` cannot stall a consumer or a
subscription (a selector is written by a client, so this is a denial-of-service guard):

* with no ``%`` the text must have the segment's length and match it position by position;
* otherwise the first segment must match at the start, the last at the end, and each middle
  segment is searched left to right from where the previous one ended, taking its *first*
  occurrence. Taking the first occurrence is always right: segments have a fixed length, so
  the earliest match leaves the most text for the segments after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: One position of a segment: a literal character, or ``None`` for ``_``.
_ANY = None


def _segments(pattern: str, escape: str | None) -> list[list[str | None]]:
    segments: list[list[str | None]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < n:
            segments[-1].append(pattern[i + 1])
            i += 2
            continue
        if ch == "%":
            segments.append([])
        elif ch == "_":
            segments[-1].append(_ANY)
        else:
            segments[-1].append(ch)
        i += 1
    return segments


def _matches_at(segment: list[str | None], text: str, pos: int) -> bool:
    """``segment`` matches ``text`` starting at ``pos`` (the caller checked the length)."""
    for k, ch in enumerate(segment):  # noqa: SIM110 - a loop: all() over a generator is slower here
        if ch is not _ANY and text[pos + k] != ch:
            return False
    return True


def _finder(segment: list[str | None]) -> Callable[[str, int, int], int]:
    """``find(text, start, end)``: the first position >= start where ``segment`` matches and
    ends by ``end``, or -1. Literal segments use ``str.find``; segments with ``_`` use a
    fixed-width regular expression, whose search is linear in the text (no ``*`` in it)."""
    if _ANY not in segment:
        literal = "".join(segment)  # type: ignore[arg-type]
        return lambda text, start, end: text.find(literal, start, end)
    regex = re.compile(
        "".join("." if ch is _ANY else re.escape(ch) for ch in segment), re.DOTALL
    )

    def find(text: str, start: int, end: int) -> int:
        m = regex.search(text, start, end)
        return -1 if m is None else m.start()

    return find


def compile_like(pattern: str, escape: str | None = None) -> Callable[[str], bool]:
    """A function ``text -> bool`` telling whether ``text`` matches the LIKE ``pattern``."""
    segments = _segments(pattern, escape)
    if len(segments) == 1:
        only = segments[0]
        size = len(only)
        return lambda text: len(text) == size and _matches_at(only, text, 0)
    first, middle, last = segments[0], segments[1:-1], segments[-1]
    middle = [seg for seg in middle if seg]  # '%%' is one '%'
    finders = [(_finder(seg), len(seg)) for seg in middle]
    head, tail = len(first), len(last)
    minimum = head + tail + sum(size for _, size in finders)

    def match(text: str) -> bool:
        n = len(text)
        if n < minimum:
            return False
        if not _matches_at(first, text, 0) or not _matches_at(last, text, n - tail):
            return False
        pos, end = head, n - tail
        for find, size in finders:
            found = find(text, pos, end)
            if found < 0:
                return False
            pos = found + size
        return True

    return match
