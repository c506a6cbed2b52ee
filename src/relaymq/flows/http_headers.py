"""The HTTP header folders of the seed's HTTP transport and their defaults (seed 000
l.2012-2049; flows-http.md item 8). Pure functions over the message tree; the HTTP nodes and
the broker's HTTP server call them.

* ``HTTPInputHeader``: every request header (canonical capitalisation) plus
  ``X-Original-HTTP-Command`` (``POST /path HTTP/1.1``), as HTTPInput builds it.
* ``HTTPReplyHeader``: what HTTPReply sends. Defaults when a header is absent:
  ``Content-Type: text/xml; charset=utf-8`` and a computed ``Content-Length``. The seed
  (l.2024-2028) lists Content-Length "if present in the input message"; here every reply has
  one, always the length of the body actually sent, whatever the folder said: an HTTP/1.1
  client needs it to find the end of the reply on a kept-alive connection, and a computed
  length is never wrong (Decision, docs/flows.md).
* ``HTTPRequestHeader``: what HTTPRequest sends. Defaults: ``Host`` from the URL,
  ``Content-Length``, ``Content-Type: text/xml; charset=utf-8``, ``SOAPAction: ""``.
* ``HTTPResponseHeader``: the response HTTPRequest received, with
  ``X-Original-HTTP-Status-Line`` and ``X-Original-HTTP-Status-Code``.
"""

from __future__ import annotations

from http import HTTPStatus
from urllib.parse import urlsplit

from relaymq.message.message import Message
from relaymq.message.tree import Element

INPUT = "HTTPInputHeader"
REPLY = "HTTPReplyHeader"
REQUEST = "HTTPRequestHeader"
RESPONSE = "HTTPResponseHeader"
DEFAULT_CONTENT_TYPE = "text/xml; charset=utf-8"
COMMAND = "X-Original-HTTP-Command"
STATUS_LINE = "X-Original-HTTP-Status-Line"
STATUS_CODE = "X-Original-HTTP-Status-Code"

#: Names whose usual spelling is not plain Title-Case.
_SPECIAL = {"soapaction": "SOAPAction", "www-authenticate": "WWW-Authenticate", "te": "TE",
            "content-md5": "Content-MD5", "etag": "ETag"}
#: Headers a server or client computes itself: never copied from a folder.
_COMPUTED = {"content-length", "transfer-encoding", "connection", "host"}
_PSEUDO = {COMMAND.lower(), STATUS_LINE.lower(), STATUS_CODE.lower()}


def canonical_name(name: str) -> str:
    """``content-type`` -> ``Content-Type``, ``soapaction`` -> ``SOAPAction``."""
    low = name.lower()
    return _SPECIAL.get(low) or "-".join(part[:1].upper() + part[1:] for part in low.split("-"))


def input_header_folder(method: str, target: str, version: str, headers: list[tuple[str, str]]) -> Element:
    """The HTTPInputHeader folder of a received request."""
    folder = Element(INPUT)
    folder.add(COMMAND, f"{method} {target} HTTP/{version}")
    for name, value in headers:
        folder.add(canonical_name(name), value)
    return folder


def response_header_folder(status: int, reason: str, version: str, headers: list[tuple[str, str]]) -> Element:
    """The HTTPResponseHeader folder of a response HTTPRequest received. The status line is
    the one received (``HTTP/1.0 200 OK``); a server that sent no reason phrase gets the
    standard one for its status, so the line always reads as the seed shows it."""
    folder = Element(RESPONSE)
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    folder.add(STATUS_LINE, f"HTTP/{version} {status} {reason}".rstrip())
    folder.add(STATUS_CODE, status)
    for name, value in headers:
        folder.add(canonical_name(name), value)
    return folder


def folder_of(message: Message, name: str) -> Element | None:
    for folder in message.transport:
        if folder.name == name:
            return folder
    return None


def _copied(folder: Element | None) -> list[tuple[str, str]]:
    if folder is None:
        return []
    return [(canonical_name(c.name), str(c.value)) for c in folder.children
            if c.value is not None and c.name.lower() not in _COMPUTED | _PSEUDO]


def _with_default(headers: list[tuple[str, str]], name: str, value: str) -> None:
    if all(h.lower() != name.lower() for h, _ in headers):
        headers.append((name, value))


def reply_status(message: Message, default: int = 200) -> int:
    """The status HTTPReply sends: ``X-Original-HTTP-Status-Code`` of HTTPReplyHeader, else
    ``default``."""
    folder = folder_of(message, REPLY)
    value = folder.get(STATUS_CODE) if folder is not None else None
    try:
        return int(value) if value is not None else default  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return default


def reply_headers(message: Message, body_length: int, *, generate_defaults: bool = True) -> list[tuple[str, str]]:
    """Headers for HTTPReply: HTTPReplyHeader, else those of an HTTPResponseHeader (a flow
    that relays a web service's answer), then the defaults of seed 000 l.2024-2032."""
    folder = folder_of(message, REPLY) or folder_of(message, RESPONSE)
    headers = _copied(folder)
    if generate_defaults:
        _with_default(headers, "Content-Type", DEFAULT_CONTENT_TYPE)
    headers.append(("Content-Length", str(body_length)))
    return headers


def request_headers(message: Message, url: str, body_length: int, *, generate_defaults: bool = True) -> list[tuple[str, str]]:
    """Headers for HTTPRequest: HTTPRequestHeader, else those of an HTTPInputHeader (a flow
    that forwards a request), then the defaults of seed 000 l.2034-2043."""
    folder = folder_of(message, REQUEST) or folder_of(message, INPUT)
    headers = _copied(folder)
    headers.insert(0, ("Host", urlsplit(url).netloc))
    if generate_defaults:
        _with_default(headers, "Content-Type", DEFAULT_CONTENT_TYPE)
        _with_default(headers, "SOAPAction", '""')
    headers.append(("Content-Length", str(body_length)))
    return headers
