"""The compiled selector object that JMS consumers, pub/sub subscriptions and flow Filter
nodes hold (README decision 3: one language, compiled once)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from relaymq.selector import ast
from relaymq.selector.compiler import Resolver, compile_condition
from relaymq.selector.parser import parse

Source = Resolver | Mapping[str, object]


class Selector:
    """A parsed and compiled expression.

    ``evaluate`` gives the three-valued result (``True``, ``False`` or ``None`` for UNKNOWN);
    ``matches`` is what a consumer uses: only ``True`` selects a message. The source is either
    a resolver callable ``name -> value or None`` or a mapping of names to values.
    """

    __slots__ = ("text", "tree", "identifiers", "_run")

    def __init__(self, text: str):
        self.text = text
        self.tree: ast.Node = parse(text)
        self.identifiers: frozenset[str] = frozenset(ast.identifiers(self.tree))
        self._run: Callable[[Resolver], object] = compile_condition(self.tree)

    def evaluate(self, source: Source) -> bool | None:
        resolve = source.get if isinstance(source, Mapping) else source
        result = self._run(resolve)
        return result if result is None or isinstance(result, bool) else None

    def matches(self, source: Source) -> bool:
        return self.selects(source.get if isinstance(source, Mapping) else source)

    def selects(self, resolve: Resolver) -> bool:
        """``matches`` of a resolver, without asking whether it is a Mapping (an ABC's check,
        dearer than a simple filter: a content filter per publication, issue 14)."""
        return self._run(resolve) is True

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selector) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


@lru_cache(maxsize=1024)
def compile_selector(text: str) -> Selector:
    """Compile ``text`` (cached: many subscriptions share the same filter text).

    Raises :class:`relaymq.selector.SelectorError` with the position and the reason.
    """
    return Selector(text)
