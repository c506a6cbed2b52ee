"""Typed values as JMS carries them in XML: ``<name dt='i4'>5</name>`` (formats-and-jms.md
item 11; seed 000 l.2437-2457).

One table serves the MQRFH2 ``usr``/``jms`` folders, the JMSMap and JMSStream bodies and the
JMSTransport property folders. Type names are read case-insensitively (``I4`` = ``i4``) and
``char`` is accepted (digest decisions). Python values: ``str`` for string and char, ``bool``,
``bytes`` for bin.hex, ``int`` for i1/i2/i4/i8/int, ``float`` for r4/r8; the ``dt`` name travels
beside the value so that a round trip keeps the Java type.
"""

from __future__ import annotations

import math
import re
import struct

from relaymq.message.errors import DataTypeError

STRING, BOOLEAN, BIN_HEX, CHAR = "string", "boolean", "bin.hex", "char"
I1, I2, I4, I8, INT, R4, R8 = "i1", "i2", "i4", "i8", "int", "r4", "r8"

INTEGER_RANGES = {
    I1: (-(2**7), 2**7 - 1),
    I2: (-(2**15), 2**15 - 1),
    I4: (-(2**31), 2**31 - 1),
    I8: (-(2**63), 2**63 - 1),
    INT: (-(2**63), 2**63 - 1),
}
#: (largest magnitude, smallest non-zero magnitude) from the seed's table.
FLOAT_RANGES = {R4: (3.40282347e38, 1.175e-37), R8: (1.7976931348623157e308, 2.225e-307)}

DT_NAMES = frozenset({STRING, BOOLEAN, BIN_HEX, CHAR, *INTEGER_RANGES, *FLOAT_RANGES})

_INTEGER_TEXT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT_TEXT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_HEX_TEXT = re.compile(r"^([0-9a-fA-F]{2})*$")


def canonical_dt(dt: str | None, field: str = "dt", offset: int | None = None) -> str:
    """The lower-case type name; ``None`` or empty means string. Unknown names raise."""
    if dt is None or dt == "":
        return STRING
    name = dt.strip().lower()
    if name not in DT_NAMES:
        raise DataTypeError(field, offset, f"unknown dt type {dt!r}")
    return name


def parse_value(text: str, dt: str | None, field: str = "value", offset: int | None = None) -> object:
    """The Python value of ``text`` typed as ``dt``; raises :class:`DataTypeError` if invalid."""
    kind = canonical_dt(dt, field, offset)
    if kind == STRING:
        return text
    s = text.strip()
    if kind in INTEGER_RANGES:
        if not _INTEGER_TEXT.match(s):
            raise DataTypeError(field, offset, f"{text!r} is not an integer for dt={kind}")
        value = int(s)
        lo, hi = INTEGER_RANGES[kind]
        if not lo <= value <= hi:
            raise DataTypeError(field, offset, f"{value} is outside the range of dt={kind}")
        return value
    if kind in FLOAT_RANGES:
        if not _FLOAT_TEXT.match(s):
            raise DataTypeError(field, offset, f"{text!r} is not a number for dt={kind}")
        return check_float(float(s), kind, field, offset)
    if kind == BOOLEAN:
        low = s.lower()
        if low in ("1", "true"):
            return True
        if low in ("0", "false"):
            return False
        raise DataTypeError(field, offset, f"{text!r} is not a boolean (0 or 1)")
    if kind == BIN_HEX:
        if not _HEX_TEXT.match(s):
            raise DataTypeError(field, offset, f"{text!r} is not an even number of hex digits")
        return bytes.fromhex(s)
    # char
    if len(text) != 1:
        raise DataTypeError(field, offset, f"dt=char needs exactly one character, got {text!r}")
    return text


def check_float(value: float, kind: str, field: str = "value", offset: int | None = None) -> float:
    """Apply the seed's magnitude limits; r4 values are rounded to single precision."""
    big, small = FLOAT_RANGES[kind]
    mag = abs(value)
    if math.isnan(value) or mag > big or (mag != 0.0 and mag < small):
        raise DataTypeError(field, offset, f"{value!r} is outside the range of dt={kind}")
    if kind == R4:
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    return value


def format_value(value: object, dt: str | None, field: str = "value") -> str:
    """The text form of ``value`` typed as ``dt`` (validated, so a bad value never leaves)."""
    kind = canonical_dt(dt, field)
    if kind == STRING:
        if not isinstance(value, str):
            raise DataTypeError(field, None, f"{value!r} is not a string")
        return value
    if kind == BOOLEAN:
        if not isinstance(value, bool):
            raise DataTypeError(field, None, f"{value!r} is not a boolean")
        return "1" if value else "0"
    if kind in INTEGER_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataTypeError(field, None, f"{value!r} is not an integer")
        lo, hi = INTEGER_RANGES[kind]
        if not lo <= value <= hi:
            raise DataTypeError(field, None, f"{value} is outside the range of dt={kind}")
        return str(value)
    if kind in FLOAT_RANGES:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataTypeError(field, None, f"{value!r} is not a number")
        f = check_float(float(value), kind, field)
        return _shortest_float32(f) if kind == R4 else repr(f)
    if kind == BIN_HEX:
        if not isinstance(value, (bytes, bytearray)):
            raise DataTypeError(field, None, f"{value!r} is not bytes")
        return bytes(value).hex().upper()
    if not isinstance(value, str) or len(value) != 1:
        raise DataTypeError(field, None, f"{value!r} is not a single character")
    return value


def _shortest_float32(value: float) -> str:
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == packed:
            return text if any(c in text for c in ".en") else text + ".0"
    return repr(value)  # pragma: no cover - 9 digits always round-trip a float32


def infer_dt(value: object) -> str:
    """The type a Python value gets when none was declared: what a JMS application calling
    the matching ``setXxxProperty`` would produce (int -> i4 when it fits, else i8)."""
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        lo, hi = INTEGER_RANGES[I4]
        return I4 if lo <= value <= hi else I8
    if isinstance(value, float):
        return R8
    if isinstance(value, (bytes, bytearray)):
        return BIN_HEX
    if isinstance(value, str):
        return STRING
    raise DataTypeError("value", None, f"{type(value).__name__} cannot be a typed property")
