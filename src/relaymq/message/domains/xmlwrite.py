"""Serialise an element tree built by :mod:`safexml` (or by hand) back to XML text.

Namespaces: an element or attribute with a namespace URI is written with the prefix it was
read with, or with one declared on an ancestor, or with a generated ``ns1``, ``ns2``...
declared on the spot. The walk is iterative (trees can be deep), and text is escaped.
"""

from __future__ import annotations

from relaymq.message.domains.safexml import COMMENT, PI
from relaymq.message.folders import escape_attr, escape_text
from relaymq.message.tree import ATTRIBUTE, CONTENT, NS_DECL, Element


def _text_of(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return str(value)


def _leaf_text(node: Element) -> str | None:
    """The XML of a node that is not an element (text, comment, processing instruction)."""
    if node.kind == CONTENT:
        return escape_text(_text_of(node.value))
    if node.kind == COMMENT:
        return f"<!--{node.value}-->"
    if node.kind == PI:
        return f"<?{node.name} {node.value}?>"
    return None


class _Scope:
    """The namespace prefixes in force at one element (prefix -> URI), and those declared on
    it; ``counter`` numbers the generated prefixes across the document."""

    def __init__(self, outer: dict[str, str], node: Element, namespaces: bool, counter: list[int]) -> None:
        self.prefixes = dict(outer)
        self.declared: list[tuple[str, str]] = []
        self.namespaces, self.counter = namespaces, counter
        for c in node.children:
            if c.kind == NS_DECL:
                self.declared.append((c.name, str(c.value)))
                self.prefixes[c.name] = str(c.value)

    def qualify(self, name: str, ns: str, hint: str | None, is_attr: bool) -> str:
        """``name`` with the prefix of ``ns`` (declared here when no prefix is in force)."""
        if not self.namespaces or not ns:
            return name
        if hint and self.prefixes.get(hint) == ns:
            return f"{hint}:{name}"
        for p, uri in self.prefixes.items():
            if uri == ns and (p or not is_attr):
                return f"{p}:{name}" if p else name
        self.counter[0] += 1
        prefix = hint or f"ns{self.counter[0]}"
        self.prefixes[prefix] = ns
        self.declared.append((prefix, ns))
        return f"{prefix}:{name}"


def _start_tag(node: Element, scope: _Scope) -> tuple[str, str]:
    """The element's qualified name and the rest of its start tag (declarations, attributes)."""
    tag = scope.qualify(node.name, node.ns, node.attrs.get("__prefix__"), False)
    attrs: list[str] = []
    for c in node.children:
        if c.kind == ATTRIBUTE:
            aname = scope.qualify(c.name, c.ns, c.attrs.get("__prefix__"), True)
            attrs.append(f" {aname}=\"{escape_attr(_text_of(c.value))}\"")
    for k, v in node.attrs.items():
        if k != "__prefix__":
            attrs.append(f" {k}=\"{escape_attr(v)}\"")
    ns_attrs = "".join(
        f' xmlns:{p}="{escape_attr(u)}"' if p else f' xmlns="{escape_attr(u)}"' for p, u in scope.declared
    )
    return tag, f"{ns_attrs}{''.join(attrs)}"


def write_xml(nodes: list[Element], namespaces: bool = True) -> str:
    out: list[str] = []
    # stack items: ("open", node, scope) or ("close", tag, scope)
    stack: list[tuple[str, object, dict[str, str]]] = [("open", n, {}) for n in reversed(nodes)]
    counter = [0]
    while stack:
        action, item, outer = stack.pop()
        if action == "close":
            out.append(f"</{item}>")
            continue
        node = item
        assert isinstance(node, Element)
        leaf = _leaf_text(node)
        if leaf is not None:
            out.append(leaf)
            continue
        scope = _Scope(outer, node, namespaces, counter)
        tag, rest = _start_tag(node, scope)
        content = [c for c in node.children if c.kind not in (ATTRIBUTE, NS_DECL)]
        if not content and node.value is None:
            out.append(f"<{tag}{rest}/>")
            continue
        out.append(f"<{tag}{rest}>")
        stack.append(("close", tag, scope.prefixes))
        if not content:
            out.append(escape_text(_text_of(node.value)))
            continue
        for c in reversed(content):
            stack.append(("open", c, scope.prefixes))
    return "".join(out)
