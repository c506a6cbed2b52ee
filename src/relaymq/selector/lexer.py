"""Tokens of the selector language (JMS 1.1 selector syntax, seed 000 l.2744-2779, seed 004
l.6640-6706), plus dotted references into the message tree (README decision 3).

Keywords are case-insensitive; identifiers are case-sensitive. A dotted name such as
``Root.MQRFH2.usr.colour`` is one IDENT token: the dots join name segments, and a segment
after a dot may be any word (``Body.In`` is a path, not the IN operator).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from relaymq.selector.errors import SelectorError


class Kind(Enum):
    IDENT = "identifier"
    STRING = "string literal"
    EXACT = "exact number"
    APPROX = "approximate number"
    KEYWORD = "keyword"
    OP = "operator"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    END = "end of expression"


#: Words reserved by JMS 1.1 (they can never be identifiers), plus ESCAPE which JMS also reserves.
KEYWORDS = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "NULL", "TRUE", "FALSE", "ESCAPE"}
)

_OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/")


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # keywords upper-cased; strings unquoted; others as written
    pos: int
    value: object = None  # parsed literal value for STRING / EXACT / APPROX


_DIGITS = frozenset("0123456789")


def _is_digit(ch: str) -> bool:
    """Numeric literals are written in ASCII digits only (JMS 1.1 takes them from Java's
    literal syntax): ``²`` or ``٣`` is not a number, whatever Unicode says."""
    return ch in _DIGITS


def _is_ident_start(ch: str) -> bool:
    # Java letters include '_' and '$' (seed 004 l.6654).
    return ch.isalpha() or ch in "_$"


def _is_ident_part(ch: str) -> bool:
    # Java identifier parts: letters, decimal digits of any script, '_' and '$'. Other
    # "numeric" characters such as superscripts are not.
    return ch.isalpha() or ch.isdecimal() or ch in "_$"


#: Single-character tokens.
_PUNCTUATION = {"(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA}


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens; the list always ends with an END token.

    Raises :class:`SelectorError` with the position of the first character that cannot start
    a token, or of an unterminated string literal.
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "'":
            i = _scan_string(text, i, tokens)
        elif _is_digit(ch) or (ch == "." and i + 1 < n and _is_digit(text[i + 1])):
            i = _scan_number(text, i, tokens)
        elif _is_ident_start(ch):
            i = _scan_word(text, i, tokens)
        elif ch in _PUNCTUATION:
            tokens.append(Token(_PUNCTUATION[ch], ch, i))
            i += 1
        else:
            i = _scan_operator(text, i, tokens)
    tokens.append(Token(Kind.END, "", n))
    return tokens


def _scan_string(text: str, i: int, tokens: list[Token]) -> int:
    """A string literal from its opening quote; ``''`` is a quote inside it."""
    start, n = i, len(text)
    i += 1
    parts: list[str] = []
    while True:
        j = text.find("'", i)
        if j < 0:
            raise SelectorError("unterminated string literal", start, text)
        parts.append(text[i:j])
        if j + 1 < n and text[j + 1] == "'":
            parts.append("'")
            i = j + 2
            continue
        s = "".join(parts)
        tokens.append(Token(Kind.STRING, s, start, s))
        return j + 1


def _scan_word(text: str, i: int, tokens: list[Token]) -> int:
    """An identifier (a dotted reference is one) or a keyword."""
    start, n = i, len(text)
    i += 1
    while i < n:
        if _is_ident_part(text[i]) or text[i] == "." and i + 1 < n and _is_ident_start(text[i + 1]):
            i += 1
        elif text[i] == "." :
            raise SelectorError("a '.' in a reference must be followed by a name", i, text)
        else:
            break
    word = text[start:i]
    if "." not in word and word.isascii() and word.upper() in KEYWORDS:
        tokens.append(Token(Kind.KEYWORD, word.upper(), start))
    else:
        tokens.append(Token(Kind.IDENT, word, start))
    return i


def _scan_operator(text: str, i: int, tokens: list[Token]) -> int:
    for op in _OPERATORS:
        if text.startswith(op, i):
            tokens.append(Token(Kind.OP, op, i))
            return i + len(op)
    raise SelectorError(f"unexpected character {text[i]!r}", i, text)


def _scan_hex(text: str, i: int, tokens: list[Token]) -> int:
    """A hexadecimal exact literal ``0x1F`` (with an optional long suffix)."""
    n, start = len(text), i
    i += 2
    while i < n and text[i] in "0123456789abcdefABCDEF":
        i += 1
    if i == start + 2:
        raise SelectorError("hexadecimal literal needs digits", start, text)
    if i < n and text[i] in "lL":
        i += 1
    tokens.append(Token(Kind.EXACT, text[start:i], start, int(text[start + 2 : i].rstrip("lL"), 16)))
    return _no_word_after(text, i)


def _skip_digits(text: str, i: int) -> int:
    while i < len(text) and _is_digit(text[i]):
        i += 1
    return i


def _scan_exponent(text: str, i: int) -> int:
    """The end of the exponent that starts at ``i`` (an ``e`` or ``E``)."""
    j = i + 1
    if j < len(text) and text[j] in "+-":
        j += 1
    if j < len(text) and _is_digit(text[j]):
        return _skip_digits(text, j)
    raise SelectorError("exponent needs digits", i, text)


def _scan_number(text: str, i: int, tokens: list[Token]) -> int:
    """Scan an exact (``57``) or approximate (``7.``, ``-57.9E2`` without sign, ``5E2``) literal.

    Signs are unary operators in the grammar; a trailing ``L``/``l`` (Java long) or ``F``/``D``
    suffix is accepted as JMS providers do. Hexadecimal ``0x1F`` is accepted as an exact number.
    """
    if text.startswith(("0x", "0X"), i):
        return _scan_hex(text, i, tokens)
    n, start = len(text), i
    i = _skip_digits(text, i)
    approx = i < n and text[i] == "."
    if approx:
        i = _skip_digits(text, i + 1)
    if i < n and text[i] in "eE":
        approx = True
        i = _scan_exponent(text, i)
    literal = text[start:i]
    if i < n and text[i] in "fFdD":
        approx = True
        i += 1
    elif not approx and i < n and text[i] in "lL":
        i += 1
    if approx:
        value: object = float(literal)
        tokens.append(Token(Kind.APPROX, text[start:i], start, value))
    else:
        tokens.append(Token(Kind.EXACT, text[start:i], start, int(literal)))
    return _no_word_after(text, i)


def _no_word_after(text: str, i: int) -> int:
    if i < len(text) and (_is_ident_part(text[i]) or text[i] == "."):
        raise SelectorError(f"unexpected character {text[i]!r} after number", i, text)
    return i
