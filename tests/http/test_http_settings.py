"""The [http] section and the HTTP service (issue 5 defaults: HTTP on 8080; config errors name
the exact key, house rules)."""

from __future__ import annotations

import asyncio

import pytest

from relaymq.config import ConfigError, load_config


def _load(tmp_path, text: str, **overrides):
    path = tmp_path / "relaymq.toml"
    path.write_text(text)
    return load_config(str(path), overrides or None)


def test_defaults_and_override(tmp_path):
    """Issue 5 "Defaults": HTTP listens on 8080 unless --http-port or [http] port says otherwise."""
    assert _load(tmp_path, "").section("http").port == 8080
    assert _load(tmp_path, "", http_port=9090).section("http").port == 9090


@pytest.mark.parametrize(("text", "key"), [
    ("[http]\nport = 70000\n", "http.port"),
    ("[http]\nmax_body_bytes = 0\n", "http.max_body_bytes"),
    ("[http]\nbody_timeout = 0\n", "http.body_timeout"),
    ("[http]\ncolour = 1\n", "http.colour"),
    ('[http]\ntls_cert = "{cert}"\n', "http.tls_key"),
    ('[http]\npassword_file = "missing"\n', "http.password_file"),
])
def test_errors_name_the_key(tmp_path, text, key):
    """House rule: the first problem stops start-up with one line naming the key."""
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, text.format(cert=cert))
    assert error.value.key == key


def test_service_listens_registers_and_can_be_disabled(tmp_path):
    """relaymq.http.service: context.services["http"] is the running HttpServer, where the REST
    routes (added by the queue manager service: relaymq.qmgr.rest.add_routes) find the queue
    manager per request; enabled = false starts nothing."""
    from relaymq.http import service
    from relaymq.services.contract import ServiceContext

    async def scenario():
        # data_dir next to the file: the service keeps its administrator credential there
        config = _load(tmp_path, '[broker]\ndata_dir = "data"\n[http]\nhost = "127.0.0.1"\nport = 0\n'
                                 'body_timeout = 7\n')
        assert _load(tmp_path, "").section("http").body_timeout == 120  # the default
        context = ServiceContext(config, broker=None)
        running = await service.start(context)
        try:
            server = context.services["http"]
            assert server.port > 0 and server.body_timeout == 7.0
            from relaymq.http.client import request
            from relaymq.qmgr.rest import add_routes

            add_routes(server, context.services, context.broker)

            response = await request("GET", f"http://127.0.0.1:{server.port}/ibmmq/rest/v3/admin/qmgr", timeout=5)
            assert response.status == 503  # REST is there; no queue manager in this context
        finally:
            await running.stop()
        disabled = ServiceContext(_load(tmp_path, '[broker]\ndata_dir = "data"\n[http]\nenabled = false\n'),
                                  broker=None)
        stopped = await service.start(disabled)
        assert "http" not in disabled.services
        await stopped.stop()

    asyncio.run(scenario())
