"""Selector evaluation: every operator, NULL and type-mismatch semantics (three-valued logic),
LIKE with ESCAPE. formats-and-jms.md item 14; seed 000 l.2744-2779; seed 004 l.6664-6690."""

from __future__ import annotations

import itertools

import pytest

from relaymq.selector import UntypedText, compile_selector

T, F, U = True, False, None
# a condition that is TRUE, FALSE or UNKNOWN depending on the value of x
_COND = {T: {"x": 1}, F: {"x": 0}, U: {}}


def _ev(text: str, values: dict[str, object]) -> bool | None:
    return compile_selector(text).evaluate(values)


@pytest.mark.parametrize(("a", "b"), list(itertools.product([T, F, U], repeat=2)))
def test_and_or_truth_tables(a: bool | None, b: bool | None) -> None:
    """Three-valued AND/OR (JMS 1.1 tables; README decision 3)."""
    values = {"p": {T: 1, F: 0, U: None}[a], "q": {T: 1, F: 0, U: None}[b]}
    values = {k: v for k, v in values.items() if v is not None}
    expected_and = F if F in (a, b) else (U if U in (a, b) else T)
    expected_or = T if T in (a, b) else (U if U in (a, b) else F)
    assert _ev("p = 1 AND q = 1", values) is expected_and
    assert _ev("p = 1 OR q = 1", values) is expected_or


@pytest.mark.parametrize("a", [T, F, U])
def test_not_truth_table(a: bool | None) -> None:
    """NOT UNKNOWN is UNKNOWN; only TRUE selects (item 14)."""
    result = _ev("NOT x = 1", _COND[a])
    assert result is (None if a is None else not a)
    assert compile_selector("NOT x = 1").matches(_COND[a]) is (a is False)


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        ("=", 5, 5, T), ("=", 5, 6, F), ("<>", 5, 6, T), ("<>", 5, 5, F),
        ("<", 4, 5, T), ("<", 5, 5, F), (">", 6, 5, T), (">", 5, 5, F),
        ("<=", 5, 5, T), ("<=", 6, 5, F), (">=", 5, 5, T), (">=", 4, 5, F),
        ("=", 5, 5.0, T), ("<", 4.5, 5, T),  # int and float compare numerically
        ("=", "blue", "blue", T), ("=", "blue", "Blue", F), ("<>", "a", "b", T),
        ("<", "a", "b", T), (">", "WMBRK2", "WMBRK123456", T),  # string ordering (seed 000 l.2806)
        ("=", True, True, T), ("<>", True, False, T),
        ("=", 5, "5", U), ("=", "5", 5, U), ("=", True, 1, U), ("<", True, False, U),
        ("=", None, 5, U), ("<>", None, 5, U), ("=", 5, None, U),
    ],
)
def test_comparison_operators(op: str, a: object, b: object, expected: bool | None) -> None:
    """Comparison of values; different types and NULL give UNKNOWN (item 14; seed 004 l.6678)."""
    values = {k: v for k, v in {"a": a, "b": b}.items() if v is not None}
    assert _ev(f"a {op} b", values) is expected


def test_missing_property_is_null() -> None:
    """seed 004 l.6671: a reference to a property that does not exist is NULL."""
    assert _ev("colour IS NULL", {}) is True
    assert _ev("colour IS NOT NULL", {}) is False
    assert _ev("colour IS NOT NULL", {"colour": "red"}) is True
    assert _ev("colour = 'red'", {}) is None


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("a + b = 7", {"a": 3, "b": 4}, T),
        ("a - b = -1", {"a": 3, "b": 4}, T),
        ("a * b = 12", {"a": 3, "b": 4}, T),
        ("a / b = 2", {"a": 7, "b": 3}, T),  # integer division
        ("a / b = -2", {"a": -7, "b": 3}, T),  # truncates toward zero as Java does
        ("a / b = 2.5", {"a": 5.0, "b": 2}, T),
        ("a / b = 1", {"a": 1, "b": 0}, U),  # division by zero is UNKNOWN
        ("a + 1 = 2", {}, U),
        ("a + 1 = 2", {"a": "1"}, U),  # a string in arithmetic is UNKNOWN
        ("-a = -3", {"a": 3}, T),
        ("-a = 3", {"a": "x"}, U),
        ("+a = 3", {"a": 3}, T),
    ],
)
def test_arithmetic(text: str, values: dict[str, object], expected: bool | None) -> None:
    """Arithmetic operators with NULL and type rules (item 14)."""
    assert _ev(text, values) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("n BETWEEN 2 AND 4", 2, T), ("n BETWEEN 2 AND 4", 4, T), ("n BETWEEN 2 AND 4", 5, F),
        ("n BETWEEN 2 AND 4", 1.5, F), ("n NOT BETWEEN 2 AND 4", 5, T), ("n NOT BETWEEN 2 AND 4", 3, F),
        ("n BETWEEN 2 AND 4", None, U), ("n NOT BETWEEN 2 AND 4", None, U), ("n BETWEEN 2 AND 4", "3", U),
    ],
)
def test_between(text: str, value: object, expected: bool | None) -> None:
    """BETWEEN is inclusive; NOT BETWEEN negates; NULL is UNKNOWN (seed 000 l.2755)."""
    assert _ev(text, {} if value is None else {"n": value}) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("c IN ('UK', 'US')", "UK", T), ("c IN ('UK', 'US')", "FR", F),
        ("c NOT IN ('UK', 'US')", "FR", T), ("c NOT IN ('UK', 'US')", "US", F),
        ("c IN ('UK')", None, U), ("c NOT IN ('UK')", None, U), ("c IN ('1')", 1, U),
    ],
)
def test_in(text: str, value: object, expected: bool | None) -> None:
    """IN / NOT IN over string literals; NULL is UNKNOWN (item 14)."""
    assert _ev(text, {} if value is None else {"c": value}) is expected


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("'Smit%'", "Smith", T), ("'Smit%'", "Smit", T), ("'Smit%'", "smith", F),
        ("'12%3'", "123", T), ("'12%3'", "12993", T), ("'12%3'", "1234", F),
        ("'l_se'", "lose", T), ("'l_se'", "loose", F), ("'%'", "", T),
        ("'\\_%' ESCAPE '\\'", "_foo", T), ("'\\_%' ESCAPE '\\'", "bar", F),
        ("'100!%' ESCAPE '!'", "100%", T), ("'100!%' ESCAPE '!'", "1000", F),
        ("'a!!b' ESCAPE '!'", "a!b", T), ("'a.b*'", "a.b*", T), ("'a.b*'", "axb", F),
        ("'x%'", "x\nline", T),
    ],
)
def test_like_with_escape(pattern: str, value: str, expected: bool) -> None:
    """LIKE: _ one char, % any sequence, ESCAPE makes the next char literal (item 14)."""
    assert _ev(f"s LIKE {pattern}", {"s": value}) is expected
    assert _ev(f"s NOT LIKE {pattern}", {"s": value}) is (not expected)


def test_like_on_null_or_non_string_is_unknown() -> None:
    """LIKE on NULL or a number is UNKNOWN (item 14)."""
    assert _ev("s LIKE 'a%'", {}) is None
    assert _ev("s NOT LIKE 'a%'", {"s": 5}) is None


def test_boolean_identifier_as_condition() -> None:
    """A boolean property alone is a condition; a non-boolean is UNKNOWN."""
    assert _ev("flag", {"flag": True}) is True
    assert _ev("NOT flag", {"flag": False}) is True
    assert _ev("flag", {"flag": 1}) is None
    assert _ev("flag = TRUE", {"flag": True}) is True


def test_untyped_text_compares_as_the_other_side() -> None:
    """README decision 3 content filters: XML body text compares numerically with numbers."""
    assert _ev("p > 100", {"p": UntypedText("150")}) is True
    assert _ev("p > 100", {"p": UntypedText("abc")}) is None
    assert _ev("p = 'x'", {"p": UntypedText("x")}) is True
    assert _ev("p + 1 = 3", {"p": UntypedText("2")}) is True
    assert _ev("p = TRUE", {"p": UntypedText("true")}) is True
    assert _ev("p > 100", {"p": "150"}) is None  # a typed string never converts


def test_resolver_callable_is_used() -> None:
    """Identifiers resolve through a resolver callable (issue 3 suggested order)."""
    seen: list[str] = []

    def resolve(name: str) -> object:
        seen.append(name)
        return {"JMSPriority": 7, "colour": "blue"}.get(name)

    assert compile_selector("JMSPriority > 4 AND colour = 'blue'").matches(resolve)
    assert seen == ["JMSPriority", "colour"]


def test_and_short_circuits_on_false() -> None:
    """FALSE AND anything is FALSE without reading the rest."""
    seen: list[str] = []

    def resolve(name: str) -> object:
        seen.append(name)
        return 0

    assert compile_selector("a = 1 AND b = 1").evaluate(resolve) is False
    assert seen == ["a"]


# -- documented extensions of JMS 1.1 (docs/formats.md 'Selector language') ---------------------
@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("s BETWEEN 'b' AND 'd'", "c", T), ("s BETWEEN 'b' AND 'd'", "d", T), ("s BETWEEN 'b' AND 'd'", "da", F),
        ("s NOT BETWEEN 'b' AND 'd'", "a", T), ("s BETWEEN 'b' AND 'd'", 3, U), ("s BETWEEN 1 AND 'd'", "c", U),
    ],
)
def test_extension_between_on_strings(text: str, value: object, expected: bool | None) -> None:
    """Extension (JMS 1.1 allows arithmetic BETWEEN only): strings compare by code point, as
    the orderings do (seed 000 l.2806 'JMSMessageID > WMBRK123456'); mixed types are UNKNOWN."""
    assert _ev(text, {"s": value}) is expected


def test_extension_is_null_on_expressions() -> None:
    """Extension (JMS 1.1: identifier IS NULL only): any value expression; arithmetic with a
    NULL operand (or dividing by zero) is NULL."""
    assert _ev("a + b IS NULL", {"a": 1}) is T
    assert _ev("a + b IS NOT NULL", {"a": 1, "b": 2}) is T
    assert _ev("a / 0 IS NULL", {"a": 1}) is T
    assert _ev("'x' IS NULL", {}) is F


def test_extension_jmsredelivered_and_jmsexpiration_are_selectable() -> None:
    """Extension (JMS 1.1 restricts header references to six fields; seed 004 l.6664-6670):
    the seed's JMSInput node has a Redelivered selector (seed 000 l.2806) and MQe selects on
    JMSExpiration (seed 004 l.6700), so both read their values; JMSExpiration 0 means never."""
    from relaymq.message import JMSMessage
    from relaymq.selector.resolvers import jms_resolver

    jms = JMSMessage(JMSRedelivered=True, JMSExpiration=1_700_000_000_000)
    assert compile_selector("JMSRedelivered = TRUE AND JMSExpiration > 0").evaluate(jms_resolver(jms)) is T
    assert compile_selector("JMSRedelivered").evaluate(jms_resolver(JMSMessage())) is F
    assert compile_selector("JMSExpiration = 0").evaluate(jms_resolver(JMSMessage())) is T
    assert compile_selector("JMSDestination IS NULL AND JMSReplyTo IS NULL").evaluate(jms_resolver(jms)) is T
