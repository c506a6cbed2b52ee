"""The AMQP listener's TLS port (AMQPS, issue 20: "default port 5672, TLS 5671"), driven by
python-qpid-proton's own client over real loopback sockets with a certificate made here.

Spec: issue 20, "An AMQP 1.0 listener (default port 5672, TLS 5671, SASL PLAIN/ANONYMOUS against
the same users as MQTT and REST)"; docs/amqp.md, the [amqp] keys tls_port, tls_cert, tls_key.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from proton import ConnectionException, Message, SSLDomain
from proton.utils import BlockingConnection

from harness import free_port
from interop.certs import make_certificates

from .broker import amqp_broker, put_and_get

WAIT = 15.0


def client_domain(ca: Path | None) -> SSLDomain:
    """A client SSL domain that verifies the server's certificate and name against ``ca``
    (None: trust nothing, as a client without our CA)."""
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    if ca is not None:
        domain.set_trusted_ca_db(str(ca))
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    return domain


def test_tls_port_carries_a_queue_round_trip_and_plain_port_stays(tmp_path: Path) -> None:
    """With tls_cert and tls_key, the listener also serves AMQPS on tls_port: a client that
    verifies the certificate puts and gets through it; the plain port keeps working; a client
    that does not trust the certificate's issuer is refused by its own verification."""
    certs = make_certificates(tmp_path / "certs")
    tls_port = free_port()
    extra = {"amqp": {"tls_port": tls_port, "tls_cert": str(certs.server_cert), "tls_key": str(certs.server_key)}}
    body = f"over tls {uuid.uuid4().hex}"
    with amqp_broker(extra) as (_broker, port):
        conn = BlockingConnection(f"amqps://localhost:{tls_port}", timeout=WAIT, ssl_domain=client_domain(certs.ca))
        try:
            got = put_and_get(conn, Message(body=body, durable=True))
        finally:
            conn.close()
        assert got.body == body
        plain = BlockingConnection(f"amqp://127.0.0.1:{port}", timeout=WAIT)
        plain.close()
        with pytest.raises(ConnectionException):
            BlockingConnection(f"amqps://localhost:{tls_port}", timeout=WAIT, ssl_domain=client_domain(None))
