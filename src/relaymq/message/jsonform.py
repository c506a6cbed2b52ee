"""The JSON form of an MQ-format message: what ``relaymq msg decode`` prints and
``relaymq msg encode`` reads, so that ``encode(decode(bytes)) == bytes``.

Like IBM's browse sample it shows every MQMD field and the message data; unlike a hex dump it
also names each header and shows each MQRFH2 folder as its NameValueData text (which keeps the
``dt`` types exactly) with a parsed ``values`` view beside it. Byte fields are hex. The body is
``text`` when its format is MQSTR and it decodes in its CCSID, else ``hex``; with a domain the
parsed body tree is added as ``tree`` (display only).
"""

from __future__ import annotations

from relaymq.message.ccsid import decode_text, encode_text
from relaymq.message.constants import MQFMT_STRING
from relaymq.message.domains.json_domain import JSON as JSON_DOMAIN, from_element
from relaymq.message.domains.registry import canonical_domain, parse_body
from relaymq.message.errors import FormatError
from relaymq.message.folders import parse_folder, serialize_folder
from relaymq.message.headers import MQMessage, RawHeader, fmt
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


def _require(obj: object, kind: type, where: str) -> object:
    if not isinstance(obj, kind):
        raise FormatError(where, None, f"expected a JSON {kind.__name__}")
    return obj


def from_json(doc: object) -> MQMessage:
    """The message described by ``doc`` (the :func:`to_json` shape). Fields left out take
    their defaults, so ``{"body": {"text": "hi"}}`` is a valid message."""
    data = _require(doc, dict, "message")
    assert isinstance(data, dict)
    md_values = dict(_require(data.get("MQMD", {}), dict, "MQMD"))  # type: ignore[arg-type]
    known = set(MQMD.field_names())
    for key in list(md_values):
        if key not in known:
            raise FormatError(f"MQMD.{key}", None, "not an MQMD field")
        if key in _BYTE_FIELDS:
            try:
                md_values[key] = bytes.fromhex(str(md_values[key]))
            except ValueError:
                raise FormatError(f"MQMD.{key}", None, "expected hex digits") from None
    try:
        md = MQMD(**md_values)
    except TypeError as exc:
        raise FormatError("MQMD", None, str(exc)) from None
    msg = MQMessage(md=md)
    if "descriptor_encoding" in data:
        msg.md_encoding = int(data["descriptor_encoding"])
    if "descriptor_ccsid" in data:
        msg.md_ccsid = int(data["descriptor_ccsid"])
    for i, h in enumerate(_require(data.get("headers", []), list, "headers")):  # type: ignore[union-attr]
        where = f"headers[{i}]"
        h = dict(_require(h, dict, where))  # type: ignore[arg-type]
        kind = h.pop("header", None)
        common = {k: h[k] for k in ("Encoding", "CodedCharSetId", "Format", "Flags") if k in h}
        if kind == "MQRFH2":
            rfh2 = MQRFH2(**common, NameValueCCSID=int(h.get("NameValueCCSID", 1208)))
            rfh2.folders = [parse_folder(str(t), field=f"{where}.folders") for t in h.get("folders", [])]
            msg.headers.append(rfh2)
        elif kind == "MQRFH":
            pairs = [(str(n), str(v)) for n, v in h.get("NameValueString", [])]
            msg.headers.append(MQRFH(**common, name_values=pairs))
        elif kind == "MQDLH":
            h.pop("Version", None)
            msg.headers.append(MQDLH(**h))
        elif isinstance(kind, str) and kind.startswith("MQH"):
            msg.headers.append(RawHeader(kind, bytes.fromhex(str(h.get("bytes", ""))), int(h["Encoding"]), int(h["CodedCharSetId"]), str(h["Format"])))
        else:
            raise FormatError(f"{where}.header", None, f"unknown header kind {kind!r}")
    body = _require(data.get("body", {}), dict, "body")
    assert isinstance(body, dict)
    if msg.headers:
        msg.headers[-1].Format = str(body.get("format", msg.headers[-1].Format))
    elif "format" in body:
        md.Format = str(body["format"])
    if "text" in body:
        if not msg.headers and "format" not in body:
            md.Format = fmt(MQFMT_STRING)
        if not msg.headers and md.CodedCharSetId == 0 and "ccsid" in body:
            md.CodedCharSetId = int(body["ccsid"])
        msg.body = encode_text(str(body["text"]), msg.body_ccsid, msg.body_encoding, "body.text")
    elif "hex" in body:
        try:
            msg.body = bytes.fromhex(str(body["hex"]))
        except ValueError:
            raise FormatError("body.hex", None, "expected hex digits") from None
    if "domain" in body:
        canonical_domain(str(body["domain"]))
    return msg
