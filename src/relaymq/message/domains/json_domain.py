"""The JSON domain (added by the product, formats-and-jms.md item 7).

An object's members are the children of the ``JSON`` body folder, so ``Body.a.b`` reads
``{"a": {"b": 1}}`` directly (IBM's later JSON parser puts a ``Data`` level in between; this
product does not). Array members are children named ``Item``. Containers are marked by
``kind`` (``object``/``array``), ``null`` by kind ``null``, so the tree serialises back to the
same JSON. Repeated keys are kept in order, both ways: ``{"a":1,"a":2}`` is two children
named ``a`` (``Body.a`` reads the first, ``Body.a[2]`` the second) and is written back with
both. NaN and Infinity are not JSON and are refused, and so is nesting deeper than
:data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json

from relaymq.message.ccsid import offset_mapper
from relaymq.message.domains.base import bytes_of, text_of
from relaymq.message.errors import DomainError
from relaymq.message.tree import ELEMENT, Element

OBJECT, ARRAY, NULL = "object", "array", "null"
ITEM = "Item"
MAX_DEPTH = 256


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _to_element(name: str, value: object, depth: int = 0) -> Element:
    if depth > MAX_DEPTH:  # pragma: no cover - parse() refuses deeper text first (_scan)
        raise DomainError("JSON", None, f"nested deeper than {MAX_DEPTH}")
    if isinstance(value, _Pairs):
        return Element(name, children=[_to_element(k, v, depth + 1) for k, v in value], kind=OBJECT)
    if isinstance(value, list):
        return Element(name, children=[_to_element(ITEM, v, depth + 1) for v in value], kind=ARRAY)
    if value is None:
        return Element(name, kind=NULL)
    return Element(name, value)


class _Pairs(list[tuple[str, object]]):  # an object's members, order and repeats kept
    pass


def from_element(node: Element) -> object:
    """The JSON value a tree node stands for (iterative enough for bounded depth)."""
    if node.kind == OBJECT:
        return {c.name: from_element(c) for c in node.children}
    if node.kind == ARRAY:
        return [from_element(c) for c in node.children]
    if node.kind == NULL:
        return None
    if node.children:  # a folder built by hand (e.g. from XML) becomes an object
        return {c.name: from_element(c) for c in node.children}
    v = node.value
    return v.hex() if isinstance(v, (bytes, bytearray)) else v


def _pairs_object(pairs: list[tuple[str, object]]) -> _Pairs:
    return _Pairs(pairs)


#: ``json.loads(text, object_pairs_hook=..., parse_constant=...)`` without a decoder made per
#: call (its scanner's making cost more than parsing a small body; issue 14, content filters).
_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_object, parse_constant=_refuse_constant)


def _scan(text: str) -> tuple[int | None, int | None]:
    """One pass over ``text`` outside string literals: the index of the first bracket nested
    deeper than MAX_DEPTH, and the index of the first bare ``N``/``I`` (NaN, Infinity) - the
    standard library's parser gives neither position (and recurses once per level)."""
    depth, i, n = 0, 0, len(text)
    constant: int | None = None
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return i, constant
        elif ch in "]}":
            depth -= 1
        elif constant is None and ch in "NI":
            constant = i - 1 if ch == "I" and i > 0 and text[i - 1] == "-" else i
        i += 1
    return None, constant


class JSONDomain:
    name = "JSON"

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        text = text_of(data, ccsid, encoding, self.name)
        # only a text with more brackets than MAX_DEPTH can nest deeper: the scan, a Python
        # loop over every character, is for those (and for an error's position) alone
        if text.count("[") + text.count("{") > MAX_DEPTH:
            too_deep, _ = _scan(text)
            if too_deep is not None:
                raise DomainError("JSON", offset_mapper(text, ccsid, encoding)(too_deep),
                                  f"nested deeper than {MAX_DEPTH}")
        try:
            if text.startswith("\ufeff"):  # as json.loads refuses it
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
            value = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            raise DomainError("JSON", offset_mapper(text, ccsid, encoding)(exc.pos), exc.msg) from None
        except ValueError as exc:  # NaN / Infinity, refused by _refuse_constant
            constant = _scan(text)[1]
            raise DomainError("JSON", offset_mapper(text, ccsid, encoding)(constant if constant is not None else 0),
                              str(exc)) from None
        return _to_element(self.name, value)

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        if body.kind == ELEMENT and not body.children and body.value is None:
            return bytes_of("{}", ccsid, encoding, self.name)
        out: list[str] = []
        _write(body, out)
        return bytes_of("".join(out), ccsid, encoding, self.name)


def _scalar_text(node: Element) -> str:
    value = node.value
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).hex()
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DomainError(f"JSON.{node.name}", None, f"{value!r} cannot be written as JSON: {exc}") from None


def _write(node: Element, out: list[str]) -> None:
    """The JSON text of ``node``: members in tree order, a repeated name written as many times
    as it occurs (so a parsed document with duplicate keys is written back as it was)."""
    if node.kind == ARRAY:
        out.append("[")
        for i, child in enumerate(node.children):
            if i:
                out.append(",")
            _write(child, out)
        out.append("]")
    elif node.kind == OBJECT or node.children:  # a folder built by hand is an object too
        out.append("{")
        for i, child in enumerate(node.children):
            if i:
                out.append(",")
            out.append(json.dumps(child.name, ensure_ascii=False))
            out.append(":")
            _write(child, out)
        out.append("}")
    elif node.kind == NULL:
        out.append("null")
    else:
        out.append(_scalar_text(node))


JSON = JSONDomain()
