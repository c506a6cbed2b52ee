"""Serving the console's static files: ``GET /console`` (the page) and ``GET /console/{asset}``.

The files hold no data: the page asks the admin API (relaymq.http.admin_mqtt), the REST
interface (queues), the psc, flow and archive routes for everything, with the credentials the
operator typed into its login form, so every datum is behind the same authentication and
admin guard as those routes. The files are package data, read once at start-up: from the
directory beside this module, or through importlib.resources when the package is not a
directory (a zip), which a default start then need not import (issue 16, row 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relaymq.http.server import HttpRequest, HttpResponse, text_response

PATH = "/console"
INDEX = "index.html"
MEDIA_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
               ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
#: Only the console's own files run and load: no inline script, nothing from elsewhere.
SECURITY_HEADERS = [
    ("content-security-policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-cache"),
]


def load_assets() -> dict[str, tuple[str, bytes]]:
    """name -> (media type, bytes) of every file in ``static/``."""
    assets: dict[str, tuple[str, bytes]] = {}
    static: Any = Path(__file__).with_name("static")
    if not static.is_dir():
        from importlib import resources

        static = resources.files(__package__).joinpath("static")
    for entry in static.iterdir():
        suffix = entry.name[entry.name.rfind("."):]
        if entry.is_file() and suffix in MEDIA_TYPES:
            assets[entry.name] = (MEDIA_TYPES[suffix], entry.read_bytes())
    if INDEX not in assets:
        raise RuntimeError(f"the console's {INDEX} is missing from the relaymq package")
    return assets


def install(server: Any) -> None:
    assets = load_assets()

    def answer(name: str) -> HttpResponse:
        found = assets.get(name)
        if found is None:
            return text_response(404, "not found")
        media_type, body = found
        return HttpResponse(200, [("content-type", media_type), *SECURITY_HEADERS], body)

    async def index(request: HttpRequest) -> HttpResponse:
        return answer(INDEX)

    async def asset(request: HttpRequest) -> HttpResponse:
        return answer(request.path_params["asset"])

    server.add_route("GET", PATH, index)
    server.add_route("GET", PATH + "/", index)
    server.add_route("GET", PATH + "/{asset}", asset)
