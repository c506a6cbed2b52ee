"""Hand-built MQ structures for golden tests, packed field by field from IBM's published
``cmqc.h`` layouts (MQMD 324/364 bytes, MQRFH2 fixed part 36 bytes, MQRFH 32 bytes) with
:mod:`struct` - independently of the product's own layout tables."""

from __future__ import annotations

import struct


def mqmd_bytes(order: str = "<", version: int = 2, text: str = "latin-1", **f: object) -> bytes:
    """An MQMD; ``order`` '<' little-endian (546) or '>' big-endian (273)."""
    def c(value: object, n: int) -> bytes:
        raw = str(value).encode(text)
        return raw + " ".encode(text) * (n - len(raw))

    def b(value: object, n: int) -> bytes:
        return bytes(value).ljust(n, b"\x00")  # type: ignore[call-overload]

    i = lambda v: struct.pack(order + "i", v)  # noqa: E731
    parts = [
        c("MD", 4), i(version), i(f.get("Report", 0)), i(f.get("MsgType", 8)), i(f.get("Expiry", -1)),
        i(f.get("Feedback", 0)), i(f.get("Encoding", 546)), i(f.get("CodedCharSetId", 0)),
        c(f.get("Format", ""), 8), i(f.get("Priority", -1)), i(f.get("Persistence", 2)),
        b(f.get("MsgId", b""), 24), b(f.get("CorrelId", b""), 24), i(f.get("BackoutCount", 0)),
        c(f.get("ReplyToQ", ""), 48), c(f.get("ReplyToQMgr", ""), 48), c(f.get("UserIdentifier", ""), 12),
        b(f.get("AccountingToken", b""), 32), c(f.get("ApplIdentityData", ""), 32), i(f.get("PutApplType", 0)),
        c(f.get("PutApplName", ""), 28), c(f.get("PutDate", ""), 8), c(f.get("PutTime", ""), 8),
        c(f.get("ApplOriginData", ""), 4),
    ]
    if version == 2:
        parts += [b(f.get("GroupId", b""), 24), i(f.get("MsgSeqNumber", 1)), i(f.get("Offset", 0)), i(f.get("MsgFlags", 0)), i(f.get("OriginalLength", -1))]
    return b"".join(parts)


def rfh2_bytes(folders: list[bytes], order: str = "<", encoding: int = 546, ccsid: int = 1208, fmt: str = "MQSTR", nv_ccsid: int = 1208, flags: int = 0) -> bytes:
    """An MQRFH2 with the given NameValueData (already padded by the caller)."""
    tail = b"".join(struct.pack(order + "i", len(d)) + d for d in folders)
    return (
        b"RFH " + struct.pack(order + "iiii", 2, 36 + len(tail), encoding, ccsid)
        + fmt.encode("ascii").ljust(8, b" ") + struct.pack(order + "ii", flags, nv_ccsid) + tail
    )


def rfh1_bytes(name_values: bytes, order: str = "<", encoding: int = 546, ccsid: int = 1208, fmt: str = "MQSTR") -> bytes:
    return (
        b"RFH " + struct.pack(order + "iiii", 1, 32 + len(name_values), encoding, ccsid)
        + fmt.encode("ascii").ljust(8, b" ") + struct.pack(order + "i", 0) + name_values
    )
