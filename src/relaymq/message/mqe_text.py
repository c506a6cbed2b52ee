"""The text dump of an MQeFields (seed 004 l.476-492): a template in which ``#0`` is the
field's type, ``#1`` its name and ``#2`` the text of its value, everything else copied.

Value text: strings as they are, with ``\\``, CR, LF and TAB escaped (so one field stays on
one line); integers and floats in decimal (``repr`` of the float); booleans ``true``/
``false``; byte arrays in hex; other arrays comma-separated in brackets (``[1,2,3]``), a null
array ``null``; nested fields in braces, dumped with the same template (``{...}``).

``restore_from_string`` reads back a dump made with a template of the form
``<prefix>#0<sep>#1<sep>#2<suffix>`` - such as the seed's ``(#0)#1=#2\\r\\n`` - except nested
fields, which, as in MQe, cannot be restored from text. The template must make the text
unambiguous (checked): a non-word character between ``#0`` and ``#1``, a character no field
name holds between ``#1`` and ``#2``, and a CR, LF or TAB in the terminator.
"""

from __future__ import annotations

import re

from relaymq.message.errors import MQeFieldsError
from relaymq.message.mqe_fields import (
    ARRAY_ELEMENT,
    ASCII,
    BOOLEAN,
    BYTE_ARRAY,
    DOUBLE,
    FIELDS,
    FLOAT,
    FORBIDDEN_NAME_CHARACTERS,
    INTEGER_BITS,
    UNICODE,
    MQeFields,
)

DEFAULT_TEMPLATE = "(#0)#1=#2\r\n"
_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", "\t": "\\t"}
_UNESCAPE = re.compile(r"\\(.)")


def _escape(text: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in text)


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: {"r": "\r", "n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def value_text(kind: str, value: object, template: str) -> str:
    if kind in (ASCII, UNICODE):
        return _escape(str(value))
    if kind == BOOLEAN:
        return "true" if value else "false"
    if kind == BYTE_ARRAY:
        return "null" if value is None else bytes(value).hex()  # type: ignore[call-overload]
    if kind in ARRAY_ELEMENT:
        return "null" if value is None else "[" + ",".join(repr(v) for v in value) + "]"  # type: ignore[attr-defined]
    if kind == FIELDS:
        return "{" + dump_to_string(value, template) + "}"  # type: ignore[arg-type]
    return repr(value)


def dump_to_string(fields: MQeFields, template: str = DEFAULT_TEMPLATE, title: str = "") -> str:
    """Each field through ``template``; ``title`` (if any) comes first."""
    out = [title] if title else []
    for name, kind, value in fields.items():
        text = value_text(kind, value, template)
        out.append(
            template.replace("#0", "\x00T").replace("#1", "\x00N").replace("#2", "\x00V")
            .replace("\x00T", kind).replace("\x00N", name).replace("\x00V", text)
        )
    return "".join(out)


def _parse_value(kind: str, text: str, where: str) -> object:
    try:
        if kind in (ASCII, UNICODE):
            return _unescape(text)
        if kind == BOOLEAN:
            if text not in ("true", "false"):
                raise ValueError(text)
            return text == "true"
        if kind in INTEGER_BITS:
            return int(text)
        if kind in (FLOAT, DOUBLE):
            return float(text)
        if kind == BYTE_ARRAY:
            return None if text == "null" else bytes.fromhex(text)
        if kind in ARRAY_ELEMENT:
            if text == "null":
                return None
            if not (text.startswith("[") and text.endswith("]")):
                raise ValueError(text)
            inner = text[1:-1]
            conv = float if ARRAY_ELEMENT[kind] in (FLOAT, DOUBLE) else int
            return [conv(x) for x in inner.split(",")] if inner else []
    except ValueError:
        raise MQeFieldsError(where, None, f"{text!r} is not a valid {kind} value") from None
    raise MQeFieldsError(where, None, f"{kind} fields cannot be restored from a string")


def restore_from_string(text: str, template: str = DEFAULT_TEMPLATE) -> MQeFields:
    """Inverse of :func:`dump_to_string` for flat fields (see module docstring)."""
    positions = [template.find(t) for t in ("#0", "#1", "#2")]
    if -1 in positions or positions != sorted(positions):
        raise MQeFieldsError("template", None, "needs #0, #1 and #2 in that order")
    t0, t1, t2 = positions
    prefix, sep1, sep2, suffix = template[:t0], template[t0 + 2 : t1], template[t1 + 2 : t2], template[t2 + 2 :]
    if not suffix:
        raise MQeFieldsError("template", None, "needs a terminator after #2 to restore")
    # The text must split one way only: a type name is a word, a field name cannot hold the
    # characters the naming rules forbid (or blanks), and no value text holds CR, LF or TAB.
    if not any(not (c.isalnum() or c == "_") for c in sep1):
        raise MQeFieldsError("template", None, "the text between #0 and #1 needs a character that is not a letter, digit or '_'")
    if not any(c in FORBIDDEN_NAME_CHARACTERS or c.isspace() for c in sep2):
        raise MQeFieldsError("template", None, "the text between #1 and #2 needs one of { } [ ] # ( ) ; , ' \" = or a blank, which no name holds")
    if not any(c in "\r\n\t" for c in suffix):
        raise MQeFieldsError("template", None, "the terminator after #2 needs a CR, LF or TAB, which no value text holds")
    pattern = re.compile(
        re.escape(prefix) + r"(\w+)" + re.escape(sep1) + r"([^{}\[\]#();,'\"=\s]+?)" + re.escape(sep2)
        + r"(.*?)" + re.escape(suffix),
        re.DOTALL,
    )
    fields = MQeFields()
    pos = 0
    while pos < len(text):
        m = pattern.match(text, pos)
        if not m:
            raise MQeFieldsError("text", pos, "does not match the template")
        kind, name, value = m.group(1), m.group(2), m.group(3)
        if kind == FIELDS:
            raise MQeFieldsError(name, pos, "embedded fields cannot be restored from a string")
        fields.put(name, kind, _parse_value(kind, value, name))
        pos = m.end()
    return fields
