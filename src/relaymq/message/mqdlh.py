"""MQDLH, the dead-letter header that a queue manager puts in front of a message it cannot
deliver (Format ``MQDEAD``). Layout from IBM's ``cmqc.h`` (version 1, 172 bytes); decoded so
that a message taken from a dead-letter queue still shows its MQRFH2 and body."""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.message.constants import MQCCSI_INHERIT, MQENC_NATIVE
from relaymq.message.errors import StrucIdError
from relaymq.message.layout import CHAR, LONG, Field, Layout, byte_order

STRUC_ID = "DLH "
LAYOUT = Layout(
    "MQDLH",
    [
        Field("StrucId", CHAR, 4),
        Field("Version", LONG),
        Field("Reason", LONG),
        Field("DestQName", CHAR, 48),
        Field("DestQMgrName", CHAR, 48),
        Field("Encoding", LONG),
        Field("CodedCharSetId", LONG),
        Field("Format", CHAR, 8),
        Field("PutApplType", LONG),
        Field("PutApplName", CHAR, 28),
        Field("PutDate", CHAR, 8),
        Field("PutTime", CHAR, 8),
    ],
)
assert LAYOUT.size == 172


@dataclass
class MQDLH:
    """The dead-letter header, its fields under their MQ names."""

    Reason: int = 0
    DestQName: str = ""
    DestQMgrName: str = ""
    Encoding: int = MQENC_NATIVE
    CodedCharSetId: int = MQCCSI_INHERIT
    Format: str = ""
    PutApplType: int = 0
    PutApplName: str = ""
    PutDate: str = ""
    PutTime: str = ""

    FORMAT_NAME = "MQDEAD"

    def to_dict(self) -> dict[str, object]:
        return {"Version": 1, **self.__dict__}


def decode_dlh(data: bytes, offset: int, encoding: int, ccsid: int) -> tuple[MQDLH, int]:
    values = LAYOUT.decode(data, offset, byte_order(encoding), ccsid, encoding)
    if values.pop("StrucId") != STRUC_ID.rstrip():
        raise StrucIdError("MQDLH.StrucId", offset, f"expected 'DLH ', found {bytes(data[offset:offset + 4])!r}")
    if values.pop("Version") != 1:
        raise StrucIdError("MQDLH.Version", offset + 4, "expected version 1")
    return MQDLH(**values), offset + LAYOUT.size  # type: ignore[arg-type]


def encode_dlh(dlh: MQDLH, encoding: int, ccsid: int, format_name: str | None = None) -> bytes:
    values: dict[str, object] = {"StrucId": STRUC_ID, "Version": 1, **dlh.__dict__}
    if format_name is not None:
        values["Format"] = format_name
    return LAYOUT.encode(values, byte_order(encoding), ccsid, encoding)
