"""MQeFields: MQ Everyplace's typed container (everyplace.md item 1; seed 004 l.386-492).

An unordered set of (name, type, value). Names are at least one character from 0x21-0x7F,
without ``{ } [ ] # ( ) ; , ' " =``, and unique (a put replaces). Types: ascii and unicode
strings, byte, short, int (32-bit), long (64-bit), float, double, boolean, arrays of byte,
short, int, long, float and double, and nested MQeFields. Values are checked against their
type when put, so a dump can never hold a value its type cannot carry. Fields are iterated in
insertion order (the seed's set is unordered; a stable order makes dumps repeatable), and
two MQeFields are equal regardless of order.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator

from relaymq.message.errors import MQeFieldsError

ASCII, UNICODE, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, BOOLEAN = (
    "ascii", "unicode", "byte", "short", "int", "long", "float", "double", "boolean",
)
BYTE_ARRAY, SHORT_ARRAY, INT_ARRAY, LONG_ARRAY, FLOAT_ARRAY, DOUBLE_ARRAY = (
    "arrayOfByte", "arrayOfShort", "arrayOfInt", "arrayOfLong", "arrayOfFloat", "arrayOfDouble",
)
FIELDS = "fields"

INTEGER_BITS = {BYTE: 8, SHORT: 16, INT: 32, LONG: 64}
ARRAY_ELEMENT = {SHORT_ARRAY: SHORT, INT_ARRAY: INT, LONG_ARRAY: LONG, FLOAT_ARRAY: FLOAT, DOUBLE_ARRAY: DOUBLE}
TYPES = (ASCII, UNICODE, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, BOOLEAN, BYTE_ARRAY, *ARRAY_ELEMENT, FIELDS)

#: Characters a field name may not hold (besides those outside 0x21-0x7F).
FORBIDDEN_NAME_CHARACTERS = frozenset("{}[]#();,'\"=")


def check_name(name: object) -> str:
    """Return ``name`` if it obeys the naming rules, else raise :class:`MQeFieldsError`."""
    if not isinstance(name, str) or not name:
        raise MQeFieldsError(repr(name), None, "a field name is at least one character")
    for ch in name:
        if not 0x20 < ord(ch) < 0x80:
            raise MQeFieldsError(name, None, f"character {ch!r} is outside 0x21-0x7F")
        if ch in FORBIDDEN_NAME_CHARACTERS:
            raise MQeFieldsError(name, None, f"character {ch!r} is not allowed in a field name")
    return name


def is_field_name(name: object) -> bool:
    """``name`` obeys the naming rules (see :func:`check_name`)."""
    try:
        check_name(name)
    except MQeFieldsError:
        return False
    return True


def _float32(value: float) -> float:
    single: float = struct.unpack(">f", struct.pack(">f", value))[0]
    return single


def _bad(name: str, kind: str, reason: str) -> MQeFieldsError:
    return MQeFieldsError(name, None, f"{kind}: {reason}")


def _check_ascii(name: str, kind: str, value: object) -> object:
    if not isinstance(value, str) or not value.isascii():
        raise _bad(name, kind, "needs ASCII text")
    return value


def _check_unicode(name: str, kind: str, value: object) -> object:
    if not isinstance(value, str):
        raise _bad(name, kind, "needs text")
    return value


def _check_integer(name: str, kind: str, value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(name, kind, f"{value!r} is not an integer")
    bits = INTEGER_BITS[kind]
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise _bad(name, kind, f"{value} does not fit in {bits} bits")
    return value


def _check_float(name: str, kind: str, value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(name, kind, f"{value!r} is not a number")
    f = float(value)
    if kind == FLOAT and not math.isinf(f) and not math.isnan(f):
        try:
            return _float32(f)
        except OverflowError:
            raise _bad(name, kind, f"{value!r} does not fit in a float") from None
    return f


def _check_boolean(name: str, kind: str, value: object) -> object:
    if not isinstance(value, bool):
        raise _bad(name, kind, f"{value!r} is not a boolean")
    return value


def _check_bytes(name: str, kind: str, value: object) -> object:
    if not isinstance(value, (bytes, bytearray)):
        raise _bad(name, kind, "needs bytes")
    return bytes(value)


def _check_array(name: str, kind: str, value: object) -> object:
    if not isinstance(value, (list, tuple)):
        raise _bad(name, kind, "needs a list")
    element = ARRAY_ELEMENT[kind]
    return [check_value(f"{name}[{i}]", element, v) for i, v in enumerate(value)]


def _check_fields(name: str, kind: str, value: object) -> object:
    if not isinstance(value, MQeFields):
        raise _bad(name, kind, "needs an MQeFields")
    return value


#: Field type -> the check of a value for it (the value as stored, or an MQeFieldsError).
_CHECKS: dict[str, Callable[[str, str, object], object]] = {
    ASCII: _check_ascii, UNICODE: _check_unicode, FLOAT: _check_float, DOUBLE: _check_float,
    BOOLEAN: _check_boolean, BYTE_ARRAY: _check_bytes, FIELDS: _check_fields,
    **dict.fromkeys(INTEGER_BITS, _check_integer), **dict.fromkeys(ARRAY_ELEMENT, _check_array),
}


def check_value(name: str, kind: str, value: object) -> object:
    """The value as stored for ``kind`` (floats rounded to single precision), or an error."""
    if value is None and (kind in ARRAY_ELEMENT or kind == BYTE_ARRAY):
        return None  # a zero-length fixed array restores as null (seed 004 l.474)
    check = _CHECKS.get(kind)
    if check is None:
        raise MQeFieldsError(name, None, f"unknown field type {kind!r}")
    return check(name, kind, value)


class MQeFields:
    """The container. ``put(name, kind, value)`` or the typed ``put_*`` helpers; ``get``."""

    __slots__ = ("_fields",)

    def __init__(self) -> None:
        self._fields: dict[str, tuple[str, object]] = {}

    def put(self, name: str, kind: str, value: object) -> MQeFields:
        check_name(name)
        if kind not in TYPES:
            raise MQeFieldsError(name, None, f"unknown field type {kind!r}")
        self._fields[name] = (kind, check_value(name, kind, value))
        return self

    # typed helpers, named after the MQe API's put<Type> methods
    def put_ascii(self, name: str, value: str) -> MQeFields:
        return self.put(name, ASCII, value)

    def put_unicode(self, name: str, value: str) -> MQeFields:
        return self.put(name, UNICODE, value)

    def put_byte(self, name: str, value: int) -> MQeFields:
        return self.put(name, BYTE, value)

    def put_short(self, name: str, value: int) -> MQeFields:
        return self.put(name, SHORT, value)

    def put_int(self, name: str, value: int) -> MQeFields:
        return self.put(name, INT, value)

    def put_long(self, name: str, value: int) -> MQeFields:
        return self.put(name, LONG, value)

    def put_float(self, name: str, value: float) -> MQeFields:
        return self.put(name, FLOAT, value)

    def put_double(self, name: str, value: float) -> MQeFields:
        return self.put(name, DOUBLE, value)

    def put_boolean(self, name: str, value: bool) -> MQeFields:
        return self.put(name, BOOLEAN, value)

    def put_array_of_byte(self, name: str, value: bytes) -> MQeFields:
        return self.put(name, BYTE_ARRAY, value)

    def put_fields(self, name: str, value: MQeFields) -> MQeFields:
        return self.put(name, FIELDS, value)

    def get(self, name: str, default: object = None) -> object:
        found = self._fields.get(name)
        return default if found is None else found[1]

    def get_type(self, name: str) -> str:
        if name not in self._fields:
            raise MQeFieldsError(name, None, "no such field")
        return self._fields[name][0]

    def get_fields(self, name: str) -> MQeFields | None:
        found = self._fields.get(name)
        if found is None:
            return None
        if found[0] != FIELDS:
            raise MQeFieldsError(name, None, f"is {found[0]}, not fields")
        return found[1]  # type: ignore[return-value]

    def contains(self, name: str) -> bool:
        return name in self._fields

    __contains__ = contains

    def delete(self, name: str) -> None:
        self._fields.pop(name, None)

    def items(self) -> Iterator[tuple[str, str, object]]:
        """(name, type, value) in insertion order."""
        for name, (kind, value) in self._fields.items():
            yield name, kind, value

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MQeFields):
            return NotImplemented
        return self._fields == other._fields

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}:{k}={v!r}" for n, k, v in self.items())
        return f"MQeFields({inner})"
