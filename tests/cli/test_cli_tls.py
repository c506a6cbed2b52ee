"""``relaymq pub``/``sub`` over TLS against a real broker with a TLS listener.

Requirement (CLI brief): --cafile/--cert/--key/--insecure for TLS, as mosquitto_pub/sub:
--cafile verifies the broker's certificate (and its host name), --insecure skips only the
host-name check. mqtt.md 3: the protocol has no security of its own; the product adds TLS.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cli_helpers import Background, RunCli, TlsBroker

pytestmark = pytest.mark.interop


def test_pub_sub_over_tls(tls_broker: TlsBroker, run_cli: RunCli, subscriber: Callable[..., Background]) -> None:
    """Brief: --cafile enables TLS and verifies the broker; the certificate names localhost, so
    connecting to 127.0.0.1 fails verification unless --insecure is given."""
    verified = ["-h", "localhost", "-p", str(tls_broker.tls_port), "--cafile", str(tls_broker.ca_file)]
    by_address = ["-h", "127.0.0.1", "-p", str(tls_broker.tls_port), "--cafile", str(tls_broker.ca_file)]
    sub = subscriber(*verified, "-q", "1", "-t", "secure/#", "-v", "-C", "2")
    assert run_cli("pub", *verified, "-q", "1", "-t", "secure/a", "-m", "verified").returncode == 0

    mismatch = run_cli("pub", *by_address, "-t", "secure/b", "-m", "never")
    assert mismatch.returncode == 1
    assert mismatch.stderr.startswith("relaymq pub: cannot connect to 127.0.0.1:") and mismatch.stderr.count("\n") == 1

    insecure = run_cli("pub", *by_address, "--insecure", "-q", "1", "-t", "secure/c", "-m", "insecure")
    assert insecure.returncode == 0, insecure.stderr
    finished = sub.finish()
    assert (finished.returncode, finished.lines) == (0, ["secure/a verified", "secure/c insecure"])


def test_plain_client_cannot_talk_to_the_tls_port(tls_broker: TlsBroker, run_cli: RunCli) -> None:
    """Brief: TLS is enabled by the TLS flags only; a plain client on a TLS port fails cleanly
    (one line, exit 1), not with a traceback or a hang."""
    result = run_cli("pub", "-h", "127.0.0.1", "-p", str(tls_broker.tls_port), "-t", "a", "-m", "x")
    assert result.returncode == 1
    assert result.stderr.startswith("relaymq pub: ") and result.stderr.count("\n") == 1
