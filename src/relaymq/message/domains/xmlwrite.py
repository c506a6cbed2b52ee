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


def write_xml(nodes: list[Element], namespaces: bool = True) -> str:
    out: list[str] = []
    # stack items: ("open", node, scope) or ("close", tag) or ("text", str)
    stack: list[tuple[str, object, dict[str, str]]] = [("open", n, {}) for n in reversed(nodes)]
    counter = [0]
    while stack:
        action, item, scope = stack.pop()
        if action == "close":
            out.append(f"</{item}>")
            continue
        node = item
        assert isinstance(node, Element)
        if node.kind == CONTENT:
            out.append(escape_text(_text_of(node.value)))
            continue
        if node.kind == COMMENT:
            out.append(f"<!--{node.value}-->")
            continue
        if node.kind == PI:
            out.append(f"<?{node.name} {node.value}?>")
            continue
        scope = dict(scope)  # prefix -> uri in force
        decls: list[tuple[str, str]] = []
        for c in node.children:
            if c.kind == NS_DECL:
                decls.append((c.name, str(c.value)))
                scope[c.name] = str(c.value)
        declared_here = list(decls)

        def qualify(name: str, ns: str, hint: str | None, is_attr: bool) -> str:
            if not namespaces or not ns:
                return name
            if hint and scope.get(hint) == ns:  # noqa: B023 - called within this iteration
                return f"{hint}:{name}"
            for p, uri in scope.items():  # noqa: B023 - called within this iteration
                if uri == ns and (p or not is_attr):
                    return f"{p}:{name}" if p else name
            counter[0] += 1
            prefix = hint or f"ns{counter[0]}"
            scope[prefix] = ns  # noqa: B023 - called within this iteration
            declared_here.append((prefix, ns))  # noqa: B023 - called within this iteration
            return f"{prefix}:{name}"

        tag = qualify(node.name, node.ns, node.attrs.get("__prefix__"), False)
        attrs: list[str] = []
        for c in node.children:
            if c.kind == ATTRIBUTE:
                aname = qualify(c.name, c.ns, c.attrs.get("__prefix__"), True)
                attrs.append(f" {aname}=\"{escape_attr(_text_of(c.value))}\"")
        for k, v in node.attrs.items():
            if k != "__prefix__":
                attrs.append(f" {k}=\"{escape_attr(v)}\"")
        ns_attrs = "".join(
            f' xmlns:{p}="{escape_attr(u)}"' if p else f' xmlns="{escape_attr(u)}"' for p, u in declared_here
        )
        content = [c for c in node.children if c.kind not in (ATTRIBUTE, NS_DECL)]
        if not content and node.value is None:
            out.append(f"<{tag}{ns_attrs}{''.join(attrs)}/>")
            continue
        out.append(f"<{tag}{ns_attrs}{''.join(attrs)}>")
        stack.append(("close", tag, scope))
        if not content:
            out.append(escape_text(_text_of(node.value)))
            continue
        for c in reversed(content):
            stack.append(("open", c, scope))
    return "".join(out)
