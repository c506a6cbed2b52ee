"""Selector grammar and static errors: formats-and-jms.md item 14; README decision 3;
seed 000 l.2744-2779; seed 004 l.6640-6706."""

from __future__ import annotations

import pytest

from relaymq.selector import SelectorError, compile_selector
from relaymq.selector.lexer import Kind, tokenize


def test_literals_are_tokenized_with_values() -> None:
    """seed 004 l.6644-6650: string literals with '' escapes, exact and approximate numbers."""
    toks = tokenize("'it''s' 57 -957 7. -95.7 +6.2 7E3 -57.9E2 TRUE false")
    kinds = [(t.kind, t.value) for t in toks if t.kind in (Kind.STRING, Kind.EXACT, Kind.APPROX)]
    assert kinds == [
        (Kind.STRING, "it's"), (Kind.EXACT, 57), (Kind.EXACT, 957), (Kind.APPROX, 7.0),
        (Kind.APPROX, 95.7), (Kind.APPROX, 6.2), (Kind.APPROX, 7000.0), (Kind.APPROX, 5790.0),
    ]
    assert [t.text for t in toks if t.kind is Kind.KEYWORD] == ["TRUE", "FALSE"]


def test_keywords_are_case_insensitive_and_identifiers_case_sensitive() -> None:
    """seed 004 l.6660-6662: identifiers are case-sensitive; keywords are not."""
    s = compile_selector("colour = 'x' and not Colour is null")
    assert s.matches({"colour": "x"}) is False  # Colour is NULL, so NOT (Colour IS NULL) is false
    assert s.matches({"colour": "x", "Colour": "y"}) is True


@pytest.mark.parametrize("word", ["NULL", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"])
def test_reserved_words_cannot_be_identifiers(word: str) -> None:
    """seed 000 l.2749 / seed 004 l.6657-6659: these names are not identifiers."""
    with pytest.raises(SelectorError):
        compile_selector(f"{word} = 'x'")


@pytest.mark.parametrize("word", ["TRUE", "FALSE", "true", "False"])
def test_true_false_are_literals_not_identifiers(word: str) -> None:
    """seed 004 l.6657: TRUE/FALSE are boolean literals, never looked up as properties."""
    seen: list[str] = []
    result = compile_selector(f"{word} = flag").evaluate(lambda n: seen.append(n) or True)
    assert seen == ["flag"]
    assert result is (word.upper() == "TRUE")


def test_dotted_references_are_one_identifier() -> None:
    """README decision 3: dotted references into the tree; a keyword after a dot is a name."""
    s = compile_selector("Body.In.Like = 'x' AND Root.MQMD.Priority > 3")
    assert s.identifiers == {"Body.In.Like", "Root.MQMD.Priority"}


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", 0, "empty"),
        ("a = ", 4, "expected a value"),
        ("a = 'abc", 4, "unterminated string"),
        ("a LIKE 5", 7, "string literal pattern"),
        ("a LIKE 'x' ESCAPE 'ab'", 18, "exactly one character"),
        ("a LIKE 'x!y' ESCAPE '!'", 20, "ESCAPE character must be followed"),
        ("a IN (1, 2)", 6, "string literals"),
        ("a IN 'x'", 5, "expected '('"),
        ("a BETWEEN 1", 11, "expected AND"),
        ("a = NULL", 4, "IS NULL"),
        ("1 + 2", 0, "must be a condition"),
        ("a = 1 AND 5", 10, "AND needs conditions"),
        ("a > TRUE", 2, "boolean values"),
        ("'x' + 1 = 2", 0, "needs numbers"),
        ("9223372036854775808 > a", 0, "Java long"),
        ("a = 1 )", 6, "unexpected )"),
        ("(a = 1", 6, "expected ')'"),
        ("a # 1", 2, "unexpected character"),
        ("a. b = 1", 1, "followed by a name"),
        ("a = 12abc", 6, "after number"),
        ("a = 1e", 5, "exponent"),
        ("JMSPriority > AND", 14, "keyword AND"),
        ("a = \u00b2", 4, "unexpected character"),  # superscript two is not a digit
        ("a = \u0663", 4, "unexpected character"),  # nor is Arabic-Indic three: literals are ASCII
        ("a = 1\uff10", 5, "after number"),  # fullwidth zero after an ASCII digit
    ],
)
def test_invalid_expressions_report_position_and_reason(text: str, position: int, fragment: str) -> None:
    """Issue 3 'Selector language': an invalid expression gives its position and the reason."""
    with pytest.raises(SelectorError) as info:
        compile_selector(text)
    assert info.value.position == position, str(info.value)
    assert fragment in info.value.reason
    assert info.value.reason_code == 3150  # pubsub.md item 17/36: FILTER_ERROR


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("(" * 2000 + "a = 1" + ")" * 2000, 64),
        ("NOT " * 2000 + "a", 256),
        ("a = " + "- " * 2000 + "b", 132),
        ("a = " + " + ".join(["b"] * 2000) + " ", None),
    ],
)
def test_deep_nesting_is_a_selector_error_with_position(text: str, position: int | None) -> None:
    """Issue 3: 2,000 parentheses / NOTs / unary minus / chained operators give a SelectorError
    with the position of the first level past the limit, not a RecursionError."""
    with pytest.raises(SelectorError) as info:
        compile_selector(text)
    assert "nested deeper than 64" in info.value.reason
    if position is not None:
        assert info.value.position == position
    assert 0 <= info.value.position < len(text)


def test_nesting_up_to_the_limit_compiles_and_evaluates() -> None:
    """The depth limit leaves room for any realistic selector: 60 levels work end to end."""
    s = compile_selector("(" * 60 + "a = 1" + ")" * 60 + " AND " + "NOT " * 31 + "b")  # odd: TRUE for b FALSE
    assert s.evaluate({"a": 1, "b": False}) is True


def test_unicode_letters_and_digits_in_identifiers() -> None:
    """seed 004 l.6654: identifiers are Java identifiers (letters and digits of any script)."""
    s = compile_selector("couleur\u0663 = 'bleu' AND \u00e9t\u00e9 = 1")
    assert s.matches({"couleur\u0663": "bleu", "\u00e9t\u00e9": 1})


def test_long_min_is_accepted_as_a_negative_literal() -> None:
    """seed 004 l.6646: numbers in the range of Java long are supported."""
    s = compile_selector("a = -9223372036854775808")
    assert s.matches({"a": -(2**63)})


def test_error_pointer_marks_the_position() -> None:
    """Issue 3: errors carry position; the pointer is what the CLI can show."""
    with pytest.raises(SelectorError) as info:
        compile_selector("a = = 1")
    assert info.value.pointer().splitlines()[1] == "    ^"


def test_compiled_once_and_cached() -> None:
    """README decision 3: compiled once; the same text gives the same compiled object."""
    assert compile_selector("x = 1") is compile_selector("x = 1")


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        # AND binds tighter than OR
        ("a = 1 OR a = 2 AND b = 3", {"a": 1, "b": 0}, True),
        ("(a = 1 OR a = 2) AND b = 3", {"a": 1, "b": 0}, False),
        # NOT binds tighter than AND
        ("NOT a = 1 AND b = 2", {"a": 2, "b": 2}, True),
        ("NOT (a = 1 AND b = 2)", {"a": 1, "b": 3}, True),
        # * / before + -, unary minus highest
        ("2 + 3 * a = 14", {"a": 4}, True),
        ("(2 + 3) * a = 20", {"a": 4}, True),
        ("-a * 2 = -8", {"a": 4}, True),
        ("a - 2 - 1 = 1", {"a": 4}, True),  # left associative
        ("a / 2 / 2 = 1", {"a": 4}, True),
    ],
)
def test_precedence(text: str, values: dict[str, object], expected: bool) -> None:
    """JMS 1.1 precedence (seed 000 l.2744-2779): OR < AND < NOT < comparison < +- < */ < unary."""
    assert compile_selector(text).matches(values) is expected
