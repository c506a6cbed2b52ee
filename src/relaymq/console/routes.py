"""Serving the console's static files: ``GET /console`` (the page) and ``GET /console/{asset}``.

The files hold no data: the page asks the admin API (relaymq.http.admin_mqtt), the REST
interface (queues), the psc, flow and archive routes for everything, with the credentials the
operator typed into its login form, so every datum is behind the same authentication and
admin guard as those routes. The files are package data, read once at start-up: from the
directory beside this module, or through importlib.resources when the package is not a
directory (a zip), which a default start then need not import (issue 16, row 9)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
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


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _static_files() -> list[tuple[str, Callable[[], bytes]]]:
    """(name, how to read it) of each file in ``static/``: the directory with os (pathlib is
    not imported by a default start for it: issue 16, rows 6 and 9), a zip through
    importlib.resources."""
    directory = os.path.join(os.path.dirname(__file__), "static")
    if os.path.isdir(directory):
        return [(entry.name, functools.partial(_read, entry.path))
                for entry in os.scandir(directory) if entry.is_file()]
    from importlib import resources

    return [(entry.name, entry.read_bytes)
            for entry in resources.files(__package__).joinpath("static").iterdir() if entry.is_file()]


def load_assets() -> dict[str, tuple[str, bytes]]:
    """name -> (media type, bytes) of every file in ``static/``."""
    assets: dict[str, tuple[str, bytes]] = {}
    for name, read in _static_files():
        suffix = name[name.rfind("."):]
        if suffix in MEDIA_TYPES:
            assets[name] = (MEDIA_TYPES[suffix], read())
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
