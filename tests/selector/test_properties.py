"""Property-based checks of the selector language: the compiler never raises anything but
SelectorError, and evaluation obeys the three-valued laws (README decision 3; item 14)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.values import and3, compare, not3, or3

_ALPHABET = st.sampled_from(list("ab =<>()'.,%_+-*/!019EeNOTANDLIKEINSBW \t\n") + ["AND", "OR", "NOT", "IN", "LIKE", "IS NULL", "BETWEEN", "ESCAPE"])


def _compiles_or_selector_error(text: str) -> None:
    try:
        compile_selector(text)
    except SelectorError as exc:
        assert 0 <= exc.position <= len(text)


@settings(max_examples=300, deadline=2000)
@given(st.lists(_ALPHABET, max_size=25).map("".join))
def test_compiler_raises_only_selector_errors(text: str) -> None:
    """Issue 3: an invalid expression gives a SelectorError with a position inside the text."""
    _compiles_or_selector_error(text)


# Any Unicode character (digits, superscripts, letters and separators of every script) mixed
# with the grammar's own words, so that non-ASCII text reaches every lexer and parser state.
_UNICODE = st.one_of(st.characters(), _ALPHABET, st.sampled_from(["\u00b2", "\u0663", "\uff11", "\u2167", "\u0131n", "\u00df"]))


@settings(max_examples=600, deadline=2000)
@given(st.lists(_UNICODE, max_size=30).map("".join))
def test_compiler_on_full_unicode_raises_only_selector_errors(text: str) -> None:
    """Issue 3 'Bad input' for the selector: no ValueError from int(), no other exception."""
    _compiles_or_selector_error(text)


@settings(max_examples=100, deadline=5000)
@given(st.lists(st.sampled_from(["(", "NOT ", "-", "+", " a + ", "a * ", "(a = 1) = ", ")"]), min_size=60, max_size=400).map("".join))
def test_deep_nesting_is_a_selector_error_not_recursion(text: str) -> None:
    """Issue 3: nesting of any depth gives a result or a SelectorError, never RecursionError."""
    _compiles_or_selector_error(text + " a = 1")


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.sampled_from(["a", "b", ""]))
_TRI = st.sampled_from([True, False, None])


@settings(max_examples=200, deadline=2000)
@given(_TRI, _TRI)
def test_de_morgan_holds_in_three_valued_logic(a: bool | None, b: bool | None) -> None:
    """NOT (a AND b) = NOT a OR NOT b under Kleene logic (item 14 three-valued logic)."""
    assert not3(and3(a, b)) == or3(not3(a), not3(b))
    assert not3(or3(a, b)) == and3(not3(a), not3(b))


@settings(max_examples=200, deadline=2000)
@given(_VALUES, _VALUES, st.sampled_from(["=", "<>", "<", ">", "<=", ">="]))
def test_compiled_comparison_agrees_with_rules(a: object, b: object, op: str) -> None:
    """The specialised closure for `ident op literal` equals the general comparison rule."""
    if b is None or isinstance(b, bool):
        return
    literal = repr(b) if not isinstance(b, str) else "'" + b + "'"
    s = compile_selector(f"x {op} {literal}")
    values = {} if a is None else {"x": a}
    assert s.evaluate(values) == compare(op, a, b)
