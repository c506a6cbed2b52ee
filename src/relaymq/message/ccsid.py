"""Coded character set identifiers (CCSIDs) <-> Python codecs.

MQ names character sets by number. The product converts the ones the issue lists (1208 UTF-8,
1200/13488/17584 UTF-16/UCS-2, 819 ISO 8859-1, 850 and 437 PC code pages, 37, 500 and 1047
EBCDIC) and a few neighbours (1252, 367, 1140). Any other number is a :class:`CCSIDError`
naming the field and offset where it was read, never a silent mis-decode.

Python has no codec for EBCDIC 1047 (z/OS Unix), so its table is derived here from CCSID 37:
the two differ only in the six positions listed in ``_CP1047_FROM_CP037``.
"""

from __future__ import annotations

import codecs
import functools
from typing import Any
from collections.abc import Callable

from relaymq.message.constants import MQENC_INTEGER_MASK, MQENC_INTEGER_REVERSED
from relaymq.message.errors import CCSIDError

_SIMPLE = {
    1208: "utf-8",
    819: "latin-1",
    850: "cp850",
    437: "cp437",
    37: "cp037",
    500: "cp500",
    1140: "cp1140",
    1252: "cp1252",
    367: "ascii",
}


@functools.cache
def _one_byte_blank(codec: str) -> bool:
    """Whether ``codec``'s blank is a single byte (all of _SIMPLE's today; checked, not
    assumed). Asked per codec on its first use: checking them all when the module is imported
    loaded six code page modules into every broker process (issue 16, rows 6 and 9)."""
    return len(" ".encode(codec)) == 1

#: Unicode CCSIDs whose byte order follows the integer encoding of the structure.
UTF16_CCSIDS = frozenset({1200, 13488, 17584})

#: CCSIDs allowed for MQRFH2 NameValueData (seed 003, NameValueCCSID field).
NAME_VALUE_CCSIDS = frozenset({1208, 1200, 13488, 17584})

SUPPORTED_CCSIDS = frozenset(set(_SIMPLE) | {1047} | UTF16_CCSIDS)

EBCDIC_CCSIDS = frozenset({37, 500, 1047, 1140})

# Byte -> character where CCSID 1047 differs from CCSID 37.
_CP1047_FROM_CP037 = {0x5F: "^", 0xAD: "[", 0xB0: "\u00ac", 0xBA: "\u00dd", 0xBB: "\u00a8", 0xBD: "]"}


@functools.cache
def _cp1047() -> tuple[str, Any]:  # Any: codecs' encoding map has no public type
    """CCSID 1047's decoding table and encoding map, built by its first use."""
    table = list(bytes(range(256)).decode("cp037"))
    for byte, ch in _CP1047_FROM_CP037.items():
        table[byte] = ch
    decoding = "".join(table)
    return decoding, codecs.charmap_build(decoding)


def is_supported(ccsid: int) -> bool:
    return ccsid in SUPPORTED_CCSIDS


def _utf16(encoding: int) -> str:
    little = (encoding & MQENC_INTEGER_MASK) == MQENC_INTEGER_REVERSED
    return "utf-16-le" if little else "utf-16-be"


def single_byte_codec(ccsid: int) -> str | None:
    """The Python codec of ``ccsid`` when it is one of the simple ones whose blank is one byte
    (the fast paths of relaymq.message.layout), else None."""
    codec = _SIMPLE.get(ccsid)
    return codec if codec is not None and _one_byte_blank(codec) else None


def decode_text(
    data: bytes, ccsid: int, encoding: int, field: str = "text", offset: int | None = None
) -> str:
    """Decode ``data`` in character set ``ccsid``; UTF-16 byte order follows ``encoding``."""
    try:
        if ccsid in _SIMPLE:
            return data.decode(_SIMPLE[ccsid])
        if ccsid == 1047:
            return codecs.charmap_decode(data, "strict", _cp1047()[0])[0]
        if ccsid in UTF16_CCSIDS:
            text = data.decode(_utf16(encoding))
            if ccsid != 1200 and any(0xD800 <= ord(c) <= 0xDFFF or ord(c) > 0xFFFF for c in text):
                raise CCSIDError(field, offset, f"surrogate characters are not valid in CCSID {ccsid}")
            return text
    except UnicodeDecodeError as exc:
        where = None if offset is None else offset + exc.start
        raise CCSIDError(field, where, f"bytes not valid in CCSID {ccsid}: {exc.reason}") from None
    raise CCSIDError(field, offset, f"unsupported CCSID {ccsid}")


def encode_text(text: str, ccsid: int, encoding: int, field: str = "text") -> bytes:
    """Encode ``text`` in character set ``ccsid``; raises :class:`CCSIDError` when a character
    has no representation there (MQ would otherwise put a substitution character)."""
    try:
        if ccsid in _SIMPLE:
            return text.encode(_SIMPLE[ccsid])
        if ccsid == 1047:
            return codecs.charmap_encode(text, "strict", _cp1047()[1])[0]
        if ccsid in UTF16_CCSIDS:
            if ccsid != 1200 and any(ord(c) > 0xFFFF for c in text):
                raise CCSIDError(field, None, f"characters outside UCS-2 are not valid in CCSID {ccsid}")
            return text.encode(_utf16(encoding))
    except UnicodeEncodeError as exc:
        raise CCSIDError(
            field, None, f"character {text[exc.start]!r} at index {exc.start} has no form in CCSID {ccsid}"
        ) from None
    raise CCSIDError(field, None, f"unsupported CCSID {ccsid}")


#: Character sets with one byte per character.
_SINGLE_BYTE = frozenset(set(_SIMPLE) - {1208} | {1047})


def offset_mapper(text: str, ccsid: int, encoding: int, start: int = 0) -> Callable[[int], int]:
    """A function from a character index in ``text`` (decoded from bytes in ``ccsid``) to the
    byte offset of that character in the input, ``start`` being the offset of ``text[0]``.

    Errors name byte offsets (issue 3), while parsers work on characters. Constant width
    encodings are a multiplication; otherwise each call encodes only the text since the
    previous call (parsers ask in increasing order), so mapping every element of a document
    stays linear in its size."""
    if ccsid in _SINGLE_BYTE or (ccsid == 1208 and text.isascii()):
        return lambda i: start + i
    if ccsid in UTF16_CCSIDS and all(ord(c) <= 0xFFFF for c in text):
        return lambda i: start + 2 * i
    state = [0, start]  # last character index asked for, its byte offset

    def where(i: int) -> int:
        i = max(0, min(i, len(text)))
        if i < state[0]:
            state[0], state[1] = 0, start
        try:
            state[1] += len(encode_text(text[state[0] : i], ccsid, encoding))
        except CCSIDError:  # pragma: no cover - text came from this CCSID
            pass
        state[0] = i
        return state[1]

    return where


def utf8_to_char_index(data: bytes, byte_index: int) -> int:
    """The character index of the UTF-8 byte offset ``byte_index`` in ``data``."""
    return len(data[: max(0, byte_index)].decode("utf-8", errors="ignore"))


def blank(ccsid: int, encoding: int) -> bytes:
    """The encoded blank used to pad fixed-length character fields and folders."""
    return encode_text(" ", ccsid, encoding)


def check_ccsid(ccsid: int, field: str, offset: int | None = None) -> int:
    """Return ``ccsid`` if it can be converted, else raise :class:`CCSIDError`."""
    if ccsid not in SUPPORTED_CCSIDS:
        raise CCSIDError(field, offset, f"unsupported CCSID {ccsid}")
    return ccsid
