"""The queue security properties and their values (everyplace.md item 7: authenticator,
cryptor, compressor; seed 004 l.531-543): checked where a queue is defined
(:func:`relaymq.qmgr.definitions.make_definition`); what they do is
:mod:`relaymq.qmgr.queue_security`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaymq.qmgr.errors import BadProperty
from relaymq.qmgr.names import is_valid_name

#: ``authenticator`` values: "" (none) or "channel" (a channel peer must have authenticated).
AUTHENTICATOR_CHANNEL = "channel"
AUTHENTICATORS = (AUTHENTICATOR_CHANNEL,)
#: ``compressor`` values: "" (none) or "zlib".
COMPRESSOR_ZLIB = "zlib"
COMPRESSORS = (COMPRESSOR_ZLIB,)
#: The queue properties of this module (every queue type takes them).
PROPERTIES = ("authenticator", "cryptor", "compressor")


def security_values(props: Mapping[str, Any]) -> dict[str, str]:
    """The checked values of the security properties among ``props`` (raises BadProperty);
    whether a cryptor's key exists is :meth:`QueueSecurity.check`'s question."""
    values: dict[str, str] = {}
    for name, allowed in (("authenticator", AUTHENTICATORS), ("compressor", COMPRESSORS)):
        if name in props:
            value = props[name]
            if value not in ("", *allowed):
                raise BadProperty(f"{name} must be \"\" or one of {', '.join(repr(a) for a in allowed)},"
                                  f" got {value!r}")
            values[name] = value
    if "cryptor" in props:
        value = props["cryptor"]
        if value != "" and not is_valid_name(value):
            raise BadProperty(f"cryptor must be \"\" or the name of a key of the key file ([qmgr] key_file),"
                              f" got {value!r}")
        values["cryptor"] = value
    return values
