"""The HTTP service: starts the HttpServer from [http] and registers it as
``context.services["http"]``, where each later part adds its own routes (the queue manager its
REST interface and channel adapter, pub/sub its admin routes, flows theirs), and adds the admin
API for users, groups and authorities.

It starts first (see relaymq.services.registry.SERVICE_MODULES): the routes are added by services
that start later, on a server that already listens; a request that arrives in between gets 404.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from relaymq.http.auth import BasicAuth
from relaymq.http.server import HttpServer
from relaymq.services.contract import ServiceError
from relaymq.services.reload import password_reloader, reload_all

log = logging.getLogger("relaymq.http")


class HttpService:
    """The running server (``server``) and how to stop it."""

    def __init__(self, server: HttpServer | None) -> None:
        self.server = server

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()


def _password_file(config: Any, settings: Any) -> Any:
    path = settings.password_file or config.access.password_file
    if not path:
        return None
    from relaymq.auth.passwords import PasswordFile, PasswordFileError
    try:
        return PasswordFile.load(path)
    except PasswordFileError as error:
        raise ServiceError(f"http: {error}") from None


def _admin_credential(config: Any) -> Any:
    """The broker's own administrator when ``[access] administrators`` names nobody
    (relaymq.auth.admin_credential), made on the first start."""
    if config.access.administrators:
        return None
    from relaymq.auth.admin_credential import AdminCredentialError, ensure
    try:
        credential = ensure(config.broker.data_dir)
    except (AdminCredentialError, OSError) as error:
        raise ServiceError(f"http: administrator credential: {error}") from None
    if credential.created:
        log.info("created the administrator %r for flow deployment and the admin routes; its "
                 "password is in %s (mode 0600), which relaymq flow/queue/psc on this machine "
                 "read", credential.user, credential.path)
    return credential


async def start(context: Any) -> HttpService:
    settings = context.config.section("http")
    if not settings.enabled:
        return HttpService(None)
    server = HttpServer(max_header_bytes=settings.max_header_bytes, max_body_bytes=settings.max_body_bytes,
                        idle_timeout=float(settings.idle_timeout), header_timeout=float(settings.header_timeout),
                        body_timeout=float(settings.body_timeout), max_connections=settings.max_connections,
                        max_connections_per_address=settings.max_connections_per_address)
    passwords = _password_file(context.config, settings)
    server.auth = BasicAuth(passwords, settings.allow_anonymous, _admin_credential(context.config),
                            getattr(context, "authorities", None))
    if passwords is not None:
        context.reloaders.append(password_reloader(settings.password_file or context.config.access.password_file,
                                                   passwords))
    ssl_context = None
    if settings.tls_cert:
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ssl_context.load_cert_chain(settings.tls_cert, settings.tls_key)
        except (OSError, ssl.SSLError) as error:
            raise ServiceError(f"http: cannot load TLS certificate: {error}") from None
    try:
        await server.start(settings.host, settings.port, ssl_context)
    except OSError as error:
        raise ServiceError(f"http: cannot listen on {settings.host}:{settings.port}: "
                           f"{error.strerror or error}") from None
    context.services["http"] = server
    authorities = getattr(context, "authorities", None)
    if authorities is not None:  # users, groups and authorities at run time (issue 15)
        from relaymq.http.authorities_admin import AuthorityAdmin

        AuthorityAdmin(authorities, password_path=context.config.access.password_file,
                       reload=lambda: reload_all(context.reloaders)).install(server)
    log.info("HTTP listening on %s", ", ".join(server.addresses()))
    return HttpService(server)
