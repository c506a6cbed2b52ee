"""Fixed-layout MQ structures (MQMD, MQRFH, MQRFH2, MQDLH) read and written from one table.

Each structure is a list of fields: ``MQLONG`` integers (4 bytes, byte order from the
Encoding that governs the structure), ``MQCHARn`` blank-padded text (in the governing CCSID)
and ``MQBYTEn`` opaque bytes. One :class:`Layout` compiles the table into a :mod:`struct`
format per byte order, so decoding a header is a single ``unpack_from`` plus text decoding,
and every truncation is reported with the name and offset of the first missing field.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from operator import itemgetter

from relaymq.message.ccsid import decode_text, encode_text, single_byte_codec
from relaymq.message.constants import MQENC_INTEGER_MASK, MQENC_INTEGER_NORMAL, MQENC_INTEGER_REVERSED
from relaymq.message.errors import FormatError, TruncatedError

LONG, CHAR, BYTE = "l", "c", "b"


def byte_order(encoding: int) -> str:
    """``'>'`` or ``'<'`` for an MQ Encoding value. MQENC_INTEGER_UNDEFINED is read as the
    x86 native order (reversed), the platform this product runs on."""
    integer = encoding & MQENC_INTEGER_MASK
    if integer == MQENC_INTEGER_NORMAL:
        return ">"
    if integer in (MQENC_INTEGER_REVERSED, 0):
        return "<"
    raise FormatError("Encoding", None, f"unknown integer encoding in {encoding}")


@dataclass(frozen=True)
class Field:
    """One field of a fixed-layout structure: its name, kind and size in bytes."""

    name: str
    kind: str  # LONG, CHAR or BYTE
    size: int = 4


class Layout:
    """A fixed-length MQ structure: ``decode`` -> dict of field values, ``encode`` -> bytes."""

    def __init__(self, structure: str, fields: list[Field]):
        self.structure = structure
        self.fields = tuple(fields)
        body = "".join("i" if f.kind == LONG else f"{f.size}s" for f in fields)
        self._formats = {order: struct.Struct(order + body) for order in "<>"}
        self.size = self._formats[">"].size
        offsets, pos = [], 0
        for f in fields:
            offsets.append(pos)
            pos += f.size
        self.offsets = tuple(offsets)
        # For the fast paths: (name, is text, size) per field; where the text and byte fields are.
        self._plan = tuple((f.name, f.kind, f.size) for f in fields)
        self.names = tuple(f.name for f in fields)
        self._by_name = itemgetter(*self.names)
        self._text_at = tuple((i, f.size) for i, f in enumerate(fields) if f.kind == CHAR)
        self._bytes_at = tuple((i, f.size) for i, f in enumerate(fields) if f.kind == BYTE)
        longs = [i for i, f in enumerate(fields) if f.kind == LONG]
        self._longs = itemgetter(*longs) if len(longs) > 1 else (lambda values: (values[longs[0]],))

    def offset_of(self, name: str) -> int:
        for f, off in zip(self.fields, self.offsets, strict=False):
            if f.name == name:
                return off
        raise KeyError(name)

    def check_room(self, data: bytes, offset: int) -> None:
        """Raise :class:`TruncatedError` naming the first field that does not fit."""
        available = len(data) - offset
        if available >= self.size:
            return
        for f, off in zip(self.fields, self.offsets, strict=False):
            if off + f.size > available:
                raise TruncatedError(
                    f"{self.structure}.{f.name}",
                    offset + off,
                    f"needs {f.size} bytes, {max(0, available - off)} left",
                )

    def decode(self, data: bytes, offset: int, order: str, ccsid: int, encoding: int) -> dict[str, object]:
        return dict(zip(self.names, self.decode_values(data, offset, order, ccsid, encoding), strict=True))

    def decode_values(self, data: bytes, offset: int, order: str, ccsid: int, encoding: int) -> list[object]:
        """``decode`` as a list of the values in field order (no dict to build)."""
        self.check_room(data, offset)
        values = list(self._formats[order].unpack_from(data, offset))
        codec = single_byte_codec(ccsid)
        if codec is not None:  # the common case; an error takes the path below, which names it
            try:
                for i, _size in self._text_at:
                    values[i] = values[i].decode(codec).rstrip(" \x00")
                return values
            except UnicodeDecodeError:
                values = list(self._formats[order].unpack_from(data, offset))
        for i, _size in self._text_at:
            f, off = self.fields[i], self.offsets[i]
            text = decode_text(values[i], ccsid, encoding, f"{self.structure}.{f.name}", offset + off)
            values[i] = text.rstrip(" \x00")
        return values

    def encode(self, values: dict[str, object], order: str, ccsid: int, encoding: int) -> bytes:
        return self.encode_values(self._by_name(values), order, ccsid, encoding)

    def encode_values(self, values: tuple[object, ...], order: str, ccsid: int, encoding: int) -> bytes:
        """``encode`` with the values in field order (no dict to build: the MQMD's hot path)."""
        codec = single_byte_codec(ccsid)
        if codec is not None:
            fast = self._encode_single_byte(values, order, codec)
            if fast is not None:
                return fast
        packed: list[object] = []
        for f, value in zip(self.fields, values, strict=True):
            where = f"{self.structure}.{f.name}"
            if f.kind == LONG:
                if not isinstance(value, int) or not -(2**31) <= value < 2**31:
                    raise FormatError(where, None, f"{value!r} is not a 32-bit integer")
                packed.append(value)
            elif f.kind == CHAR:
                raw = encode_text(str(value), ccsid, encoding, where)
                if len(raw) > f.size:
                    raise FormatError(where, None, f"{value!r} is longer than {f.size} bytes")
                pad, blank = f.size - len(raw), encode_text(" ", ccsid, encoding)
                packed.append(raw + (blank * (pad // len(blank))).ljust(pad, b"\x00"))
            else:
                raw = bytes(value)  # type: ignore[call-overload]
                if len(raw) > f.size:
                    raise FormatError(where, None, f"{len(raw)} bytes do not fit in {f.size}")
                packed.append(raw.ljust(f.size, b"\x00"))
        return self._formats[order].pack(*packed)

    def _encode_single_byte(self, values: tuple[object, ...], order: str, codec: str) -> bytes | None:
        """``encode`` for a CCSID whose blank is one byte: the integers go to the precompiled
        struct as they are, only the text and byte fields are touched; None when a value needs
        the general path (which reports what is wrong with it)."""
        if set(map(type, self._longs(values))) != _INT_ONLY:  # not bool, float, None... (struct checks the range)
            return None
        packed = list(values)
        try:
            for i, size in self._text_at:
                raw = str(packed[i]).ljust(size).encode(codec)  # one character, one byte: blank-padded
                if len(raw) > size:
                    return None
                packed[i] = raw
            for i, size in self._bytes_at:
                raw = bytes(packed[i])  # type: ignore[call-overload]
                if len(raw) > size:
                    return None
                packed[i] = raw  # the struct pads it with NULs
            return self._formats[order].pack(*packed)
        except (UnicodeEncodeError, TypeError, ValueError, struct.error):
            return None


_INT_ONLY = {int}
