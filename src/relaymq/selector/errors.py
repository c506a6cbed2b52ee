"""The one error type of the expression language.

A selector, a pub/sub content filter and a flow filter are all written by people and checked
where they are given, so the error has to say *where* (a 0-based character position) and *why*.
Pub/sub reports a bad filter with reason 3150 (MQRCCF_FILTER_ERROR, pubsub.md item 36), which the
error carries so that the command processor does not need its own table.
"""

from __future__ import annotations

#: Reason code a pub/sub registration reports for an invalid content filter (seed 003 l.7247-7267).
FILTER_ERROR_REASON = 3150


class SelectorError(ValueError):
    """An expression that cannot be compiled.

    ``position`` is the 0-based character offset in the expression where the problem was
    found; ``reason`` is a short human sentence; ``expression`` is the text as given.
    """

    reason_code = FILTER_ERROR_REASON

    def __init__(self, reason: str, position: int, expression: str = ""):
        self.reason = reason
        self.position = position
        self.expression = expression
        super().__init__(f"invalid selector at position {position}: {reason}")

    def pointer(self) -> str:
        """The expression with a caret under the failing position, for command-line output."""
        return f"{self.expression}\n{' ' * self.position}^"
