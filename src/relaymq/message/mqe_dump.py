"""The binary dump of an MQeFields: relaymq's own documented, versioned format (the seed
gives none; digest decision). Specified in ``docs/formats.md``; summary:

    dump    = magic "RQeF" | version u8 (=1) | fields
    fields  = count u32 | field*
    field   = name_len u16 | name (ASCII) | type u8 | value
    value   = per type code (all integers and floats big-endian):
      1 ascii   u32 len + ASCII bytes        2 unicode u32 len + UTF-8 bytes
      3 byte    i8     4 short i16    5 int i32    6 long i64
      7 float   IEEE f32     8 double IEEE f64     9 boolean u8 (0 or 1)
      10 arrayOfByte u32 len + bytes   11-15 arrayOf Short/Int/Long/Float/Double:
         u32 count + elements         16 fields: u32 byte length + fields (nested)

A zero-length array is written with count 0 and restores as ``None`` (seed 004 l.474).
``restore`` checks everything - magic, version, every length against the bytes left, type
codes, booleans, names, nesting depth, trailing bytes - and raises :class:`MQeFieldsError`
with the field path and the byte offset.
"""

from __future__ import annotations

import struct

from relaymq.message.errors import MQeFieldsError
from relaymq.message.mqe_fields import (
    ARRAY_ELEMENT,
    ASCII,
    BOOLEAN,
    BYTE,
    BYTE_ARRAY,
    DOUBLE,
    DOUBLE_ARRAY,
    FIELDS,
    FLOAT,
    FLOAT_ARRAY,
    INT,
    INT_ARRAY,
    LONG,
    LONG_ARRAY,
    SHORT,
    SHORT_ARRAY,
    UNICODE,
    MQeFields,
    check_name,
)

MAGIC = b"RQeF"
VERSION = 1
MAX_DEPTH = 32

TYPE_CODES = {
    ASCII: 1, UNICODE: 2, BYTE: 3, SHORT: 4, INT: 5, LONG: 6, FLOAT: 7, DOUBLE: 8,
    BOOLEAN: 9, BYTE_ARRAY: 10, SHORT_ARRAY: 11, INT_ARRAY: 12, LONG_ARRAY: 13,
    FLOAT_ARRAY: 14, DOUBLE_ARRAY: 15, FIELDS: 16,
}
CODE_TYPES = {v: k for k, v in TYPE_CODES.items()}
_SCALAR = {BYTE: ">b", SHORT: ">h", INT: ">i", LONG: ">q", FLOAT: ">f", DOUBLE: ">d"}


def dump(fields: MQeFields) -> bytes:
    """The binary form of ``fields``."""
    out = bytearray(MAGIC)
    out.append(VERSION)
    _dump_fields(fields, out)
    return bytes(out)


def _dump_fields(fields: MQeFields, out: bytearray) -> None:
    out += struct.pack(">I", len(fields))
    for name, kind, value in fields.items():
        raw = name.encode("ascii")
        out += struct.pack(">H", len(raw)) + raw
        out.append(TYPE_CODES[kind])
        if kind in (ASCII, UNICODE):
            data = str(value).encode("ascii" if kind == ASCII else "utf-8")
            out += struct.pack(">I", len(data)) + data
        elif kind in _SCALAR:
            out += struct.pack(_SCALAR[kind], value)
        elif kind == BOOLEAN:
            out.append(1 if value else 0)
        elif kind == BYTE_ARRAY:
            data = value or b""  # type: ignore[assignment]
            out += struct.pack(">I", len(data)) + data
        elif kind in ARRAY_ELEMENT:
            items = value or []
            out += struct.pack(">I", len(items))  # type: ignore[arg-type]
            out += struct.pack(">" + _SCALAR[ARRAY_ELEMENT[kind]][1] * len(items), *items)  # type: ignore[arg-type, misc]
        else:
            nested = bytearray()
            _dump_fields(value, nested)  # type: ignore[arg-type]
            out += struct.pack(">I", len(nested)) + nested


def restore(data: bytes) -> MQeFields:
    """Rebuild an MQeFields from :func:`dump` output."""
    data = bytes(data)
    if len(data) < 5:
        raise MQeFieldsError("dump", 0, "shorter than the 5-byte preamble")
    if data[:4] != MAGIC:
        raise MQeFieldsError("dump.magic", 0, f"expected {MAGIC!r}, found {data[:4]!r}")
    if data[4] != VERSION:
        raise MQeFieldsError("dump.version", 4, f"unsupported dump version {data[4]}")
    fields, pos = _restore_fields(data, 5, len(data), "", 0)
    if pos != len(data):
        raise MQeFieldsError("dump", pos, f"{len(data) - pos} bytes after the last field")
    return fields


class _Reader:
    __slots__ = ("data", "end", "path")

    def __init__(self, data: bytes, end: int, path: str):
        self.data, self.end, self.path = data, end, path

    def take(self, pos: int, size: int, what: str) -> int:
        if size < 0 or pos + size > self.end:
            raise MQeFieldsError(f"{self.path}{what}", pos, f"needs {size} bytes, {self.end - pos} left")
        return pos + size


def _restore_fields(data: bytes, pos: int, end: int, path: str, depth: int) -> tuple[MQeFields, int]:
    if depth > MAX_DEPTH:
        raise MQeFieldsError(path or "dump", pos, f"fields nested deeper than {MAX_DEPTH}")
    r = _Reader(data, end, path)
    nxt = r.take(pos, 4, "count")
    (count,) = struct.unpack_from(">I", data, pos)
    pos = nxt
    fields = MQeFields()
    for _ in range(count):
        nxt = r.take(pos, 2, "name length")
        (nlen,) = struct.unpack_from(">H", data, pos)
        name_at, pos = nxt, r.take(nxt, nlen, "name")
        try:
            name = data[name_at:pos].decode("ascii")
            check_name(name)
        except (UnicodeDecodeError, MQeFieldsError) as exc:
            raise MQeFieldsError(f"{path}name", name_at, f"invalid field name: {exc}") from None
        where = f"{path}{name}"
        nxt = r.take(pos, 1, name)
        code = data[pos]
        kind = CODE_TYPES.get(code)
        if kind is None:
            raise MQeFieldsError(where, pos, f"unknown type code {code}")
        pos = nxt
        value, pos = _restore_value(data, pos, end, kind, where, depth, r)
        if name in fields:
            raise MQeFieldsError(where, name_at, "field name repeated")
        try:
            fields.put(name, kind, value)
        except MQeFieldsError as exc:
            raise MQeFieldsError(where, pos, exc.reason) from None
    return fields, pos


def _restore_value(data: bytes, pos: int, end: int, kind: str, where: str, depth: int, r: _Reader) -> tuple[object, int]:
    if kind in (ASCII, UNICODE, BYTE_ARRAY, FIELDS):
        nxt = r.take(pos, 4, where)
        (length,) = struct.unpack_from(">I", data, pos)
        start, stop = nxt, r.take(nxt, length, where)
        if kind == FIELDS:
            nested, after = _restore_fields(data, start, stop, where + ".", depth + 1)
            if after != stop:
                raise MQeFieldsError(where, after, "nested fields shorter than their length")
            return nested, stop
        raw = data[start:stop]
        if kind == BYTE_ARRAY:
            return (raw if raw else None), stop
        try:
            return raw.decode("ascii" if kind == ASCII else "utf-8"), stop
        except UnicodeDecodeError as exc:
            raise MQeFieldsError(where, start + exc.start, f"invalid {kind} text") from None
    if kind in _SCALAR:
        fmt = _SCALAR[kind]
        stop = r.take(pos, struct.calcsize(fmt), where)
        return struct.unpack_from(fmt, data, pos)[0], stop
    if kind == BOOLEAN:
        stop = r.take(pos, 1, where)
        if data[pos] not in (0, 1):
            raise MQeFieldsError(where, pos, f"boolean byte {data[pos]} is not 0 or 1")
        return data[pos] == 1, stop
    nxt = r.take(pos, 4, where)
    (count,) = struct.unpack_from(">I", data, pos)
    fmt = _SCALAR[ARRAY_ELEMENT[kind]][1]
    size = struct.calcsize(">" + fmt)
    if count > (end - nxt) // size:
        raise MQeFieldsError(where, pos, f"array of {count} elements runs past the end")
    stop = r.take(nxt, count * size, where)
    items = list(struct.unpack_from(">" + fmt * count, data, nxt))
    return (items if count else None), stop
