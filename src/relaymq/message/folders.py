"""MQRFH2 folders: the XML-like NameValueData (formats-and-jms.md item 4; seed 003
l.5183-5281).

A folder is a restricted XML element: elements, ``dt`` and other attributes, text, the five
predefined entities and character references. There is no DTD, no processing instruction,
no user-defined entity - so nothing can expand or be fetched - and nesting is bounded. The
parser is hand-written for that subset: it reports the byte offset of every error and never
recurses.

Folder rules checked here: one folder per NameValueData; in ``usr``, simple elements only,
names without a colon, each name at most once. Values with a ``dt`` attribute are typed
(see :mod:`relaymq.message.typed`); ``xsi:nil='true'`` is a null value, as IBM MQ JMS writes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from relaymq.message.errors import DataTypeError, FolderError
from relaymq.message.tree import Element
from relaymq.message.typed import STRING, canonical_dt, format_value, infer_dt, parse_value

MAX_DEPTH = 64

_ATTR = re.compile(r"\s*([A-Za-z_:][-A-Za-z0-9_.:]*)\s*=\s*(?:'([^'<]*)'|\"([^\"<]*)\")")
_ENTITY = re.compile(r"&(#[0-9]+|#x[0-9a-fA-F]+|lt|gt|amp|quot|apos);")
_PREDEFINED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
NIL_ATTR = "xsi:nil"


@cache
def _name() -> re.Pattern[str]:
    """An element or attribute name, compiled by the first folder read or checked: its classes
    up to U+FFFF cost some 13 ms of CPU to compile (sre maps every code point), which every
    ``relaymq serve`` paid at start though a broker may never see an MQRFH2 (issue 16)."""
    return re.compile(r"[A-Za-z_:\u00c0-\uffff][-A-Za-z0-9_.:\u00b7\u00c0-\uffff]*")


def unescape(text: str, pos: int, where: Callable[[int], int], field: str) -> str:
    """Replace entity and character references; anything else after ``&`` is an error."""
    if "&" not in text:
        return text
    out, i = [], 0
    while True:
        j = text.find("&", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        m = _ENTITY.match(text, j)
        if not m:
            raise FolderError(field, where(pos + j), "undefined entity reference (only &lt; &gt; &amp; &quot; &apos; and &#...; are allowed)")
        ref = m.group(1)
        if ref.startswith("#"):
            code = int(ref[2:], 16) if ref.startswith("#x") else int(ref[1:])
            if not 0 < code <= 0x10FFFF:
                raise FolderError(field, where(pos + j), f"character reference {ref} out of range")
            out.append(chr(code))
        else:
            out.append(_PREDEFINED[ref])
        i = m.end()


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(text: str) -> str:
    return escape_text(text).replace("'", "&apos;").replace('"', "&quot;")


def parse_folder(text: str, where: Callable[[int], int] = lambda i: i, field: str = "NameValueData") -> Element:
    """Parse one folder. ``where`` maps a character index of ``text`` to a byte offset in the
    message, so errors point into the original bytes."""
    n = len(text)
    i = _skip_space(text, 0)
    if i >= n:
        raise FolderError(field, where(0), "empty NameValueData (a folder is required)")
    stack: list[Element] = []  # the open elements
    texts: list[list[str]] = []  # the text parts of each open element
    root: Element | None = None
    while root is None:
        if i >= n:
            name = stack[-1].name if stack else field
            raise FolderError(f"{field}.{name}", where(n), "folder ends before its closing tag")
        if text[i] != "<":
            if not stack:
                raise FolderError(field, where(i), "text outside the folder element")
            j = text.find("<", i)
            j = n if j < 0 else j
            texts[-1].append(unescape(text[i:j], i, where, f"{field}.{stack[-1].name}"))
            i = j
            continue
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "!":
            i = _markup(text, i, texts, where, field)
        elif nxt == "?":
            raise FolderError(field, where(i), "declarations and processing instructions are not allowed in a folder")
        elif nxt == "/":
            i, root = _end_tag(text, i, stack, texts, where, field)
        else:
            i, root = _start_tag(text, i, stack, texts, where, field)
    rest = text[i:].strip(" \t\r\n\x00")
    if rest:
        raise FolderError(field, where(i), "only one folder is allowed per NameValueData")
    check_folder_rules(root, where(0), field)
    return root


def _markup(text: str, i: int, texts: list[list[str]], where: Callable[[int], int], field: str) -> int:
    """A comment (skipped) or a CDATA section (text) at ``i``; the index after it."""
    if text.startswith("<!--", i):
        j = text.find("-->", i + 4)
        if j < 0:
            raise FolderError(field, where(i), "unterminated comment")
        return j + 3
    if text.startswith("<![CDATA[", i):
        if not texts:
            raise FolderError(field, where(i), "CDATA outside the folder element")
        j = text.find("]]>", i + 9)
        if j < 0:
            raise FolderError(field, where(i), "unterminated CDATA section")
        texts[-1].append(text[i + 9 : j])
        return j + 3
    raise FolderError(field, where(i), "declarations and processing instructions are not allowed in a folder")


def _end_tag(text: str, i: int, stack: list[Element], texts: list[list[str]], where: Callable[[int], int],
             field: str) -> tuple[int, Element | None]:
    """The end tag at ``i`` closes the innermost open element: the index after it, and the
    folder when that element was the folder."""
    m = _name().match(text, i + 2)
    if not m or not stack:
        raise FolderError(field, where(i), "unexpected closing tag")
    node = stack.pop()
    if m.group(0) != node.name:
        raise FolderError(f"{field}.{node.name}", where(i), f"closing tag </{m.group(0)}> does not match <{node.name}>")
    j = m.end()
    n = len(text)
    if j < n and text[j] != ">":
        j = _skip_space(text, j)
    if j >= n or text[j] != ">":
        raise FolderError(field, where(j), "expected '>'")
    _finish(node, texts.pop(), i, where, field)
    return j + 1, (None if stack else node)


def _start_tag(text: str, i: int, stack: list[Element], texts: list[list[str]], where: Callable[[int], int],
               field: str) -> tuple[int, Element | None]:
    """The start tag (or empty-element tag) at ``i``: the index after it, and the folder when
    the tag was an empty folder."""
    m = _name().match(text, i + 1)
    if not m:
        raise FolderError(field, where(i + 1), "expected an element name after '<'")
    node = Element(m.group(0), offset=where(i))
    j = m.end()
    while a := _ATTR.match(text, j):
        value = a.group(2) if a.group(2) is not None else a.group(3)
        node.attrs[a.group(1)] = unescape(value, a.start(), where, f"{field}.{node.name}")
        j = a.end()
    j = _skip_space(text, j)
    empty = text.startswith("/>", j)
    if not empty and (j >= len(text) or text[j] != ">"):
        raise FolderError(f"{field}.{node.name}", where(j), "malformed start tag")
    if stack:
        stack[-1].children.append(node)
    if len(stack) >= MAX_DEPTH:
        raise FolderError(f"{field}.{node.name}", where(i), f"folder nested deeper than {MAX_DEPTH}")
    i = j + (2 if empty else 1)
    if not empty:
        stack.append(node)
        texts.append([])
        return i, None
    _finish(node, [], i, where, field)
    return i, (None if stack else node)


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


def _finish(node: Element, parts: list[str], index: int, where: Callable[[int], int], field: str) -> None:
    """Give a closed element its value. Errors point at the element's start tag (``index``,
    the character index of its end tag, serves when the element has no offset)."""
    content = "".join(parts) if len(parts) != 1 else parts[0]
    at = node.offset if node.offset is not None else where(index)  # the element's start tag
    if node.children:
        if content.strip():
            raise FolderError(f"{field}.{node.name}", at, "an element holds both text and elements")
        return
    if not node.attrs:
        node.value = content
        return
    if node.attrs.get(NIL_ATTR) == "true":
        node.value = None
        return
    dt = node.attrs.pop("dt", None)
    if dt is None:
        node.value = content
        return
    try:
        kind = canonical_dt(dt)
        node.value = parse_value(content, kind)
    except DataTypeError as exc:
        raise DataTypeError(f"{field}.{node.name}", at, exc.reason) from None
    node.dt = None if kind == STRING else kind


def is_usr_name(name: str) -> bool:
    """``name`` can be an element of the ``usr`` folder: an XML name without a colon."""
    return bool(_name().fullmatch(name)) and ":" not in name


def check_folder_rules(folder: Element, offset: int | None = None, field: str = "NameValueData") -> None:
    """The ``usr`` folder rules of seed 003 l.5266-5281. Each error points at the offending
    element (its ``offset`` from parsing, else ``offset``, the folder's)."""
    if folder.name != "usr":
        return
    seen: set[str] = set()
    for child in folder.children:
        where = f"usr.{child.name}"
        at = child.offset if child.offset is not None else offset
        if ":" in child.name:
            raise FolderError(where, at, "names in the usr folder may not contain a colon")
        if child.children:
            inner = child.children[0].offset
            raise FolderError(where, inner if inner is not None else at, "the usr folder holds simple elements only, not groups")
        if child.name in seen:
            raise FolderError(where, at, "an element may occur only once in the usr folder")
        seen.add(child.name)


def serialize_folder(folder: Element) -> str:
    """The NameValueData text of ``folder`` (no padding)."""
    out: list[str] = []
    _write(folder, out)
    return "".join(out)


def _write(node: Element, out: list[str]) -> None:
    attrs = node.attrs
    if not node.children:
        if node.value is None:
            text = ""
        else:
            dt = node.dt or (None if isinstance(node.value, str) else infer_dt(node.value))
            text = escape_text(format_value(node.value, dt, node.name))
            if dt and dt != STRING:
                attrs = {**attrs, "dt": dt}
    # most elements have no attribute (every element of a publication's psc and usr folders)
    head = node.name + "".join(f" {k}='{escape_attr(v)}'" for k, v in attrs.items()) if attrs else node.name
    if node.children:
        out.append(f"<{head}>")
        for c in node.children:
            _write(c, out)
        out.append(f"</{node.name}>")
    else:
        out.append(f"<{head}>{text}</{node.name}>")
