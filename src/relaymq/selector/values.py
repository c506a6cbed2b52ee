"""Run-time typing rules of the selector language (JMS 1.1 three-valued logic).

UNKNOWN is ``None``. A missing identifier is NULL (``None``), and any comparison or arithmetic
with NULL is UNKNOWN; comparing values of different types is UNKNOWN as well (seed 000 l.2744,
seed 004 l.6676-6680), so such a message is not selected. Numbers (``int``/``float``, never
``bool``) compare with each other; strings compare with strings (``=``/``<>`` as JMS, and the
orderings ``<``/``>``... by code point, which the seed's own example ``JMSMessageID >
WMBRK123456`` at seed 000 l.2806 relies on); booleans only with ``=``/``<>``.

:class:`UntypedText` marks text whose type is not known - an element value of a parsed XML
body, an MQRFH v1 name/value - so that ``Body.Price > 100`` compares numerically when the text
is a number, as a content filter on an XML publication needs. A typed JMS string property is a
plain ``str`` and never converts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

Value = object  # str | int | float | bool | None


class UntypedText(str):
    """Text from a self-describing body with no declared type (see module docstring)."""

    __slots__ = ()


def _as_number(v: str) -> int | float | None:
    s = v.strip()
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return None


def _as_bool(v: str) -> bool | None:
    s = v.strip().lower()
    if s in ("true", "1"):
        return True
    if s in ("false", "0"):
        return False
    return None


def is_number(v: object) -> bool:
    t = type(v)
    return t is int or t is float or (isinstance(v, (int, float)) and not isinstance(v, bool))


def numeric(v: object) -> int | float | None:
    """The number ``v`` stands for in arithmetic, or ``None`` when it is not numeric."""
    if is_number(v):
        return v  # type: ignore[return-value]
    if isinstance(v, UntypedText):
        return _as_number(v)
    return None


def truth(v: object) -> bool | None:
    """The truth value of an operand used as a condition: only booleans count."""
    if v is True or v is False:
        return v
    if isinstance(v, UntypedText):
        return _as_bool(v)
    return None


ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def compare(op: str, a: object, b: object) -> bool | None:
    """``a op b`` under the rules in the module docstring; ``None`` is UNKNOWN."""
    if a is None or b is None:
        return None
    fn = ORDERING[op]
    a_num, b_num = is_number(a), is_number(b)
    if a_num and b_num:
        return fn(a, b)
    a_text, b_text = isinstance(a, str), isinstance(b, str)
    if a_text and b_text:
        return fn(str(a), str(b))
    if isinstance(a, bool) and isinstance(b, bool):
        return fn(a, b) if op in ("=", "<>") else None
    # One side is untyped text: read it as the other side's type.
    if isinstance(a, UntypedText):
        a = _as_bool(a) if isinstance(b, bool) else _as_number(a) if b_num else None
        return None if a is None else compare(op, a, b)
    if isinstance(b, UntypedText):
        b = _as_bool(b) if isinstance(a, bool) else _as_number(b) if a_num else None
        return None if b is None else compare(op, a, b)
    return None


def arithmetic(op: str, a: object, b: object) -> int | float | None:
    """``a op b`` with Java semantics: integer division truncates toward zero; dividing by
    zero is UNKNOWN rather than an exception, so one bad message cannot break a consumer."""
    x, y = numeric(a), numeric(b)
    if x is None or y is None:
        return None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None
    if type(x) is int and type(y) is int:
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    return x / y


def and3(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def or3(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def not3(a: bool | None) -> bool | None:
    return None if a is None else not a
