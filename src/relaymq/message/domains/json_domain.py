"""The JSON domain (added by the product, formats-and-jms.md item 7).

An object's members are the children of the ``JSON`` body folder, so ``Body.a.b`` reads
``{"a": {"b": 1}}`` directly (IBM's later JSON parser puts a ``Data`` level in between; this
product does not). Array members are children named ``Item``. Containers are marked by
``kind`` (``object``/``array``), ``null`` by kind ``null``, so the tree serialises back to the
same JSON. Repeated keys are kept in order. NaN and Infinity are not JSON and are refused,
and so is nesting that would exhaust the parser.
"""

from __future__ import annotations

import json

from relaymq.message.domains.base import bytes_of, text_of
from relaymq.message.errors import DomainError
from relaymq.message.tree import ELEMENT, Element

OBJECT, ARRAY, NULL = "object", "array", "null"
ITEM = "Item"
MAX_DEPTH = 256


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _to_element(name: str, value: object, depth: int = 0) -> Element:
    if depth > MAX_DEPTH:
        raise DomainError("JSON", None, f"nested deeper than {MAX_DEPTH}")
    if isinstance(value, _Pairs):
        return Element(name, children=[_to_element(k, v, depth + 1) for k, v in value], kind=OBJECT)
    if isinstance(value, list):
        return Element(name, children=[_to_element(ITEM, v, depth + 1) for v in value], kind=ARRAY)
    if value is None:
        return Element(name, kind=NULL)
    return Element(name, value)


class _Pairs(list):  # an object's members, order and repeats kept
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


class JSONDomain:
    name = "JSON"

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        text = text_of(data, ccsid, encoding, self.name)
        try:
            value = json.loads(text, object_pairs_hook=_pairs_object, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            offset = len(text[: exc.pos].encode("utf-8")) if ccsid == 1208 else exc.pos
            raise DomainError("JSON", offset, exc.msg) from None
        except ValueError as exc:
            raise DomainError("JSON", None, str(exc)) from None
        except RecursionError:
            raise DomainError("JSON", None, "document too deeply nested") from None
        return _to_element(self.name, value)

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        if body.kind == ELEMENT and not body.children and body.value is None:
            value: object = {}
        else:
            value = from_element(body)
        return bytes_of(json.dumps(value, ensure_ascii=False, separators=(",", ":")), ccsid, encoding, self.name)


JSON = JSONDomain()
