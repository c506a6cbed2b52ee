"""The message tree: ``Root -> Properties, headers..., body`` (formats-and-jms.md item 6;
seed 000 l.2384, l.488).

A node is an :class:`Element`: a name, an optional scalar value, ordered children, optional
attributes, an optional ``dt`` type (typed RFH2/JMSMap values) and a namespace. Paths are
dotted names with optional 1-based indexes, as message flows write them: ``MQMD.Priority``,
``MQRFH2.usr.colour``, ``Body.order.item[2].price``. ``*`` matches any child name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Element kinds. XML attributes and namespace declarations live among the children in the
#: XMLNSC/XMLNS domains (as IBM's parsers put them), marked by ``kind``.
ELEMENT = "element"
ATTRIBUTE = "attribute"
NS_DECL = "namespace-declaration"
CONTENT = "content"  # mixed text between child elements (XMLNS)

_STEP = re.compile(r"^([^\[\]]+)(?:\[(\d+)\])?$")


class Element:
    """One node of the message tree."""

    __slots__ = ("name", "value", "children", "attrs", "dt", "ns", "kind", "offset")

    def __init__(
        self,
        name: str,
        value: object = None,
        children: list[Element] | None = None,
        *,
        attrs: dict[str, str] | None = None,
        dt: str | None = None,
        ns: str = "",
        kind: str = ELEMENT,
        offset: int | None = None,
    ):
        self.name = name
        self.value = value
        self.children: list[Element] = children if children is not None else []
        self.attrs: dict[str, str] = attrs if attrs is not None else {}
        self.dt = dt
        self.ns = ns
        self.kind = kind
        #: Byte offset of the element in the input it was parsed from (None when built in
        #: code): errors found after parsing - a jms field of the wrong type - point there.
        #: Not part of equality.
        self.offset = offset

    # -- building ------------------------------------------------------------------------
    def add(self, name: str, value: object = None, **kw: object) -> Element:
        """Append a child and return it."""
        child = Element(name, value, **kw)  # type: ignore[arg-type]
        self.children.append(child)
        return child

    def append(self, child: Element) -> Element:
        self.children.append(child)
        return child

    # -- navigation ----------------------------------------------------------------------
    def child(self, name: str, index: int = 1) -> Element | None:
        """The ``index``-th (1-based) child called ``name`` (``*`` = any name), or ``None``."""
        seen = 0
        for c in self.children:
            if name in ("*", c.name):
                seen += 1
                if seen == index:
                    return c
        return None

    def children_named(self, name: str) -> list[Element]:
        return [c for c in self.children if name in ("*", c.name)]

    def find(self, path: str) -> Element | None:
        """The element at the dotted ``path`` below this one, or ``None`` if any step is
        missing. Raises ``ValueError`` for a syntactically bad path."""
        node: Element | None = self
        for step in split_path(path):
            name, index = step
            assert node is not None
            node = node.child(name, index)
            if node is None:
                return None
        return node

    def get(self, path: str, default: object = None) -> object:
        """The value at ``path`` (``default`` when missing or when it is a folder)."""
        node = self.find(path)
        if node is None or node.value is None:
            return default
        return node.value

    def set(self, path: str, value: object, dt: str | None = None) -> Element:
        """Set the value at ``path``, creating the missing steps as ESQL's ``SET`` does."""
        node = self
        for name, index in split_path(path):
            found = node.child(name, index)
            while found is None:
                node.add(name)
                found = node.child(name, index)
            node = found
        node.value = value
        if dt is not None:
            node.dt = dt
        return node

    def __iter__(self) -> Iterator[Element]:
        return iter(self.children)

    def __len__(self) -> int:
        return len(self.children)

    def walk(self) -> Iterator[Element]:
        """This element and all below it, depth first."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    # -- comparison and display ----------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Element):
            return NotImplemented
        return (
            self.name == other.name
            and self.value == other.value
            and type(self.value) is type(other.value)
            and self.attrs == other.attrs
            and self.dt == other.dt
            and self.ns == other.ns
            and self.kind == other.kind
            and self.children == other.children
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = f", value={self.value!r}" if self.value is not None else ""
        kids = f", {len(self.children)} children" if self.children else ""
        return f"Element({self.name!r}{extra}{kids})"

    def copy(self) -> Element:
        return Element(
            self.name,
            self.value,
            [c.copy() for c in self.children],
            attrs=dict(self.attrs),
            dt=self.dt,
            ns=self.ns,
            kind=self.kind,
            offset=self.offset,
        )

    def to_python(self) -> object:
        """A JSON-friendly view: leaves are their values, folders are dicts (a repeated name
        becomes a list), as the ``msg decode`` command prints."""
        if not self.children:
            v = self.value
            return v.hex() if isinstance(v, (bytes, bytearray)) else v
        out: dict[str, object] = {}
        for c in self.children:
            key = ("@" + c.name) if c.kind == ATTRIBUTE else c.name
            v = c.to_python()
            if key in out:
                prev = out[key]
                if isinstance(prev, list) and getattr(prev, "_repeat", False):
                    prev.append(v)
                else:
                    lst = _Repeat([prev, v])
                    out[key] = lst
            else:
                out[key] = v
        return {k: (list(v) if isinstance(v, _Repeat) else v) for k, v in out.items()}


class _Repeat(list[object]):  # marks lists made from repeated names, as opposed to list values
    _repeat = True


def split_path(path: str) -> list[tuple[str, int]]:
    """``'a.b[2].c'`` -> ``[('a', 1), ('b', 2), ('c', 1)]``."""
    if not path:
        return []
    steps = []
    for raw in path.split("."):
        m = _STEP.match(raw)
        if not m or not raw.strip():
            raise ValueError(f"bad path step {raw!r} in {path!r}")
        index = int(m.group(2)) if m.group(2) else 1
        if index < 1:
            raise ValueError(f"path indexes start at 1: {raw!r}")
        steps.append((m.group(1), index))
    return steps
