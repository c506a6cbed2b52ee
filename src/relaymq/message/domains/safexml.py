"""A hardened XML reader for the XML, XMLNS and XMLNSC domains.

It uses the standard library's expat with three guards, so a message can neither expand
entities (the "billion laughs" bomb) nor make the broker fetch anything:

* any entity declaration, internal or external, is refused with :class:`XMLSecurityError`;
* parameter entities are never parsed and external entity references are refused;
* nesting deeper than :data:`MAX_DEPTH` is refused, so no later recursive walk can overflow.

Undefined entity references are expat errors and come out as :class:`DomainError` with the
byte offset, like any other malformed XML.

The result is a list of :class:`~relaymq.message.tree.Element` roots built without recursion.
Options decide the shape of the three domains: whether namespaces are processed, whether
whitespace-only text between elements is kept (XMLNS/XML keep it, XMLNSC drops it), and
whether comments and processing instructions are kept.
"""

from __future__ import annotations

from xml.parsers import expat

from relaymq.message.errors import DomainError, XMLSecurityError
from relaymq.message.tree import ATTRIBUTE, CONTENT, ELEMENT, NS_DECL, Element

MAX_DEPTH = 256
COMMENT = "comment"
PI = "processing-instruction"


def parse_xml(
    data: bytes,
    domain: str,
    *,
    namespaces: bool,
    keep_whitespace: bool,
    keep_comments: bool = False,
) -> list[Element]:
    """Parse UTF-8 ``data`` into the top-level nodes of the document."""
    sep = "\x1f"
    parser = expat.ParserCreate("UTF-8", sep if namespaces else None)
    if namespaces:
        parser.namespace_prefixes = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.buffer_text = True
    parser.ordered_attributes = True

    top: list[Element] = []
    stack: list[Element] = []
    pending_ns: list[tuple[str, str]] = []

    def where() -> int:
        return parser.CurrentByteIndex

    def refuse_entity(*_args: object) -> None:
        raise XMLSecurityError(f"{domain}.DOCTYPE", where(), "entity declarations are not accepted")

    def refuse_external(*_args: object) -> int:
        raise XMLSecurityError(f"{domain}.DOCTYPE", where(), "external entities are not accepted")

    def refuse_skipped(name: str, _is_param: int) -> None:
        raise DomainError(f"{domain}.{name}", where(), "reference to an undefined entity")

    def split(name: str) -> tuple[str, str, str]:
        """'uri<sep>local<sep>prefix' -> (ns, local, prefix)."""
        if not namespaces or sep not in name:
            return "", name, ""
        parts = name.split(sep)
        return parts[0], parts[1], parts[2] if len(parts) > 2 else ""

    def start(name: str, attrs: list[str]) -> None:
        if len(stack) >= MAX_DEPTH:
            raise DomainError(f"{domain}.{name}", where(), f"elements nested deeper than {MAX_DEPTH}")
        ns, local, prefix = split(name)
        node = Element(local, ns=ns)
        if prefix:
            node.attrs["__prefix__"] = prefix
        for p, uri in pending_ns:
            node.children.append(Element(p, uri, kind=NS_DECL))
        pending_ns.clear()
        for i in range(0, len(attrs), 2):
            a_ns, a_local, a_prefix = split(attrs[i])
            attr = Element(a_local, attrs[i + 1], ns=a_ns, kind=ATTRIBUTE)
            if a_prefix:
                attr.attrs["__prefix__"] = a_prefix
            node.children.append(attr)
        (stack[-1].children if stack else top).append(node)
        stack.append(node)

    def end(_name: str) -> None:
        node = stack.pop()
        texts = [c for c in node.children if c.kind == CONTENT]
        others = [c for c in node.children if c.kind in (ELEMENT, COMMENT, PI)]
        if not others:
            # a leaf: its text is its value (attributes and namespace declarations stay children)
            node.value = "".join(str(t.value) for t in texts) if texts else ""
            node.children = [c for c in node.children if c.kind != CONTENT]
        elif not keep_whitespace:
            node.children = [c for c in node.children if c.kind != CONTENT or str(c.value).strip()]

    def text(data_: str) -> None:
        if stack:
            stack[-1].children.append(Element("", data_, kind=CONTENT))

    def ns_start(prefix: str | None, uri: str | None) -> None:
        pending_ns.append((prefix or "", uri or ""))

    def comment(data_: str) -> None:
        if keep_comments:
            (stack[-1].children if stack else top).append(Element("", data_, kind=COMMENT))

    def pi(target: str, data_: str) -> None:
        if keep_comments:
            (stack[-1].children if stack else top).append(Element(target, data_, kind=PI))

    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_external
    parser.SkippedEntityHandler = refuse_skipped
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.CommentHandler = comment
    parser.ProcessingInstructionHandler = pi
    if namespaces:
        parser.StartNamespaceDeclHandler = ns_start
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        # expat reports -1 when the input ends before anything (an empty body): the error is
        # at the end of the input
        index = parser.ErrorByteIndex
        raise DomainError(domain, index if 0 <= index <= len(data) else len(data), expat.ErrorString(exc.code)) from None
    except RecursionError:  # pragma: no cover - depth is bounded above
        raise DomainError(domain, where(), "document too deeply nested") from None
    if not any(n.kind == ELEMENT for n in top):
        raise DomainError(domain, len(data), "no root element")
    return top
