"""The JSON form of an MQ-format message: what ``relaymq msg decode`` prints and
``relaymq msg encode`` reads, so that ``encode(decode(bytes)) == bytes``.

Like IBM's browse sample it shows every MQMD field and the message data; unlike a hex dump it
also names each header and shows each MQRFH2 folder as its NameValueData text (which keeps the
``dt`` types exactly) with a parsed ``values`` view beside it. Byte fields are hex. The body is
``text`` when its format is MQSTR and it decodes in its CCSID, else ``hex``; with a domain the
parsed body tree is added as ``tree`` (display only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.constants import MQFMT_STRING
from relaymq.message.domains.json_domain import JSON as JSON_DOMAIN, from_element
from relaymq.message.domains.registry import canonical_domain, parse_body
from relaymq.message.errors import FormatError
from relaymq.message.folders import parse_folder, serialize_folder
from relaymq.message.headers import Header, MQMessage, RawHeader, fmt
from relaymq.message.mqdlh import MQDLH
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh import MQRFH
from relaymq.message.mqrfh2 import MQRFH2

_BYTE_FIELDS = ("MsgId", "CorrelId", "AccountingToken", "GroupId")


def _hexed(values: dict[str, object]) -> dict[str, object]:
    return {k: (v.hex() if isinstance(v, (bytes, bytearray)) else v) for k, v in values.items()}


def to_json(msg: MQMessage, domain: str | None = None) -> dict[str, object]:
    """The JSON-ready dict of ``msg``; ``domain`` adds the parsed body tree."""
    headers: list[dict[str, object]] = []
    for h in msg.headers:
        if isinstance(h, MQRFH2):
            entry: dict[str, object] = {"header": "MQRFH2", **{k: v for k, v in h.to_dict().items() if not isinstance(v, dict)}}
            entry["folders"] = [serialize_folder(f) for f in h.folders]
            entry["values"] = {f.name: f.to_python() if f.children else f.value for f in h.folders}
        elif isinstance(h, MQRFH):
            entry = {"header": "MQRFH", **h.to_dict()}
        elif isinstance(h, MQDLH):
            entry = {"header": "MQDLH", **h.to_dict()}
        else:
            entry = {"header": h.format_name, **h.to_dict()}
        headers.append(entry)
    body: dict[str, object] = {
        "format": msg.body_format,
        "encoding": msg.body_encoding,
        "ccsid": msg.body_ccsid,
        "length": len(msg.body),
    }
    text = None
    if msg.body_format == fmt(MQFMT_STRING):
        try:
            text = decode_text(msg.body, msg.body_ccsid, msg.body_encoding, "body", 0)
            if encode_text(text, msg.body_ccsid, msg.body_encoding) != msg.body:
                text = None
        except FormatError:
            text = None
    if text is not None:
        body["text"] = text
    else:
        body["hex"] = msg.body.hex()
    if domain:
        folder = parse_body(domain, msg.body, msg.body_ccsid, msg.body_encoding)
        body["domain"] = folder.name
        body["tree"] = from_element(folder) if folder.name == JSON_DOMAIN.name else folder.to_python()
    return {
        "MQMD": _hexed(msg.md.to_dict()),
        "descriptor_encoding": msg.md_encoding,
        "descriptor_ccsid": msg.md_ccsid,
        "headers": headers,
        "body": body,
    }


_T = TypeVar("_T")


def _require(obj: object, kind: type[_T], where: str) -> _T:
    if not isinstance(obj, kind) or (kind is int and isinstance(obj, bool)):
        name = {int: "integer", str: "string", dict: "object", list: "array"}.get(kind, kind.__name__)
        raise FormatError(where, None, f"expected a JSON {name}, found {_json_type(obj)}")
    return obj


def _json_type(obj: object) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", dict: "object", list: "array"}.get(type(obj), type(obj).__name__)


def _int(obj: object, where: str) -> int:
    return _require(obj, int, where)


def _str(obj: object, where: str) -> str:
    return _require(obj, str, where)


def _hex(obj: object, where: str) -> bytes:
    try:
        return bytes.fromhex(_str(obj, where))
    except ValueError:
        raise FormatError(where, None, "expected an even number of hex digits") from None


def _typed_fields(values: dict[str, object], defaults: object, where: str) -> dict[str, object]:
    """Check each value against the type of the field's default in ``defaults`` (an instance of
    the header's dataclass): integers, strings, or bytes written as hex."""
    out: dict[str, object] = {}
    for key, value in values.items():
        if not hasattr(defaults, key) or key in ("folders", "name_values"):
            raise FormatError(f"{where}.{key}", None, f"not a field of {where.split('[', maxsplit=1)[0]}")
        default = getattr(defaults, key)
        field = f"{where}.{key}"
        if isinstance(default, bytes):
            out[key] = _hex(value, field)
        elif isinstance(default, int):
            out[key] = _int(value, field)
        else:
            out[key] = _str(value, field)
    return out


_COMMON = ("Encoding", "CodedCharSetId", "Format", "Flags")
#: Keys ``to_json`` writes for display only, ignored on input.
_DISPLAY_ONLY = {"MQRFH2": ("Version", "values"), "MQRFH": ("Version",), "MQDLH": ("Version",)}


def from_json(doc: object) -> MQMessage:
    """The message described by ``doc`` (the :func:`to_json` shape). Fields left out take
    their defaults, so ``{"body": {"text": "hi"}}`` is a valid message.

    Anything wrong with ``doc`` is a :class:`FormatError` whose field is the JSON path
    (``MQMD.Priority``, ``headers[1].NameValueString[0]``...) and whose offset is ``None``
    (the input is a document, not bytes)."""
    data = _require(doc, dict, "message")
    assert isinstance(data, dict)
    md_values = _typed_fields(_require(data.get("MQMD", {}), dict, "MQMD"), MQMD(), "MQMD")
    md = MQMD(**md_values)  # type: ignore[arg-type]
    msg = MQMessage(md=md)
    if "descriptor_encoding" in data:
        msg.md_encoding = _int(data["descriptor_encoding"], "descriptor_encoding")
    if "descriptor_ccsid" in data:
        msg.md_ccsid = _int(data["descriptor_ccsid"], "descriptor_ccsid")
    for i, h in enumerate(_require(data.get("headers", []), list, "headers")):
        msg.headers.append(_header_from_json(h, f"headers[{i}]"))
    body = _require(data.get("body", {}), dict, "body")
    assert isinstance(body, dict)
    _body_from_json(body, msg)
    return msg


def _header_from_json(doc: object, where: str) -> Header:
    h = dict(_require(doc, dict, where))
    kind = h.pop("header", None)
    for key in _DISPLAY_ONLY.get(str(kind), ()):
        h.pop(key, None)
    read = _HEADERS_FROM_JSON.get(str(kind))
    if read is not None:
        return read(h, where)
    if isinstance(kind, str) and kind.startswith("MQH"):
        return _raw_header_from_json(kind, h, where)
    raise FormatError(f"{where}.header", None, f"unknown header kind {kind!r}")


def _rfh2_from_json(h: dict[str, object], where: str) -> Header:
    folders = _require(h.pop("folders", []), list, f"{where}.folders")
    rfh2 = MQRFH2(**_typed_fields(h, MQRFH2(), where))  # type: ignore[arg-type]
    rfh2.folders = [
        parse_folder(_str(t, f"{where}.folders[{j}]"), field=f"{where}.folders[{j}]")
        for j, t in enumerate(folders)
    ]
    return rfh2


def _rfh_from_json(h: dict[str, object], where: str) -> Header:
    pairs = []
    for j, pair in enumerate(_require(h.pop("NameValueString", []), list, f"{where}.NameValueString")):
        item = f"{where}.NameValueString[{j}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise FormatError(item, None, "expected a [name, value] pair")
        pairs.append((_str(pair[0], item + "[0]"), _str(pair[1], item + "[1]")))
    return MQRFH(**_typed_fields(h, MQRFH(), where), name_values=pairs)  # type: ignore[arg-type]


def _dlh_from_json(h: dict[str, object], where: str) -> Header:
    return MQDLH(**_typed_fields(h, MQDLH(), where))  # type: ignore[arg-type]


def _raw_header_from_json(kind: str, h: dict[str, object], where: str) -> Header:
    for key in ("bytes", *_COMMON[:3]):
        if key not in h:
            raise FormatError(f"{where}.{key}", None, f"a {kind} header needs {key}")
    return RawHeader(
        kind, _hex(h["bytes"], f"{where}.bytes"), _int(h["Encoding"], f"{where}.Encoding"),
        _int(h["CodedCharSetId"], f"{where}.CodedCharSetId"), _str(h["Format"], f"{where}.Format"),
    )


#: Header kind -> how its JSON object becomes the header (other MQH* kinds are raw bytes).
_HEADERS_FROM_JSON: dict[str, Callable[[dict[str, object], str], Header]] = {
    "MQRFH2": _rfh2_from_json, "MQRFH": _rfh_from_json, "MQDLH": _dlh_from_json,
}


def _body_from_json(body: dict[str, object], msg: MQMessage) -> None:
    md = msg.md
    if "format" in body:
        body_format = _str(body["format"], "body.format")
        if msg.headers:
            msg.headers[-1].Format = body_format
        else:
            md.Format = body_format
    if "text" in body:
        text = _str(body["text"], "body.text")
        if not msg.headers and "format" not in body:
            md.Format = fmt(MQFMT_STRING)
        if not msg.headers and md.CodedCharSetId == 0 and "ccsid" in body:
            md.CodedCharSetId = _int(body["ccsid"], "body.ccsid")
        msg.body = encode_text(text, msg.body_ccsid, msg.body_encoding, "body.text")
    elif "hex" in body:
        msg.body = _hex(body["hex"], "body.hex")
    if "domain" in body:
        canonical_domain(_str(body["domain"], "body.domain"))
