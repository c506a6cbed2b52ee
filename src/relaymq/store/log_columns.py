"""The column-wise layout of a message log record batch's ``data`` (format 2 of
:mod:`relaymq.store.log_batch`).

Why columns: the Spark reader hands Arrow columns to Spark, and a job usually asks for a few
of the log's 26 (docs/pipeline.md, section 2). Kept row by row, every stored value of every
entry had to be unpacked into a Python object and converted back whatever was asked (about
1.4 µs an entry of the reader's 3-4). Kept as columns, each in the layout Arrow itself uses
where it has one, the reader wraps the columns it needs as Arrow arrays without a per-value
step, and does not touch the others; a column holding one value in every entry of the batch
(``msg_type``, ``ccsid``, ``qos`` of one publisher, most MQMD fields) is kept once.

``data`` = the format byte ``\\x02``, a 4-byte little-endian length, a ``marshal`` (version 4)
header ``(count, columns)``, then the columns' sections, each starting at a multiple of 8
bytes from the start of ``data``. ``columns`` describes each stored column in order, as one of

* ``("c", value)``: every entry holds ``value`` (None, bool, int, str or bytes; exact types);
* ``("q", at)`` / ``("d", at)``: ``count`` little-endian int64 / float64 values at ``at``;
* ``("s", at, size)`` / ``("b", at, size)``: str (UTF-8) / bytes values as Arrow keeps them:
  ``count + 1`` int32 offsets at ``at``, then ``size`` bytes of values;
* ``("M", at, keys, values)``: dicts of str -> str as an Arrow map: ``count + 1`` int32
  offsets at ``at`` into the flattened keys and values, each an ``"s"`` column;
* ``("m", at, size)``: anything else (a column mixing None with values, a str subclass, an
  int beyond 64 bits): a marshal list of the values, ``size`` bytes at ``at``.

Every value reads back as the exact object it was (type included), as format 1 gives it.
The int64, float64 and offset sections are little-endian, as Arrow's are on every host relaymq
runs on; a big-endian host would write only ``"c"`` and ``"m"`` columns (it reads nothing else).
The store imports no Arrow: :func:`column` gives a column as its layout, and the reader
(``pipeline.arrowio``) makes Arrow arrays of it.
"""

from __future__ import annotations

import marshal
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import Any

FORMAT = b"\x02"
_LENGTH = struct.Struct("<I")
_CONSTANT_TYPES = (type(None), bool, int, str, bytes)
_LITTLE = sys.byteorder == "little"
_INT32 = 2**31 - 1


class Constant:
    """A column given as the one value every entry of the batch holds (a writer that knows it,
    such as the log's for the MQMD defaults of a publication, need not repeat it ``count``
    times for :func:`encode` to find it again)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


#: A column as :func:`encode` takes it: its values, or the one value of every entry.
Column = Sequence[Any] | Constant


def encode(columns: Sequence[Column], count: int) -> bytes:
    """The ``data`` of a batch of ``count`` entries given as its stored columns."""
    sections = _Sections()
    header = [_column(values, count, sections) for values in columns]
    head = marshal.dumps((count, header), 4)
    start = len(FORMAT) + _LENGTH.size + len(head)
    pad = -start % 8
    # the header's offsets count from the end of its padding
    return b"".join((FORMAT, _LENGTH.pack(len(head) + pad), head, b"\0" * pad, *sections.parts))


class _Sections:
    """The sections of a ``data`` being written, each starting at a multiple of 8 bytes."""

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def put(self, section: bytes, rest: bytes = b"") -> int:
        """Add ``section`` and ``rest`` after it; where they start."""
        at = self.size
        self.parts.append(section)
        size = at + len(section)
        if rest:
            self.parts.append(rest)
            size += len(rest)
        pad = -size % 8
        if pad:
            self.parts.append(b"\0" * pad)
            size += pad
        self.size = size
        return at


def _column(given: Column, count: int, sections: _Sections) -> tuple[Any, ...]:
    if isinstance(given, Constant):
        if type(given.value) in _CONSTANT_TYPES:
            return ("c", given.value)
        values: list[Any] = [given.value] * count
    else:
        values = given if isinstance(given, list) else list(given)
    kind = _kind(values)
    if kind is not None:
        first = values[0]
        if kind in _CONSTANT_TYPES and values.count(first) == count:
            return ("c", first)
        if kind is float and _LITTLE:
            return ("d", sections.put(_packed("d", values)))
        if kind is int and _LITTLE:
            try:
                return ("q", sections.put(_packed("q", values)))
            except struct.error:  # beyond 64 bits
                pass
        elif kind is str:
            found = _strings(values, sections)
            if found is not None:
                return found
        elif kind is bytes and _LITTLE:
            found = _binary("b", values, b"".join(values), sections)
            if found is not None:
                return found
        elif kind is dict:
            found = _map(values, sections)
            if found is not None:
                return found
    data = _marshal_list(values)
    return ("m", sections.put(data), len(data))


def _kind(values: list[Any]) -> type | None:
    """The type of every one of ``values`` (None: they differ, or there are none)."""
    if not values:
        return None
    kind = type(values[0])
    for value in values:
        if type(value) is not kind:
            return None
    return kind


def _strings(values: list[str], sections: _Sections) -> tuple[Any, ...] | None:
    """A column of exact strs in Arrow's layout; None when one cannot be UTF-8 (a lone surrogate)."""
    if not _LITTLE:
        return None
    joined = "".join(values)
    if joined.isascii():  # one character, one byte: the strs' lengths are their offsets
        return _binary("s", values, joined.encode("ascii"), sections)
    try:
        encoded = [value.encode("utf-8") for value in values]
    except UnicodeEncodeError:
        return None
    return _binary("s", encoded, b"".join(encoded), sections)


def _binary(kind: str, values: list[Any], data: bytes, sections: _Sections) -> tuple[Any, ...] | None:
    if len(data) > _INT32:
        return None
    return (kind, sections.put(_offsets(values), data), len(data))


def _offsets(values: list[Any]) -> bytes:
    """Arrow's int32 offsets of ``values`` (each with a length) laid end to end: 0, then where
    each one ends. (A loop rather than ``accumulate``: compiled, the sum is a machine integer.)"""
    ends = [0] * (len(values) + 1)
    end = 0
    for index, value in enumerate(values):
        end += len(value)
        ends[index + 1] = end
    return _packed("i", ends)


def _packed(code: str, values: Sequence[Any]) -> bytes:
    """``values`` as little-endian int32s (``code`` "i"), int64s ("q") or float64s ("d"):
    struct converts each value directly, where ``array`` parses a format per value."""
    return struct.pack(f"<{len(values)}{code}", *values)


def _map(values: list[dict[Any, Any]], sections: _Sections) -> tuple[Any, ...] | None:
    """A column of exact dicts of exact str -> str as an Arrow map."""
    if not _LITTLE:
        return None
    keys: list[str] = []
    items: list[str] = []
    for value in values:
        for key, item in value.items():
            if type(key) is not str or type(item) is not str:
                return None
            keys.append(key)
            items.append(item)
    if len(keys) > _INT32:
        return None
    # the entries' strings first: a column that cannot be kept leaves no offsets behind
    key_column, item_column = _strings(keys, sections), _strings(items, sections)
    if key_column is None or item_column is None:
        return None
    return ("M", sections.put(_offsets(values)), key_column, item_column)


def _marshal_list(values: Sequence[Any]) -> bytes:
    try:
        return marshal.dumps(values if type(values) is list else list(values), 4)
    except ValueError:  # a subclass of str, bytes, int or dict that marshal does not write
        return marshal.dumps([_plain(value) for value in values], 4)


def _plain(value: Any) -> Any:
    """``value`` as the exact built-in type marshal writes."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return str(value)


class Layout:
    """A format-2 ``data`` opened: ``count`` entries, the stored columns' descriptions."""

    __slots__ = ("body", "columns", "count")

    def __init__(self, data: bytes) -> None:
        view = memoryview(data)
        (length,) = _LENGTH.unpack_from(view, len(FORMAT))
        start = len(FORMAT) + _LENGTH.size
        self.count, self.columns = marshal.loads(view[start:start + length])
        self.body = view[start + length:]

    def column(self, index: int) -> tuple[Any, ...]:
        """Column ``index`` as its layout: ``("c", value)``, ``("q"|"d", buffer)``,
        ``("s"|"b", offsets, data)``, ``("M", offsets, keys, values)`` (keys and values each
        an ``"s"`` layout) or ``("m", list)``; buffers are memoryviews into ``data``."""
        return self._open(self.columns[index], self.count)

    def _open(self, found: tuple[Any, ...], count: int) -> tuple[Any, ...]:
        kind, body = found[0], self.body
        if kind == "c":
            return found
        at = found[1]
        if kind in ("q", "d"):
            return (kind, body[at:at + 8 * count])
        if kind in ("s", "b"):
            data = at + 4 * (count + 1)
            return (kind, body[at:data], body[data:data + found[2]])
        if kind == "M":
            offsets = body[at:at + 4 * (count + 1)]
            entries = _array("i", offsets)[-1]
            return (kind, offsets, self._open(found[2], entries), self._open(found[3], entries))
        if kind == "m":
            return (kind, marshal.loads(body[at:at + found[2]]))
        raise ValueError(f"message log batch column of unknown kind {kind!r}")

    def values(self, index: int) -> Sequence[Any]:
        """Column ``index`` as its Python values."""
        return _values(self.column(index), self.count)


def _values(layout: tuple[Any, ...], count: int) -> Sequence[Any]:
    kind = layout[0]
    if kind == "c":
        return list(repeat(layout[1], count))
    if kind == "m":
        values: list[Any] = layout[1]
        return values
    if kind in ("q", "d"):
        return _array(kind, layout[1]).tolist()
    if kind in ("s", "b"):
        data = bytes(layout[2])
        pieces = [data[a:b] for a, b in _pairs(layout[1])]
        return [piece.decode("utf-8") for piece in pieces] if kind == "s" else pieces
    keys, items = _values(layout[2], 0), _values(layout[3], 0)  # "s" layouts: no count needed
    return [dict(zip(keys[a:b], items[a:b], strict=True)) for a, b in _pairs(layout[1])]


def _pairs(offsets: memoryview) -> Iterator[tuple[int, int]]:
    bounds = _array("i", offsets)
    return zip(bounds, bounds[1:], strict=False)


def _array(kind: str, buffer: memoryview) -> array[Any]:
    """A buffer's values (``array(kind, memoryview)`` would take each byte as a value)."""
    values = array(kind)
    values.frombytes(buffer)
    return values


def rows(data: bytes) -> list[tuple[Any, ...]]:
    """The entries of a format-2 ``data`` as rows (tuples of the stored columns)."""
    layout = Layout(data)
    return list(zip(*(layout.values(index) for index in range(len(layout.columns))), strict=True))
