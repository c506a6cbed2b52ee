"""Compile a selector syntax tree once into nested Python closures.

Each closure takes a *resolver* - ``resolve(name) -> value or None`` - and returns ``True``,
``False`` or ``None`` (UNKNOWN). The resolver is the only link to a message, which keeps this
package independent of how a message is stored: a JMS message, the message tree, a plain
``dict`` all work (see :mod:`relaymq.selector.resolvers`).

The common shape ``identifier <op> literal`` gets its own closure with a fast path for the
case where both sides are numbers or both strings, because that is what consumers and
subscriptions evaluate for every message.
"""

from __future__ import annotations

from collections.abc import Callable

from relaymq.selector import ast
from relaymq.selector.like import compile_like
from relaymq.selector.values import (
    ORDERING,
    and3,
    arithmetic,
    compare,
    not3,
    numeric,
    or3,
    truth,
)

Resolver = Callable[[str], object]
Evaluator = Callable[[Resolver], object]


def compile_node(node: ast.Node) -> Evaluator:
    """Turn ``node`` into a closure; conditions return True/False/None, values return values."""
    method = _COMPILERS[type(node)]
    return method(node)


def _literal(node: ast.Literal) -> Evaluator:
    value = node.value
    return lambda r: value


def _ident(node: ast.Ident) -> Evaluator:
    name = node.name
    return lambda r: r(name)


def _negate(node: ast.Negate) -> Evaluator:
    inner = compile_node(node.operand)

    def run(r: Resolver) -> object:
        v = numeric(inner(r))
        return None if v is None else -v

    return run


def _arith(node: ast.Arith) -> Evaluator:
    left, right, op = compile_node(node.left), compile_node(node.right), node.op
    return lambda r: arithmetic(op, left(r), right(r))


def _compare(node: ast.Compare) -> Evaluator:
    op = node.op
    fn = ORDERING[op]
    if isinstance(node.left, ast.Ident) and isinstance(node.right, ast.Literal):
        name, lit = node.left.name, node.right.value
        lit_type = type(lit)
        if lit_type is int or lit_type is float:

            def ident_vs_number(r: Resolver) -> object:
                v = r(name)
                t = type(v)
                if t is int or t is float:
                    return fn(v, lit)
                return compare(op, v, lit)

            return ident_vs_number
        if lit_type is str:

            def ident_vs_string(r: Resolver) -> object:
                v = r(name)
                if type(v) is str:
                    return fn(v, lit)
                return compare(op, v, lit)

            return ident_vs_string
    left, right = compile_node(node.left), compile_node(node.right)
    return lambda r: compare(op, left(r), right(r))


def _between(node: ast.Between) -> Evaluator:
    operand, low, high = (compile_node(n) for n in (node.operand, node.low, node.high))
    negated = node.negated

    def run(r: Resolver) -> object:
        v = operand(r)
        result = and3(compare(">=", v, low(r)), compare("<=", v, high(r)))
        return not3(result) if negated else result

    return run


def _in(node: ast.In) -> Evaluator:
    operand, values, negated = compile_node(node.operand), frozenset(node.values), node.negated

    def run(r: Resolver) -> object:
        v = operand(r)
        if not isinstance(v, str):
            return None
        return (v not in values) if negated else (v in values)

    return run


def _like(node: ast.Like) -> Evaluator:
    operand, negated = compile_node(node.operand), node.negated
    match = compile_like(node.pattern, node.escape)

    def run(r: Resolver) -> object:
        v = operand(r)
        if not isinstance(v, str):
            return None
        found = match(v)
        return not found if negated else found

    return run


def _is_null(node: ast.IsNull) -> Evaluator:
    operand, negated = compile_node(node.operand), node.negated
    if negated:
        return lambda r: operand(r) is not None
    return lambda r: operand(r) is None


def _as_condition(node: ast.Node) -> Evaluator:
    """A condition operand; an identifier standing alone must hold a boolean."""
    inner = compile_node(node)
    if isinstance(node, (ast.Ident, ast.Literal)):
        return lambda r: truth(inner(r))
    return inner


def _not(node: ast.Not) -> Evaluator:
    inner = _as_condition(node.operand)
    return lambda r: not3(inner(r))  # type: ignore[arg-type]  # a condition yields bool | None


def _and(node: ast.And) -> Evaluator:
    parts = [_as_condition(n) for n in node.operands]
    if len(parts) == 2:
        a, b = parts

        def and2(r: Resolver) -> object:
            x = a(r)
            if x is False:
                return False
            y = b(r)
            if y is False:
                return False
            return None if (x is None or y is None) else True

        return and2

    def and_n(r: Resolver) -> object:
        result: bool | None = True
        for part in parts:
            result = and3(result, part(r))  # type: ignore[arg-type]
            if result is False:
                return False
        return result

    return and_n


def _or(node: ast.Or) -> Evaluator:
    parts = [_as_condition(n) for n in node.operands]

    def or_n(r: Resolver) -> object:
        result: bool | None = False
        for part in parts:
            result = or3(result, part(r))  # type: ignore[arg-type]
            if result is True:
                return True
        return result

    return or_n


_COMPILERS: dict[type, Callable[..., Evaluator]] = {
    ast.Literal: _literal,
    ast.Ident: _ident,
    ast.Negate: _negate,
    ast.Arith: _arith,
    ast.Compare: _compare,
    ast.Between: _between,
    ast.In: _in,
    ast.Like: _like,
    ast.IsNull: _is_null,
    ast.Not: _not,
    ast.And: _and,
    ast.Or: _or,
}


def compile_condition(node: ast.Node) -> Evaluator:
    """The top-level condition of a selector (a bare identifier must hold a boolean)."""
    return _as_condition(node)
