"""HTTPInput: an HTTP request to ``path`` on the broker's HTTP server starts the flow, with
an ``HTTPInputHeader`` folder and the body parsed in ``domain``; the client waits for an
HTTPReply up to ``timeout`` seconds (504 then), and gets 500 when the flow fails without
replying (flows-http.md item 8; seed 000 l.1996-2022)."""

from __future__ import annotations

from typing import Any

from relaymq.flows.node import Prop, positive
from relaymq.flows.nodes.input_base import InputNode


def _path(value: Any) -> str | None:
    return None if value.startswith("/") and " " not in value else 'a path starting with "/"'


class HTTPInput(InputNode):
    KIND = "HTTPInput"
    PROPERTIES = {
        "path": Prop((str,), check=_path),
        "domain": Prop((str,), "BLOB"),
        "timeout": Prop((int, float), 180.0, positive),
    }
