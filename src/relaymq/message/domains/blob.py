"""The BLOB domain: the body as opaque bytes, ``Root.BLOB.BLOB`` as IBM's parser shows it.
MRM and IDOC bodies (message-set based) are accepted under their own names and kept as
bytes unless a model is registered (formats-and-jms.md item 7); ``none`` in ``mcd.Msd`` is
BLOB as well."""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.message.tree import Element


@dataclass(frozen=True)
class BlobDomain:
    name: str = "BLOB"

    def parse(self, data: bytes, ccsid: int = 1208, encoding: int = 546) -> Element:
        folder = Element(self.name)
        folder.add("BLOB", bytes(data))
        return folder

    def serialize(self, body: Element, ccsid: int = 1208, encoding: int = 546) -> bytes:
        value = body.get("BLOB", b"")
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)  # type: ignore[call-overload, no-any-return]


BLOB = BlobDomain()
MRM = BlobDomain("MRM")
IDOC = BlobDomain("IDOC")
