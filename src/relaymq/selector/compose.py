"""Build one selector from a JMSInput node's selector properties (seed 000 l.2760-2806).

The node has a free-form property selector plus one property per header field whose
identifier is implicit: the user writes ``>= 5 AND <= 8`` for Priority, ``PERSISTENT`` for
Delivery Mode, ``BETWEEN 1057576423231 AND 10575788993265`` for the timestamp. Each part is
completed with its identifier and the parts are joined with AND, each in parentheses (item 14).

Completion rules: at the start of a part and after a top-level AND/OR, an operator
(comparison, BETWEEN, NOT BETWEEN, IN, LIKE, IS) gets the identifier in front; a part that is
a single bare value becomes ``identifier = value``; a bare word where a value is expected is a
string (the seed writes ``> WMBRK123456`` and ``PERSISTENT`` unquoted), except TRUE/FALSE.
"""

from __future__ import annotations

from relaymq.selector.compiled import compile_selector
from relaymq.selector.lexer import Kind, Token, tokenize

#: Node property -> the header identifier it is implicitly about.
HEADER_SELECTOR_IDENTIFIERS = {
    "timestamp": "JMSTimestamp",
    "delivery_mode": "JMSDeliveryMode",
    "priority": "JMSPriority",
    "message_id": "JMSMessageID",
    "redelivered": "JMSRedelivered",
    "correlation_id": "JMSCorrelationID",
}

_STARTERS_OP = ("=", "<>", "<", ">", "<=", ">=")
_STARTERS_KW = ("BETWEEN", "IN", "LIKE", "IS")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _render(tok: Token) -> str:
    if tok.kind is Kind.STRING:
        return _quote(tok.text)
    return tok.text


def _is(tok: Token | None, kind: Kind, words: tuple[str, ...]) -> bool:
    return tok is not None and tok.kind is kind and tok.text in words


def _starts_clause(tok: Token) -> bool:
    """A clause starting with ``tok`` lacks its identifier (``>= 5``, ``BETWEEN 1 AND 3``)."""
    return _is(tok, Kind.OP, _STARTERS_OP) or _is(tok, Kind.KEYWORD, (*_STARTERS_KW, "NOT"))


def _is_value(tok: Token, prev: Token | None) -> bool:
    """A bare word after a comparison or BETWEEN's bounds is a string value, not an identifier."""
    return tok.kind is Kind.IDENT and (
        _is(prev, Kind.OP, _STARTERS_OP) or _is(prev, Kind.KEYWORD, ("BETWEEN", "AND")))


def complete_header_selector(identifier: str, fragment: str) -> str:
    """``('JMSPriority', '>= 5 AND <= 8')`` -> ``JMSPriority >= 5 AND JMSPriority <= 8``."""
    tokens = [t for t in tokenize(fragment) if t.kind is not Kind.END]
    if len(tokens) == 1 and tokens[0].kind is not Kind.OP:
        tok = tokens[0]
        value = _quote(tok.text) if tok.kind is Kind.IDENT else _render(tok)
        return f"{identifier} = {value}"
    out: list[str] = []
    depth = 0
    expect_start = True
    prev: Token | None = None
    for tok in tokens:
        if expect_start and _starts_clause(tok):
            out.append(identifier)
        expect_start = False
        out.append(_quote(tok.text) if _is_value(tok, prev) else _render(tok))
        if tok.kind is Kind.LPAREN:
            depth += 1
        elif tok.kind is Kind.RPAREN:
            depth -= 1
        # ``BETWEEN a AND b``: the AND belongs to BETWEEN, not a new clause.
        elif (_is(tok, Kind.KEYWORD, ("AND", "OR")) and depth == 0
              and not (tok.text == "AND" and _inside_between(out))):
            expect_start = True
        prev = tok
    return " ".join(out)


def _inside_between(out: list[str]) -> bool:
    """True when the most recent clause has a BETWEEN whose AND has not been seen yet."""
    seen_between = False
    for word in reversed(out[:-1]):
        upper = word.upper()
        if upper == "BETWEEN":
            seen_between = True
            break
        if upper in ("AND", "OR"):
            break
    return seen_between


def compose_selector(property_selector: str | None = None, **header_parts: str | None) -> str:
    """Join the free-form selector and the header selectors with AND, each in parentheses.

    ``header_parts`` keys are those of :data:`HEADER_SELECTOR_IDENTIFIERS`. The result is
    compiled once here so that a bad part is reported before the node starts.
    """
    parts: list[str] = []
    if property_selector and property_selector.strip():
        parts.append(property_selector.strip())
    for key, fragment in header_parts.items():
        if key not in HEADER_SELECTOR_IDENTIFIERS:
            raise KeyError(f"unknown header selector {key!r}")
        if fragment and fragment.strip():
            parts.append(complete_header_selector(HEADER_SELECTOR_IDENTIFIERS[key], fragment))
    if not parts:
        return ""
    text = parts[0] if len(parts) == 1 else " AND ".join(f"({p})" for p in parts)
    compile_selector(text)
    return text
