"""MQMD, the message descriptor: the first header of every MQ message (formats-and-jms.md
item 1; seed 000 l.280-287).

Layout as IBM publishes it in ``cmqc.h``: StrucId ``MD  ``, version 1 is 324 bytes, version 2
adds the group and segmentation fields and is 364 bytes. Field names are IBM's, so
``Root.MQMD.Priority`` in a selector is ``md.Priority`` here.

The MQMD's own integers and text are in the queue manager's encoding and character set, which
the message does not record. On decode both are detected: the byte order from the Version
field (1 or 2 read one way or the other), the character family from StrucId (``MD  `` in ASCII
or in EBCDIC). Encoding and CodedCharSetId *inside* the MQMD describe what follows it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from operator import attrgetter, itemgetter
from typing import NamedTuple

from relaymq.message.constants import (
    MQACT_NONE,
    MQCCSI_Q_MGR,
    MQCI_NONE,
    MQEI_UNLIMITED,
    MQENC_NATIVE,
    MQENC_NATIVE_BIG,
    MQFB_NONE,
    MQFMT_NONE,
    MQGI_NONE,
    MQMD_STRUC_ID,
    MQMD_VERSION_1,
    MQMD_VERSION_2,
    MQMF_NONE,
    MQMI_NONE,
    MQMT_DATAGRAM,
    MQOL_UNDEFINED,
    MQPER_PERSISTENCE_AS_Q_DEF,
    MQPRI_PRIORITY_AS_Q_DEF,
    MQRO_NONE,
    MQAT_NO_CONTEXT,
)
from relaymq.message.errors import StrucIdError, TruncatedError
from relaymq.message.layout import BYTE, CHAR, LONG, Field, Layout, byte_order

_V1_FIELDS = [
    Field("StrucId", CHAR, 4),
    Field("Version", LONG),
    Field("Report", LONG),
    Field("MsgType", LONG),
    Field("Expiry", LONG),
    Field("Feedback", LONG),
    Field("Encoding", LONG),
    Field("CodedCharSetId", LONG),
    Field("Format", CHAR, 8),
    Field("Priority", LONG),
    Field("Persistence", LONG),
    Field("MsgId", BYTE, 24),
    Field("CorrelId", BYTE, 24),
    Field("BackoutCount", LONG),
    Field("ReplyToQ", CHAR, 48),
    Field("ReplyToQMgr", CHAR, 48),
    Field("UserIdentifier", CHAR, 12),
    Field("AccountingToken", BYTE, 32),
    Field("ApplIdentityData", CHAR, 32),
    Field("PutApplType", LONG),
    Field("PutApplName", CHAR, 28),
    Field("PutDate", CHAR, 8),
    Field("PutTime", CHAR, 8),
    Field("ApplOriginData", CHAR, 4),
]
_V2_FIELDS = [
    Field("GroupId", BYTE, 24),
    Field("MsgSeqNumber", LONG),
    Field("Offset", LONG),
    Field("MsgFlags", LONG),
    Field("OriginalLength", LONG),
]

LAYOUT_V1 = Layout("MQMD", _V1_FIELDS)
LAYOUT_V2 = Layout("MQMD", _V1_FIELDS + _V2_FIELDS)

#: CCSID used for the MQMD's own text when none is given: ISO 8859-1, the default CCSID of
#: MQ queue managers on Linux; EBCDIC descriptors are read as CCSID 500.
MD_CCSID_ASCII = 819
MD_CCSID_EBCDIC = 500
_EBCDIC_STRUC_ID = b"\xd4\xc4\x40\x40"


@dataclass
class MQMD:
    """The message descriptor, with IBM's initial values (``MQMD_DEFAULT``)."""

    Version: int = MQMD_VERSION_2
    Report: int = MQRO_NONE
    MsgType: int = MQMT_DATAGRAM
    Expiry: int = MQEI_UNLIMITED
    Feedback: int = MQFB_NONE
    Encoding: int = MQENC_NATIVE
    CodedCharSetId: int = MQCCSI_Q_MGR
    Format: str = MQFMT_NONE.strip()
    Priority: int = MQPRI_PRIORITY_AS_Q_DEF
    Persistence: int = MQPER_PERSISTENCE_AS_Q_DEF
    MsgId: bytes = MQMI_NONE
    CorrelId: bytes = MQCI_NONE
    BackoutCount: int = 0
    ReplyToQ: str = ""
    ReplyToQMgr: str = ""
    UserIdentifier: str = ""
    AccountingToken: bytes = MQACT_NONE
    ApplIdentityData: str = ""
    PutApplType: int = MQAT_NO_CONTEXT
    PutApplName: str = ""
    PutDate: str = ""
    PutTime: str = ""
    ApplOriginData: str = ""
    GroupId: bytes = MQGI_NONE
    MsgSeqNumber: int = 1
    Offset: int = 0
    MsgFlags: int = MQMF_NONE
    OriginalLength: int = MQOL_UNDEFINED

    def to_dict(self) -> dict[str, object]:
        """Field name -> value, in layout order (what ``Root.MQMD`` shows)."""
        names = [f.name for f in (LAYOUT_V2 if self.Version >= 2 else LAYOUT_V1).fields]
        return {n: getattr(self, n) for n in names if n != "StrucId"}

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        names = cls.__dict__.get("_field_names")
        if names is None:
            names = tuple(f.name for f in fields(cls))
            cls._field_names = names  # type: ignore[attr-defined]
        return names


def detect_md(data: bytes, offset: int = 0) -> tuple[int, int]:
    """(encoding, ccsid) of the MQMD's own fields, read from StrucId and Version."""
    if len(data) - offset < 8:
        raise TruncatedError("MQMD.StrucId" if len(data) - offset < 4 else "MQMD.Version",
                             offset if len(data) - offset < 4 else offset + 4,
                             "input too short for an MQMD")
    sid = bytes(data[offset : offset + 4])
    if sid == MQMD_STRUC_ID.encode("ascii"):
        ccsid = MD_CCSID_ASCII
    elif sid == _EBCDIC_STRUC_ID:
        ccsid = MD_CCSID_EBCDIC
    else:
        raise StrucIdError("MQMD.StrucId", offset, f"expected 'MD  ', found {sid!r}")
    version = bytes(data[offset + 4 : offset + 8])
    if int.from_bytes(version, "big") in (1, 2):
        encoding = MQENC_NATIVE_BIG
    elif int.from_bytes(version, "little") in (1, 2):
        encoding = MQENC_NATIVE
    else:
        raise StrucIdError("MQMD.Version", offset + 4, f"unsupported MQMD version bytes {version.hex()}")
    return encoding, ccsid


def decode_mqmd(
    data: bytes, offset: int = 0, encoding: int | None = None, ccsid: int | None = None
) -> tuple[MQMD, int]:
    """Decode an MQMD at ``offset``; returns it and the offset just after it.

    ``encoding``/``ccsid`` give the MQMD's own representation when known; otherwise detected.
    """
    det_enc, det_ccsid = detect_md(data, offset)
    enc = det_enc if encoding is None else encoding
    cs = det_ccsid if ccsid is None else ccsid
    order = byte_order(enc)
    version = int.from_bytes(data[offset + 4 : offset + 8], "big" if order == ">" else "little", signed=True)
    if version not in (MQMD_VERSION_1, MQMD_VERSION_2):
        raise StrucIdError("MQMD.Version", offset + 4, f"unsupported MQMD version {version}")
    layout = LAYOUT_V2 if version == MQMD_VERSION_2 else LAYOUT_V1
    values = layout.decode_values(data, offset, order, cs, enc)  # one layout, read once
    end = offset + layout.size
    if values[0] != _STRUC_ID:
        raise StrucIdError("MQMD.StrucId", offset, f"expected 'MD  ', found {values[0]!r}")
    return MQMD(*values[1:]), end  # type: ignore[arg-type]  # the layout's order is the dataclass's


def encode_mqmd(md: MQMD, encoding: int = MQENC_NATIVE, ccsid: int = MD_CCSID_ASCII, format_name: str | None = None) -> bytes:
    """The MQMD as bytes (324 for version 1, 364 for version 2), its own fields in
    ``encoding``/``ccsid``."""
    if md.Version not in (MQMD_VERSION_1, MQMD_VERSION_2):
        raise StrucIdError("MQMD.Version", 4, f"unsupported MQMD version {md.Version}")
    if md.Version == MQMD_VERSION_2:
        layout, values = LAYOUT_V2, _V2_VALUES(md)
    else:
        layout, values = LAYOUT_V1, _V1_VALUES(md)
    if format_name is not None:
        values = (*values[:_FORMAT_AT], format_name, *values[_FORMAT_AT + 1:])
    return layout.encode_values((MQMD_STRUC_ID, *values), byte_order(encoding), ccsid, encoding)


class MQMDTemplates:
    """MQMDs that differ only in MsgId and CorrelId (the copies of one publication for its
    queue subscribers; the messages one application puts), encoded once: the first of each
    kind is encoded in full, the others are its bytes with their own two ids put in (the rest
    of an MQMD costs far more to encode than to compare). Ids that are not bytes of at most 24,
    and integer fields that are not ints (a float equal to one is refused by the full
    encoding), take the full encoding. Past ``limit`` kinds the oldest is forgotten."""

    __slots__ = ("_known", "limit")

    #: Kinds kept by default (persistence and identity variants of one publication are few).
    LIMIT = 8

    def __init__(self, limit: int = LIMIT) -> None:
        self._known: dict[tuple[object, ...], bytes] = {}
        self.limit = limit

    def encode(self, md: MQMD, encoding: int, ccsid: int, format_name: str | None) -> bytes:
        """``encode_mqmd(md, encoding, ccsid, format_name)``."""
        msg_id, correl_id = md.MsgId, md.CorrelId
        if type(msg_id) is not bytes or type(correl_id) is not bytes or len(msg_id) > 24 or len(correl_id) > 24:
            return encode_mqmd(md, encoding, ccsid, format_name)
        values = _V2_VALUES(md)
        key = (encoding, ccsid, format_name, *values[:_MSG_ID_AT], *values[_MSG_ID_AT + 2:])
        try:
            template = self._known.get(key)
        except TypeError:  # a field of an unhashable type: it is checked by the full encoding
            return encode_mqmd(md, encoding, ccsid, format_name)
        if template is None:
            template = encode_mqmd(md, encoding, ccsid, format_name)
            known = self._known
            if len(known) >= self.limit:
                known.pop(next(iter(known)), None)  # the oldest kind (None: another thread took it)
            known[key] = template
            return template
        if set(map(type, _LONGS(values))) != _INT_ONLY:  # equal to the template's, not of its type
            return encode_mqmd(md, encoding, ccsid, format_name)
        return with_ids(template, msg_id, correl_id)


def with_ids(data: bytes, msg_id: bytes, correl_id: bytes) -> bytes:
    """``data`` (an encoded MQMD, maybe followed by the rest of its message) with MsgId and
    CorrelId replaced (bytes of at most 24, NUL-padded as the full encoding pads them): the
    message of another MQMD that differs from this one in its ids only."""
    head, tail = around_ids(data)
    return b"".join((head, msg_id.ljust(24, b"\0"), correl_id.ljust(24, b"\0"), tail))


def around_ids(data: bytes) -> tuple[bytes, bytes]:
    """``data`` (as :func:`with_ids` takes it) before its MsgId and after its CorrelId: with ids
    of 24 bytes, ``head + msg_id + correl_id + tail`` is ``with_ids(data, msg_id, correl_id)``
    (the copies of one publication are cut once, issue 14)."""
    return data[:_MSG_ID_OFFSET], data[_MSG_ID_OFFSET + 48:]


class PutFields(NamedTuple):
    """The MQMD fields a queue manager reads of a message it puts (``put_fields``)."""

    Expiry: int
    Priority: int
    MsgId: bytes
    CorrelId: bytes


def put_fields(data: bytes) -> PutFields | None:
    """Expiry, Priority, MsgId and CorrelId of the encoded message ``data``, read at their
    offsets without decoding it; None when its MQMD is not one this product writes (ASCII
    StrucId, version 1 or 2, either byte order): decode it instead."""
    if len(data) < LAYOUT_V1.size or not data.startswith(_STRUC_ID_ASCII):
        return None
    version = data[4:8]
    if version in _LITTLE_VERSIONS:
        return tuple.__new__(PutFields, _PUT_FIELDS_LITTLE.unpack_from(data))
    if version in _BIG_VERSIONS:
        return tuple.__new__(PutFields, _PUT_FIELDS_BIG.unpack_from(data))
    return None


# The MQMD's fields in layout order (after StrucId), read in one call; where Format is in them.
_V1_VALUES = attrgetter(*LAYOUT_V1.names[1:])
_V2_VALUES = attrgetter(*LAYOUT_V2.names[1:])
_FORMAT_AT = LAYOUT_V2.names.index("Format") - 1
# The integer fields among those values (a template is used only when they are all ints).
_LONGS = itemgetter(*(i - 1 for i, f in enumerate(LAYOUT_V2.fields) if f.kind == LONG))
_INT_ONLY = {int}
_STRUC_ID = MQMD_STRUC_ID.rstrip()
# Where MsgId is in those values and in the bytes (CorrelId follows it; the same in version 1).
_MSG_ID_AT = LAYOUT_V2.names.index("MsgId") - 1
_MSG_ID_OFFSET = LAYOUT_V2.offsets[_MSG_ID_AT + 1]
assert LAYOUT_V2.names[_MSG_ID_AT + 2] == "CorrelId" and LAYOUT_V2.offsets[_MSG_ID_AT + 2] == _MSG_ID_OFFSET + 24
assert LAYOUT_V1.offsets[_MSG_ID_AT + 1] == _MSG_ID_OFFSET
assert LAYOUT_V2.names[1:] == MQMD.field_names(), "MQMD(*values) needs the layout in the dataclass's order"
# Where put_fields reads: Expiry, Priority, MsgId, CorrelId (the same in versions 1 and 2).
_PUT_AT = [LAYOUT_V1.offsets[LAYOUT_V1.names.index(name)] for name in PutFields._fields]
assert _PUT_AT[2] == _MSG_ID_OFFSET and LAYOUT_V1.offsets[LAYOUT_V1.names.index("Version")] == 4
_PUT_FORMAT = f"{_PUT_AT[0]}xi{_PUT_AT[1] - _PUT_AT[0] - 4}xi{_PUT_AT[2] - _PUT_AT[1] - 4}x24s24s"
_PUT_FIELDS_LITTLE = struct.Struct("<" + _PUT_FORMAT)
_PUT_FIELDS_BIG = struct.Struct(">" + _PUT_FORMAT)
_STRUC_ID_ASCII = MQMD_STRUC_ID.encode("ascii")
_LITTLE_VERSIONS = {v.to_bytes(4, "little") for v in (MQMD_VERSION_1, MQMD_VERSION_2)}
_BIG_VERSIONS = {v.to_bytes(4, "big") for v in (MQMD_VERSION_1, MQMD_VERSION_2)}
