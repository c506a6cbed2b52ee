"""The MIME domain (formats-and-jms.md item 7; seed 003 l.5203): a MIME entity, possibly
multipart, as a tree.

``MIME`` folder -> one child per header (name as written, unfolded value), then either
``Parts -> Part...`` (each Part again headers then Parts or Data) for a ``multipart/*``
Content-Type, or ``Data -> BLOB`` holding the body bytes. Header bytes are read as
ISO-8859-1, so any byte sequence maps to text and back. A multipart without a boundary, or
whose closing delimiter is missing, is a :class:`DomainError` with the byte offset; nesting
is bounded.
"""

from __future__ import annotations

import re

from relaymq.message.errors import DomainError
from relaymq.message.tree import Element

MAX_DEPTH = 32
_BOUNDARY = re.compile(r"""boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))""", re.IGNORECASE)
_SPECIAL = ("Parts", "Data")


def _split_head(data: bytes, base: int) -> tuple[list[tuple[str, str]], bytes, int]:
    for sep in (b"\r\n\r\n", b"\n\n"):
        idx = data.find(sep)
        if idx >= 0:
            head, body, body_at = data[:idx], data[idx + len(sep) :], idx + len(sep)
            break
    else:
        if data.startswith((b"\r\n", b"\n")):
            head, body, body_at = b"", data.lstrip(b"\r\n"), len(data) - len(data.lstrip(b"\r\n"))
        else:
            head, body, body_at = data, b"", len(data)
    headers: list[tuple[str, str]] = []
    pos = 0
    for line in head.decode("latin-1").replace("\r\n", "\n").split("\n"):
        if not line:
            continue
        if line[0] in " \t":
            if not headers:
                raise DomainError("MIME.header", base + pos, "continuation line before any header")
            name, value = headers[-1]
            headers[-1] = (name, value + " " + line.strip())
        else:
            name, colon, value = line.partition(":")
            if not colon or not name.strip():
                raise DomainError("MIME.header", base + pos, f"header line without a name: {line[:40]!r}")
            headers.append((name.strip(), value.strip()))
        pos += len(line) + 1
    return headers, body, base + body_at


def _parse_entity(data: bytes, base: int, depth: int, name: str) -> Element:
    if depth > MAX_DEPTH:
        raise DomainError("MIME", base, f"multipart nested deeper than {MAX_DEPTH}")
    headers, body, body_at = _split_head(data, base)
    node = Element(name, children=[Element(k, v) for k, v in headers])
    ctype = next((v for k, v in headers if k.lower() == "content-type"), "")
    if ctype.lower().startswith("multipart/"):
        m = _BOUNDARY.search(ctype)
        if not m:
            raise DomainError("MIME.Content-Type", base, "multipart without a boundary parameter")
        boundary = (m.group(1) or m.group(2)).encode("latin-1")
        node.children.append(_parse_parts(body, body_at, boundary, depth))
    else:
        data_el = node.add("Data")
        data_el.add("BLOB", body)
    return node


def _parse_parts(body: bytes, base: int, boundary: bytes, depth: int) -> Element:
    delim = b"--" + boundary
    parts = Element("Parts")
    pattern = re.compile(rb"(?:^|\r?\n)" + re.escape(delim) + rb"(--)?[ \t]*(?:\r?\n|$)")
    matches = list(pattern.finditer(body))
    if not matches:
        raise DomainError("MIME.Parts", base, "no boundary delimiter found")
    if not any(m.group(1) for m in matches):
        raise DomainError("MIME.Parts", base + len(body), "closing boundary delimiter missing")
    for current, following in zip(matches, matches[1:], strict=False):
        if current.group(1):
            break
        chunk = body[current.end() : following.start()]
        parts.children.append(_parse_entity(chunk, base + current.end(), depth + 1, "Part"))
    return parts


def _write_entity(node: Element, out: list[bytes]) -> None:
    headers = [c for c in node.children if c.name not in _SPECIAL]
    for h in headers:
        out.append(f"{h.name}: {h.value if h.value is not None else ''}\r\n".encode("latin-1"))
    out.append(b"\r\n")
    parts = node.child("Parts")
    if parts is not None:
        ctype = next((str(h.value) for h in headers if h.name.lower() == "content-type"), "")
        m = _BOUNDARY.search(ctype)
        if not m:
            raise DomainError("MIME.Content-Type", None, "multipart without a boundary parameter")
        boundary = (m.group(1) or m.group(2)).encode("latin-1")
        for part in parts.children:
            out.append(b"--" + boundary + b"\r\n")
            _write_entity(part, out)
            out.append(b"\r\n")
        out.append(b"--" + boundary + b"--\r\n")
        return
    data = node.child("Data")
    if data is not None:
        blob = data.get("BLOB", b"")
        out.append(blob.encode("latin-1") if isinstance(blob, str) else bytes(blob))  # type: ignore[call-overload]


class MIMEDomain:
    name = "MIME"

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        return _parse_entity(bytes(data), 0, 0, self.name)

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        out: list[bytes] = []
        _write_entity(body, out)
        return b"".join(out)


MIME = MIMEDomain()
