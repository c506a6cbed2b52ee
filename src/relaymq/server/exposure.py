"""What start-up says about who can reach the broker (issue 15 finding 2, safe defaults).

Two kinds of line, computed here from the configuration (no I/O) and logged by
relaymq.server.app once everything listens:

* one line when MQTT or HTTP listeners are on the loopback interface only, naming the keys
  that open them to other machines (a new user who cannot connect from elsewhere learns why);
* a warning per listener open to the network that takes anonymous clients, or that speaks
  without TLS (passwords and messages cross the network in clear).

The channel listener's exposure is its own part's business (relaymq.qmgr).
"""

from __future__ import annotations

from typing import Any

from relaymq.net.binding import is_loopback


def _http(config: Any) -> Any | None:
    settings = config.section("http")
    return settings if settings is not None and settings.enabled else None


def loopback_notice(config: Any) -> str | None:
    """The line saying which listeners only this machine reaches and how to open them."""
    keys = [f"listener[{index}].host" for index, listener in enumerate(config.listeners)
            if is_loopback(listener.host)]
    http = _http(config)
    if http is not None and is_loopback(http.host):
        keys.append("http.host")
    if not keys:
        return None
    return (f"listening on the loopback interface only ({', '.join(keys)}): other machines "
            f"cannot connect; set {' / '.join(keys)} = \"0.0.0.0\" (and configure [access]) "
            f"to open them")


def exposure_warnings(config: Any) -> list[str]:
    """One warning per reason a non-loopback listener is exposed."""
    access = config.access
    lines: list[str] = []
    for index, listener in enumerate(config.listeners):
        if is_loopback(listener.host):
            continue
        where = f"listener[{index}] ({listener.name!r}, {listener.host}:{listener.port})"
        if access.allow_anonymous and not listener.require_certificate:
            lines.append(f"{where} accepts anonymous clients from the network "
                         f"(access.allow_anonymous = true)")
        if not listener.tls:
            lines.append(f"{where} is open to the network without TLS: passwords and messages "
                         f"cross it in clear (listener[{index}].tls_cert, tls_key)")
    http = _http(config)
    if http is not None and not is_loopback(http.host):
        where = f"the HTTP server ({http.host}:{http.port})"
        if http.allow_anonymous or not (http.password_file or access.password_file):
            lines.append(f"{where} answers anonymous REST calls from the network "
                         f"(http.allow_anonymous, or no password file)")
        if not http.tls_cert:
            lines.append(f"{where} is open to the network without TLS: passwords and messages "
                         f"cross it in clear (http.tls_cert, http.tls_key)")
    return lines
