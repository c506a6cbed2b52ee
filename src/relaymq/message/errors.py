"""Typed errors of the message codecs.

Every decoder in this package turns bad input into one of these, naming the field and the
byte offset where decoding stopped (issue 3, "Bad input"); nothing else escapes a decoder, so
a channel or a flow can put a bad message to a dead-letter queue with a precise reason instead
of crashing on an ``IndexError``.
"""

from __future__ import annotations


class FormatError(ValueError):
    """Input that is not a valid message part.

    ``field`` names the structure field or element being decoded (``MQMD.StrucId``,
    ``MQRFH2.NameValueLength``, ``usr.count``); ``offset`` is the byte offset in the input
    given to the decoder (``None`` when the input is not a byte string, e.g. a JSON document
    given as text); ``reason`` says what is wrong.
    """

    def __init__(self, field: str, offset: int | None, reason: str):
        self.field = field
        self.offset = offset
        self.reason = reason
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{field}{where}: {reason}")


class TruncatedError(FormatError):
    """The input ends before the field does."""


class StrucIdError(FormatError):
    """A structure identifier is not the one the Format field promised."""


class LengthError(FormatError):
    """A length field is impossible: too small, not a multiple of 4, or past the end."""


class CCSIDError(FormatError):
    """A coded character set identifier this product does not convert, or bytes that are not
    valid in the named character set."""


class DataTypeError(FormatError):
    """A ``dt`` type name that is not defined, or a value that is not valid for its type."""


class FolderError(FormatError):
    """A malformed MQRFH2 folder (NameValueData) or a folder rule broken (``usr`` groups,
    colons in names, a repeated element)."""


class DomainError(FormatError):
    """A message body that its domain's parser cannot read."""


class XMLSecurityError(DomainError):
    """XML that declares entities or refers to external ones; refused outright so that no
    expansion (billion laughs) or external fetch can happen."""


class MQeFieldsError(FormatError):
    """An MQeFields name that breaks the naming rules, a type mismatch, or a malformed dump."""


class MappingError(ValueError):
    """A JMS value that cannot be represented in the target format (e.g. a JMSPriority
    outside 0-9 for an MQMD)."""
