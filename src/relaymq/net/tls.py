"""TLS contexts for listeners: certificate and key, optional client certificates."""

from __future__ import annotations

import ssl
from typing import Any


def server_context(listener: Any) -> ssl.SSLContext | None:
    if not listener.tls_cert:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(listener.tls_cert, listener.tls_key)
    if listener.tls_ca:
        ctx.load_verify_locations(listener.tls_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED if listener.require_certificate else ssl.CERT_OPTIONAL
    return ctx
