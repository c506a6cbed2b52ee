"""LIKE (formats-and-jms.md item 14; seed 000 l.2744-2779): ``_`` one character, ``%`` any
sequence, ESCAPE makes the next character literal - matched in time linear in the text, so a
client's selector cannot stall the broker."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.selector import compile_selector
from relaymq.selector.like import compile_like


def _reference(pattern: str, escape: str | None, text: str) -> bool:
    """The definition, by dynamic programming over (pattern position, text position)."""
    tokens: list[tuple[str, str]] = []  # ('lit', c) | ('one', '') | ('any', '')
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            tokens.append(("lit", pattern[i + 1]))
            i += 2
            continue
        tokens.append(("any", "") if ch == "%" else ("one", "") if ch == "_" else ("lit", ch))
        i += 1

    @cache
    def m(p: int, t: int) -> bool:
        if p == len(tokens):
            return t == len(text)
        kind, ch = tokens[p]
        if kind == "any":
            return m(p + 1, t) or (t < len(text) and m(p, t + 1))
        if t == len(text):
            return False
        return (kind == "one" or text[t] == ch) and m(p + 1, t + 1)

    return m(0, 0)


@pytest.mark.timeout(20)
def test_pathological_pattern_is_linear() -> None:
    """Item 14 LIKE: '%a%a%a%a%a%a%b' on 100 'a's took 86 s with a backtracking regex; it must
    answer at once (FALSE: there is no 'b'), and TRUE once a 'b' ends the text."""
    s = compile_selector("s LIKE '%a%a%a%a%a%a%b'")
    assert s.evaluate({"s": "a" * 100}) is False
    assert s.evaluate({"s": "a" * 100_000}) is False
    assert s.evaluate({"s": "a" * 100_000 + "b"}) is True
    wild = compile_selector("s LIKE '%a_a%a_a%a_a%a_b'")
    assert wild.evaluate({"s": "a" * 100_000}) is False


@pytest.mark.parametrize(
    ("pattern", "escape", "text", "expected"),
    [
        ("", None, "", True),
        ("", None, "a", False),
        ("%", None, "", True),
        ("%%", None, "abc", True),
        ("a%", None, "a", True),
        ("%a", None, "ba", True),
        ("a%a", None, "a", False),  # first and last segments may not overlap
        ("a%a", None, "aa", True),
        ("_%_", None, "x", False),
        ("_%_", None, "xy", True),
        ("ab%ba", None, "aba", False),
        ("%ab%ab%", None, "xabyab", True),
        ("%ab%ab%", None, "xaab", False),
        ("\\%%", "\\", "%x", True),
        ("\\%%", "\\", "x%", False),
        ("a\\_b", "\\", "a_b", True),
        ("a\\_b", "\\", "axb", False),
        ("!!%", "!", "!yes", True),
        ("line_end", None, "line\nend", True),  # '_' matches any character, newline too
    ],
)
def test_segments(pattern: str, escape: str | None, text: str, expected: bool) -> None:
    """Item 14 LIKE with ESCAPE: boundary cases of the segment matcher."""
    assert compile_like(pattern, escape)(text) is expected
    assert _reference(pattern, escape, text) is expected


_PATTERN = st.lists(st.sampled_from(list("ab%_!")), max_size=10).map("".join)
_TEXT = st.lists(st.sampled_from(list("ab!_%")), max_size=12).map("".join)


@settings(max_examples=1500, deadline=2000)
@given(_PATTERN, st.sampled_from([None, "!"]), _TEXT)
def test_matcher_agrees_with_reference(pattern: str, escape: str | None, text: str) -> None:
    """Item 14 LIKE: the linear matcher gives the definition's answer on small inputs."""
    assert compile_like(pattern, escape)(text) is _reference(pattern, escape, text)
