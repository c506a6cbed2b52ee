"""Recursive-descent parser for the selector grammar (JMS 1.1, seed 000 l.2744-2779 and
seed 004 l.6640-6706; README decision 3).

Precedence, lowest first: OR; AND; NOT; comparison / [NOT] BETWEEN / [NOT] IN / [NOT] LIKE /
IS [NOT] NULL; + -; * /; unary + -. Static checks done here (each reported with its position):
an exact literal outside the Java ``long`` range, nesting deeper than :data:`MAX_DEPTH`, ``IN`` lists of anything but string literals,
a LIKE pattern or ESCAPE that is not a string literal (ESCAPE must be one character), NULL used
as a value, a numeric or string literal used where a condition is required, and a condition
used as an arithmetic operand.
"""

from __future__ import annotations

from relaymq.selector import ast
from relaymq.selector.errors import SelectorError
from relaymq.selector.lexer import Kind, Token, tokenize

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

# Static categories used for the checks above. "any" is an identifier: its type is only known
# per message, so it is accepted everywhere and checked at run time (UNKNOWN on mismatch).
_BOOL, _NUM, _STR, _ANY = "condition", "number", "string", "any"

_COMPARISONS = ("=", "<>", "<", ">", "<=", ">=")

#: Deepest nesting accepted: parentheses, NOT and unary signs inside one another, and the depth
#: of the syntax tree (``a + a + ... + a`` nests one level per operator). The parser, the
#: compiler and the compiled closures recurse once per level, so without a bound a hostile or
#: generated selector (2,000 parentheses) would end in RecursionError instead of SelectorError.
#: Real selectors nest a handful of levels.
MAX_DEPTH = 64


def parse(text: str) -> ast.Node:
    """Parse ``text`` into a syntax tree whose value is a condition."""
    if not text or not text.strip():
        raise SelectorError("empty expression", 0, text)
    p = _Parser(text)
    node = p.or_expr()
    if p.tok.kind is not Kind.END:
        raise SelectorError(f"unexpected {_describe(p.tok)}", p.tok.pos, text)
    p.require(node, (_BOOL, _ANY), "the expression must be a condition")
    _check_depth(node, text)
    return node


def _children(node: ast.Node) -> list[ast.Node]:
    if isinstance(node, (ast.And, ast.Or)):
        return list(node.operands)
    return [c for c in (getattr(node, a, None) for a in ("operand", "left", "right", "low", "high")) if isinstance(c, ast.Node)]


def _check_depth(root: ast.Node, text: str) -> None:
    """Refuse a syntax tree deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SelectorError(f"expression nested deeper than {MAX_DEPTH} levels", node.pos, text)
        stack.extend((child, depth + 1) for child in _children(node))


def _describe(tok: Token) -> str:
    if tok.kind is Kind.END:
        return "end of expression"
    return f"{tok.kind.value} {tok.text!r}"


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.tok = self.tokens[0]
        self.types: dict[int, str] = {}
        self.depth = 0  # parentheses, NOT and unary signs currently open

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"expression nested deeper than {MAX_DEPTH} levels", pos)

    # -- token helpers -------------------------------------------------------------------
    def advance(self) -> Token:
        tok = self.tok
        self.i += 1
        self.tok = self.tokens[min(self.i, len(self.tokens) - 1)]
        return tok

    def at_keyword(self, *words: str) -> bool:
        return self.tok.kind is Kind.KEYWORD and self.tok.text in words

    def peek_keyword(self, word: str) -> bool:
        nxt = self.tokens[min(self.i + 1, len(self.tokens) - 1)]
        return nxt.kind is Kind.KEYWORD and nxt.text == word

    def expect_keyword(self, word: str) -> Token:
        if not self.at_keyword(word):
            self.fail(f"expected {word}, found {_describe(self.tok)}")
        return self.advance()

    def fail(self, reason: str, pos: int | None = None) -> None:
        raise SelectorError(reason, self.tok.pos if pos is None else pos, self.text)

    # -- static typing -------------------------------------------------------------------
    def typed(self, node: ast.Node, category: str) -> ast.Node:
        self.types[id(node)] = category
        return node

    def category(self, node: ast.Node) -> str:
        return self.types[id(node)]

    def require(self, node: ast.Node, allowed: tuple[str, ...], reason: str) -> None:
        if self.category(node) not in allowed:
            raise SelectorError(f"{reason} (found a {self.category(node)})", node.pos, self.text)

    # -- grammar -------------------------------------------------------------------------
    def or_expr(self) -> ast.Node:
        first = self.and_expr()
        if not self.at_keyword("OR"):
            return first
        operands = [first]
        while self.at_keyword("OR"):
            self.advance()
            operands.append(self.and_expr())
        for node in operands:
            self.require(node, (_BOOL, _ANY), "OR needs conditions on both sides")
        return self.typed(ast.Or(first.pos, tuple(operands)), _BOOL)

    def and_expr(self) -> ast.Node:
        first = self.not_expr()
        if not self.at_keyword("AND"):
            return first
        operands = [first]
        while self.at_keyword("AND"):
            self.advance()
            operands.append(self.not_expr())
        for node in operands:
            self.require(node, (_BOOL, _ANY), "AND needs conditions on both sides")
        return self.typed(ast.And(first.pos, tuple(operands)), _BOOL)

    def not_expr(self) -> ast.Node:
        if self.at_keyword("NOT"):
            tok = self.advance()
            self.enter(tok.pos)
            operand = self.not_expr()
            self.depth -= 1
            self.require(operand, (_BOOL, _ANY), "NOT needs a condition")
            return self.typed(ast.Not(tok.pos, operand), _BOOL)
        return self.predicate()

    def predicate(self) -> ast.Node:
        left = self.additive()
        tok = self.tok
        if tok.kind is Kind.OP and tok.text in _COMPARISONS:
            self.advance()
            right = self.additive()
            if _BOOL in (self.category(left), self.category(right)) and tok.text not in ("=", "<>"):
                self.fail("boolean values can only be compared with = or <>", tok.pos)
            return self.typed(ast.Compare(left.pos, tok.text, left, right), _BOOL)
        negated = False
        if self.at_keyword("NOT") and (
            self.peek_keyword("BETWEEN") or self.peek_keyword("IN") or self.peek_keyword("LIKE")
        ):
            self.advance()
            negated = True
        if self.at_keyword("BETWEEN"):
            self.advance()
            low = self.additive()
            self.expect_keyword("AND")
            high = self.additive()
            for node in (left, low, high):
                self.require(node, (_NUM, _ANY, _STR), "BETWEEN compares values")
            return self.typed(ast.Between(left.pos, negated, left, low, high), _BOOL)
        if self.at_keyword("IN"):
            self.advance()
            self.require(left, (_STR, _ANY), "IN applies to a string value")
            return self.typed(ast.In(left.pos, negated, left, self.in_list()), _BOOL)
        if self.at_keyword("LIKE"):
            self.advance()
            self.require(left, (_STR, _ANY), "LIKE applies to a string value")
            pattern = self.string_literal("LIKE needs a string literal pattern")
            escape = None
            if self.at_keyword("ESCAPE"):
                self.advance()
                pos = self.tok.pos
                escape = self.string_literal("ESCAPE needs a string literal")
                if len(escape) != 1:
                    self.fail("ESCAPE must be exactly one character", pos)
                _check_escapes(pattern, escape, pos, self.text)
            return self.typed(ast.Like(left.pos, negated, left, pattern, escape), _BOOL)
        if negated:  # pragma: no cover - guarded by peek above
            self.fail("expected BETWEEN, IN or LIKE after NOT")
        if self.at_keyword("IS"):
            self.advance()
            neg = False
            if self.at_keyword("NOT"):
                self.advance()
                neg = True
            self.expect_keyword("NULL")
            return self.typed(ast.IsNull(left.pos, neg, left), _BOOL)
        return left

    def in_list(self) -> tuple[str, ...]:
        if self.tok.kind is not Kind.LPAREN:
            self.fail(f"expected '(' after IN, found {_describe(self.tok)}")
        self.advance()
        values = [self.string_literal("IN lists hold string literals")]
        while self.tok.kind is Kind.COMMA:
            self.advance()
            values.append(self.string_literal("IN lists hold string literals"))
        if self.tok.kind is not Kind.RPAREN:
            self.fail(f"expected ',' or ')' in IN list, found {_describe(self.tok)}")
        self.advance()
        return tuple(values)

    def string_literal(self, reason: str) -> str:
        if self.tok.kind is not Kind.STRING:
            self.fail(f"{reason}, found {_describe(self.tok)}")
        return str(self.advance().value)

    def additive(self) -> ast.Node:
        left = self.multiplicative()
        while self.tok.kind is Kind.OP and self.tok.text in "+-":
            op = self.advance()
            right = self.multiplicative()
            left = self.arith(op, left, right)
        return left

    def multiplicative(self) -> ast.Node:
        left = self.unary()
        while self.tok.kind is Kind.OP and self.tok.text in "*/":
            op = self.advance()
            right = self.unary()
            left = self.arith(op, left, right)
        return left

    def arith(self, op: Token, left: ast.Node, right: ast.Node) -> ast.Node:
        for node in (left, right):
            self.require(node, (_NUM, _ANY), f"'{op.text}' needs numbers")
        return self.typed(ast.Arith(left.pos, op.text, left, right), _NUM)

    def unary(self) -> ast.Node:
        tok = self.tok
        if tok.kind is Kind.OP and tok.text in "+-":
            self.advance()
            nxt = self.tok
            if nxt.kind in (Kind.EXACT, Kind.APPROX):  # fold signed literals (and allow LONG_MIN)
                self.advance()
                value = nxt.value if tok.text == "+" else -nxt.value  # type: ignore[operator]
                return self.number(value, tok.pos, nxt)
            self.enter(tok.pos)
            operand = self.unary()
            self.depth -= 1
            self.require(operand, (_NUM, _ANY), f"unary '{tok.text}' needs a number")
            if tok.text == "+":
                return operand
            return self.typed(ast.Negate(tok.pos, operand), _NUM)
        return self.primary()

    def number(self, value: object, pos: int, tok: Token) -> ast.Node:
        if tok.kind is Kind.EXACT and not LONG_MIN <= value <= LONG_MAX:  # type: ignore[operator]
            self.fail("exact number outside the range of a Java long", pos)
        return self.typed(ast.Literal(pos, value), _NUM)

    def primary(self) -> ast.Node:
        tok = self.tok
        kind = tok.kind
        if kind in (Kind.EXACT, Kind.APPROX):
            self.advance()
            return self.number(tok.value, tok.pos, tok)
        if kind is Kind.STRING:
            self.advance()
            return self.typed(ast.Literal(tok.pos, tok.value), _STR)
        if kind is Kind.IDENT:
            self.advance()
            return self.typed(ast.Ident(tok.pos, tok.text), _ANY)
        if kind is Kind.KEYWORD and tok.text in ("TRUE", "FALSE"):
            self.advance()
            return self.typed(ast.Literal(tok.pos, tok.text == "TRUE"), _BOOL)
        if kind is Kind.KEYWORD and tok.text == "NULL":
            self.fail("NULL is not a value here; test with IS NULL or IS NOT NULL")
        if kind is Kind.LPAREN:
            self.advance()
            self.enter(tok.pos)
            inner = self.or_expr()
            self.depth -= 1
            if self.tok.kind is not Kind.RPAREN:
                self.fail(f"expected ')', found {_describe(self.tok)}")
            self.advance()
            return inner
        if kind is Kind.KEYWORD:
            self.fail(f"expected a value, found keyword {tok.text} (reserved words cannot be identifiers)")
        self.fail(f"expected a value, found {_describe(tok)}")
        raise AssertionError  # pragma: no cover


def _check_escapes(pattern: str, escape: str, pos: int, text: str) -> None:
    """An escape character must be followed by ``_``, ``%`` or itself."""
    i = 0
    while i < len(pattern):
        if pattern[i] == escape:
            if i + 1 >= len(pattern) or pattern[i + 1] not in ("_", "%", escape):
                raise SelectorError(
                    "the ESCAPE character must be followed by '_', '%' or itself in the pattern",
                    pos,
                    text,
                )
            i += 2
        else:
            i += 1
