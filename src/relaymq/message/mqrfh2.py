"""MQRFH2, rules and formatting header version 2 (formats-and-jms.md items 2-4; seed 003
l.4762-5151).

Fixed part (36 bytes, ``cmqc.h``): StrucId ``RFH ``, Version 2, StrucLength, Encoding,
CodedCharSetId, Format, Flags, NameValueCCSID; then (NameValueLength, NameValueData) pairs,
one folder each. The fixed fields are in the encoding and character set of the header before
(the MQMD, usually); NameValueData is in NameValueCCSID (1208, 1200, 13488 or 17584), whose
UTF-16 byte order is that of the other fields. StrucLength covers the pairs; on output it is a multiple of 4 (each NameValueData padded with
blanks), on input any length that fits is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relaymq.message.ccsid import NAME_VALUE_CCSIDS, UTF16_CCSIDS, decode_text, encode_text, offset_mapper
from relaymq.message.constants import (
    MQCCSI_INHERIT,
    MQENC_NATIVE,
    MQRFH_NONE,
    MQRFH_STRUC_ID,
    MQRFH_STRUC_LENGTH_FIXED_2,
    MQRFH_VERSION_2,
)
from relaymq.message.errors import CCSIDError, LengthError, StrucIdError, TruncatedError
from relaymq.message.folders import parse_folder, serialize_folder
from relaymq.message.layout import CHAR, LONG, Field, Layout, byte_order
from relaymq.message.tree import Element

LAYOUT = Layout(
    "MQRFH2",
    [
        Field("StrucId", CHAR, 4),
        Field("Version", LONG),
        Field("StrucLength", LONG),
        Field("Encoding", LONG),
        Field("CodedCharSetId", LONG),
        Field("Format", CHAR, 8),
        Field("Flags", LONG),
        Field("NameValueCCSID", LONG),
    ],
)
assert LAYOUT.size == MQRFH_STRUC_LENGTH_FIXED_2


@dataclass
class MQRFH2:
    """One MQRFH2 header: fixed fields (IBM names) and its folders in order.

    ``Encoding``, ``CodedCharSetId`` and ``Format`` describe what follows this header.
    """

    Encoding: int = MQENC_NATIVE
    CodedCharSetId: int = MQCCSI_INHERIT
    Format: str = ""
    Flags: int = MQRFH_NONE
    NameValueCCSID: int = 1208
    folders: list[Element] = field(default_factory=list)

    FORMAT_NAME = "MQHRF2"

    def folder(self, name: str) -> Element | None:
        """The first folder called ``name`` (``usr``, ``jms``, ``mcd``, ``psc``...)."""
        for f in self.folders:
            if f.name == name:
                return f
        return None

    def ensure_folder(self, name: str) -> Element:
        found = self.folder(name)
        if found is None:
            found = Element(name)
            self.folders.append(found)
        return found

    def get(self, path: str, default: object = None) -> object:
        """``get('usr.colour')``: a value by folder and dotted path."""
        head, _, rest = path.partition(".")
        f = self.folder(head)
        if f is None:
            return default
        return f.get(rest, default) if rest else (f.value if f.value is not None else default)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "Version": MQRFH_VERSION_2,
            "Encoding": self.Encoding,
            "CodedCharSetId": self.CodedCharSetId,
            "Format": self.Format,
            "Flags": self.Flags,
            "NameValueCCSID": self.NameValueCCSID,
        }
        for f in self.folders:
            out.setdefault(f.name, f.to_python() if f.children else {})
        return out


def decode_rfh2(data: bytes, offset: int, encoding: int, ccsid: int) -> tuple[MQRFH2, int]:
    """Decode an MQRFH2 at ``offset``; ``encoding``/``ccsid`` are those that the preceding
    header declares for what follows it. Returns the header and the offset after it."""
    order = byte_order(encoding)
    LAYOUT.check_room(data, offset)
    sid = bytes(data[offset : offset + 4])
    values = LAYOUT.decode(data, offset, order, ccsid, encoding)
    if values["StrucId"] != MQRFH_STRUC_ID.rstrip():
        raise StrucIdError("MQRFH2.StrucId", offset, f"expected 'RFH ', found {sid!r}")
    if values["Version"] != MQRFH_VERSION_2:
        raise StrucIdError("MQRFH2.Version", offset + 4, f"expected version 2, found {values['Version']}")
    length = values["StrucLength"]
    assert isinstance(length, int)
    # A StrucLength that is not a multiple of 4 is accepted (the seed only warns of conversion
    # problems); this product always writes multiples of 4.
    if length < MQRFH_STRUC_LENGTH_FIXED_2:
        raise LengthError("MQRFH2.StrucLength", offset + 8, f"{length} is less than the 36-byte fixed part")
    end = offset + length
    if end > len(data):
        raise LengthError("MQRFH2.StrucLength", offset + 8, f"{length} bytes run past the end of the message ({len(data) - offset} left)")
    nv_ccsid = values["NameValueCCSID"]
    assert isinstance(nv_ccsid, int)
    if nv_ccsid not in NAME_VALUE_CCSIDS:
        raise CCSIDError("MQRFH2.NameValueCCSID", offset + 32, f"{nv_ccsid} is not 1208, 1200, 13488 or 17584")
    folders: list[Element] = []
    pos = offset + MQRFH_STRUC_LENGTH_FIXED_2
    while pos < end:
        if end - pos < 4:
            raise TruncatedError("MQRFH2.NameValueLength", pos, "fewer than 4 bytes left in StrucLength")
        nv_len = int.from_bytes(data[pos : pos + 4], "big" if order == ">" else "little", signed=True)
        if nv_len < 0 or pos + 4 + nv_len > end:
            raise LengthError("MQRFH2.NameValueLength", pos, f"{nv_len} runs past StrucLength ({end - pos - 4} bytes left)")
        start = pos + 4
        raw = bytes(data[start : start + nv_len])
        # the UCS-2 CCSIDs share UTF-16's codec; surrogates are refused for all three below
        text = decode_text(raw, 1200 if nv_ccsid in UTF16_CCSIDS else nv_ccsid, encoding, "MQRFH2.NameValueData", start)
        _refuse_surrogates(text, nv_ccsid, encoding, start)
        folders.append(parse_folder(text, offset_mapper(text, nv_ccsid, encoding, start), "MQRFH2.NameValueData"))
        pos = start + nv_len
    return (
        MQRFH2(
            Encoding=values["Encoding"],  # type: ignore[arg-type]
            CodedCharSetId=values["CodedCharSetId"],  # type: ignore[arg-type]
            Format=values["Format"],  # type: ignore[arg-type]
            Flags=values["Flags"],  # type: ignore[arg-type]
            NameValueCCSID=nv_ccsid,
            folders=folders,
        ),
        end,
    )


def _refuse_surrogates(text: str, nv_ccsid: int, encoding: int, start: int | None) -> None:
    """Seed 003 l.5055: surrogate characters (X'D800'-X'DFFF') are not supported in UCS-2
    NameValueData - CCSID 1200 included, although it can carry them in a message body."""
    if nv_ccsid not in UTF16_CCSIDS:
        return
    for i, ch in enumerate(text):
        if ord(ch) > 0xFFFF:
            where = None if start is None else offset_mapper(text, nv_ccsid, encoding, start)(i)
            raise CCSIDError(
                "MQRFH2.NameValueData", where,
                f"character U+{ord(ch):X} needs surrogates (X'D800'-X'DFFF'), which NameValueCCSID {nv_ccsid} does not support",
            )


def encode_rfh2(rfh2: MQRFH2, encoding: int, ccsid: int, format_name: str | None = None) -> bytes:
    """The header as bytes; ``encoding``/``ccsid`` are those of the preceding header;
    ``format_name`` replaces the header's Format (what follows it) in the bytes."""
    order = byte_order(encoding)
    if rfh2.NameValueCCSID not in NAME_VALUE_CCSIDS:
        raise CCSIDError("MQRFH2.NameValueCCSID", None, f"{rfh2.NameValueCCSID} is not 1208, 1200, 13488 or 17584")
    blank = encode_text(" ", rfh2.NameValueCCSID, encoding)
    parts: list[bytes] = []
    for folder in rfh2.folders:
        text = serialize_folder(folder)
        _refuse_surrogates(text, rfh2.NameValueCCSID, encoding, None)
        data = encode_text(text, rfh2.NameValueCCSID, encoding, f"MQRFH2.{folder.name}")
        while len(data) % 4:
            data += blank
        parts.append(len(data).to_bytes(4, "big" if order == ">" else "little", signed=True))
        parts.append(data)
    tail = b"".join(parts)
    return _fixed_part(rfh2, order, ccsid, encoding, format_name, MQRFH_STRUC_LENGTH_FIXED_2 + len(tail)) + tail


#: Fixed parts already encoded, by what they are made of but StrucLength (the headers of a run
#: of publications differ in their folders only): ``_fixed_part`` puts the length in.
_FIXED: dict[tuple[object, ...], bytes] = {}
_FIXED_LIMIT = 64
_LENGTH_AT = LAYOUT.offset_of("StrucLength")


def _fixed_part(rfh2: MQRFH2, order: str, ccsid: int, encoding: int, format_name: str | None, length: int) -> bytes:
    """The fixed part of the header, ``length`` its StrucLength: encoded in full the first time,
    then its template with the length put in. Integer fields that are not ints take the full
    encoding every time, which checks them (1.0 equals 1 as a key, and is refused there)."""
    fmt = rfh2.Format if format_name is None else format_name
    ints = (rfh2.Encoding, rfh2.CodedCharSetId, rfh2.Flags, rfh2.NameValueCCSID)
    key = (order, ccsid, encoding, fmt, *ints) if all(type(v) is int for v in ints) else None
    template = _FIXED.get(key) if key is not None else None
    if template is None:
        template = LAYOUT.encode(
            {
                "StrucId": MQRFH_STRUC_ID,
                "Version": MQRFH_VERSION_2,
                "StrucLength": length,
                "Encoding": rfh2.Encoding,
                "CodedCharSetId": rfh2.CodedCharSetId,
                "Format": fmt,
                "Flags": rfh2.Flags,
                "NameValueCCSID": rfh2.NameValueCCSID,
            },
            order,
            ccsid,
            encoding,
        )
        if key is not None:
            if len(_FIXED) >= _FIXED_LIMIT:
                _FIXED.clear()
            _FIXED[key] = template
        return template
    return b"".join((template[:_LENGTH_AT], length.to_bytes(4, "big" if order == ">" else "little", signed=True),
                     template[_LENGTH_AT + 4:]))
