"""The [http] section: where the HTTP server listens, its limits and who may use it.

Authentication decision (documented in docs/rest.md): HTTP uses the broker's own password
file by default (``[access] password_file``), so one ``relaymq passwd`` manages MQTT and REST
users; ``[http] password_file`` points at another file when HTTP users must differ. When a
password file applies, REST calls need HTTP basic authentication unless
``[http] allow_anonymous = true``; with no password file at all there is nobody to check and
calls are anonymous (as MQTT's default).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.net.binding import MAX_PORT
from relaymq.config import (ConfigError, boolean, build_section, int_range, key_field, non_empty_text, text,
                            unlimited_or_at_least)


@dataclass(frozen=True)
class HttpSettings:
    """[http] keys; see docs/rest.md for each."""

    enabled: bool = key_field(True, boolean)
    host: str = key_field("localhost", non_empty_text)
    port: int = key_field(8080, int_range(0, MAX_PORT))
    max_header_bytes: int = key_field(16384, int_range(256, 1_048_576))
    max_body_bytes: int = key_field(4_194_304, int_range(1, 1_073_741_824))
    idle_timeout: int = key_field(60, int_range(1, 86400))
    header_timeout: int = key_field(20, int_range(1, 3600))
    body_timeout: int = key_field(120, int_range(1, 86400))
    max_connections: int = key_field(1024, unlimited_or_at_least(1))
    max_connections_per_address: int = key_field(256, unlimited_or_at_least(1))
    password_file: str = key_field("", text, path="file")
    allow_anonymous: bool = key_field(False, boolean)
    tls_cert: str = key_field("", text, path="file")
    tls_key: str = key_field("", text, path="file")


def build(raw: object, key: str, base_dir: str | None) -> HttpSettings:
    """Build [http] from its TOML table (None: defaults); errors name the exact key."""
    settings = build_section(HttpSettings, raw, key, base_dir)
    if bool(settings.tls_cert) != bool(settings.tls_key):
        missing = "tls_key" if settings.tls_cert else "tls_cert"
        raise ConfigError(f"{key}.{missing}", "tls_cert and tls_key must be given together")
    return settings
