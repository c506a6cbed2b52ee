"""HTTPReply: answer the HTTP request that started this message's run - or any request
still waiting, named by ``LocalEnvironment.Destination.HTTP.RequestIdentifier`` - with the
message body and the headers of seed 000 l.2024-2032 (flows-http.md item 8). Not part of the
unit of work: the client gets its answer when the node runs, as in the seed's broker."""

from __future__ import annotations

from typing import Any

from relaymq.flows import http_headers
from relaymq.flows.assembly import Assembly
from relaymq.message.message import body_bytes
from relaymq.flows.errors import FlowException
from relaymq.flows.node import Emission, Node, Prop

REQUEST_ID_PATH = "Destination.HTTP.RequestIdentifier"


class HTTPReply(Node):
    KIND = "HTTPReply"
    PROPERTIES = {
        "generate_default_headers": Prop((bool,), True),
        "ignore_transport_failures": Prop((bool,), True),
    }

    def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        request_id = assembly.local_environment.get(REQUEST_ID_PATH)
        message = assembly.message
        body = body_bytes(message)
        headers = http_headers.reply_headers(message, len(body),
                                             generate_defaults=self.props["generate_default_headers"])
        delivered = bool(request_id) and context.ports.http_reply(
            str(request_id), http_headers.reply_status(message), headers, body)
        if not delivered and not self.props["ignore_transport_failures"]:
            raise FlowException(f"no HTTP request {request_id!r} is waiting for a reply (timed out?)", node=self.name)
        return [("out", assembly)]
