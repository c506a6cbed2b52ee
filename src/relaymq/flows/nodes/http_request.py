"""HTTPRequest: call a web service with the message body and continue with its response
(flows-http.md item 8; seed 000 l.2034-2049). The URL is the node's ``url`` (the seed's
Default Web Service URL) unless ``LocalEnvironment.Destination.HTTP.RequestURL`` overrides
it. The response body replaces the body (parsed in ``response_domain``) and an
``HTTPResponseHeader`` folder is added. A status of 300 or more goes to ``error``; a
time-out or a connection failure is an exception (``failure``)."""

from __future__ import annotations

import copy
from typing import Any

from relaymq.flows import http_headers
from relaymq.flows.assembly import Assembly
from relaymq.message.message import body_bytes
from relaymq.flows.errors import FlowException, TimeoutException
from relaymq.flows.node import Emission, Node, Prop, choice, positive
from relaymq.message.domains.registry import canonical_domain
from relaymq.message.errors import DomainError
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message

URL_PATH = "Destination.HTTP.RequestURL"
_DROPPED = {http_headers.REQUEST, http_headers.RESPONSE, http_headers.REPLY}


class HTTPRequest(Node):
    KIND = "HTTPRequest"
    OUTPUTS = ("out", "error", "failure")
    NEEDS_LOOP = True
    PROPERTIES = {
        "url": Prop((str,), ""),
        "method": Prop((str,), "POST", choice("POST", "GET", "PUT", "DELETE", "PATCH", "HEAD")),
        "timeout": Prop((int, float), 120.0, positive),
        "response_domain": Prop((str,), "BLOB"),
        "generate_default_headers": Prop((bool,), True),
    }

    def configure(self) -> None:
        try:
            self.domain = canonical_domain(self.props["response_domain"])
        except DomainError as err:
            raise self.error(err.reason, "response_domain") from None

    async def evaluate(self, assembly: Assembly, context: Any) -> list[Emission]:
        url = assembly.local_environment.get(URL_PATH) or self.props["url"]
        if not url:
            raise FlowException("no URL: set url or LocalEnvironment.Destination.HTTP.RequestURL", node=self.name)
        message = assembly.message
        body = body_bytes(message) if self.props["method"] not in ("GET", "HEAD") else b""
        headers = http_headers.request_headers(message, str(url), len(body),
                                               generate_defaults=self.props["generate_default_headers"])
        try:
            response = await context.ports.http_request(self.props["method"], str(url), headers, body,
                                                        self.props["timeout"])
        except TimeoutError:
            raise TimeoutException(f"no response from {url} within {self.props['timeout']:g}s", node=self.name) from None
        except OSError as err:
            raise FlowException(f"cannot reach {url}: {err}", node=self.name) from None
        status = int(response.status)
        out = Message(MQMessage(md=copy.deepcopy(message.mq.md), body=bytes(response.body)), configured_domain=self.domain,
                      transport=[f.copy() for f in message.transport if f.name not in _DROPPED])
        out.transport.append(http_headers.response_header_folder(
            status, getattr(response, "reason", ""), getattr(response, "http_version", "1.1"), list(response.headers)))
        return [("out" if status < 300 else "error", assembly.with_message(out))]
