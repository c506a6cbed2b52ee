"""Syntax tree of a parsed selector. Every node keeps the character position it started at, so
that later checks (and the compiler) can point at the text that caused a problem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Node:
    pos: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    value: object  # str, int, float or bool


@dataclass(frozen=True, slots=True)
class Ident(Node):
    name: str  # plain (``colour``) or dotted (``Root.MQMD.Priority``)


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class Arith(Node):
    op: str  # + - * /
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Compare(Node):
    op: str  # = <> < > <= >=
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Between(Node):
    negated: bool
    operand: Node
    low: Node
    high: Node


@dataclass(frozen=True, slots=True)
class In(Node):
    negated: bool
    operand: Node
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Like(Node):
    negated: bool
    operand: Node
    pattern: str
    escape: str | None


@dataclass(frozen=True, slots=True)
class IsNull(Node):
    negated: bool
    operand: Node


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class And(Node):
    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or(Node):
    operands: tuple[Node, ...]


def identifiers(node: Node) -> set[str]:
    """Every identifier the expression reads: lets a caller (pub/sub, a queue index) know which
    message parts a selector needs without evaluating it."""
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Ident):
            found.add(n.name)
        for attr in ("operand", "left", "right", "low", "high"):
            child = getattr(n, attr, None)
            if isinstance(child, Node):
                stack.append(child)
        if isinstance(n, (And, Or)):
            stack.extend(n.operands)
    return found
