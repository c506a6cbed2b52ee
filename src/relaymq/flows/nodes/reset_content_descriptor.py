"""ResetContentDescriptor: reinterpret the same body bytes in another domain (and message
set, type, format), e.g. a BLOB that is really XML (formats-and-jms.md items 6-7). The bits do
not change; the next look inside the body parses them in the new domain."""

from __future__ import annotations

from typing import Any

from relaymq.flows.assembly import Assembly, copy_message
from relaymq.message.message import body_bytes
from relaymq.flows.node import Emission, Node, Prop
from relaymq.message.domains.registry import canonical_domain
from relaymq.message.errors import DomainError
from relaymq.message.message import Message


class ResetContentDescriptor(Node):
    KIND = "ResetContentDescriptor"
    PROPERTIES = {
        "domain": Prop((str,)),
        "set": Prop((str,), ""),
        "type": Prop((str,), ""),
        "format": Prop((str,), ""),
    }

    def configure(self) -> None:
        try:
            self.domain = canonical_domain(self.props["domain"])
        except DomainError as err:
            raise self.error(err.reason, "domain") from None

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        source = copy_message(assembly.message)
        source.mq.body = body_bytes(source)
        last = source.mq.last_rfh2()
        if last is not None and last.folder("mcd") is not None:
            mcd = last.folder("mcd")
            assert mcd is not None
            mcd.set("Msd", self.domain.lower())
            for key, name in (("set", "Set"), ("type", "Type"), ("format", "Fmt")):
                if self.props[key]:
                    mcd.set(name, self.props[key])
        out = Message(source.mq, configured_domain=self.domain, transport=source.transport)
        return [("out", assembly.with_message(out))]
