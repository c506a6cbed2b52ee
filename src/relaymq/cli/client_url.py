"""``-L mqtt(s)://[user[:password]@]host[:port]/topic`` of ``relaymq pub``/``sub``, as
mosquitto_pub/mosquitto_sub take it (issue 18, "the first hour"): one argument for the host,
port, credentials, TLS and the topic."""

from __future__ import annotations

import argparse
import urllib.parse

SCHEMES = {"mqtt": 1883, "mqtts": 8883}


class UrlError(ValueError):
    """A -L URL that cannot be used: the message is the one line to print."""


def apply_url(args: argparse.Namespace, many_topics: bool) -> None:
    """Set host, port, user, password, TLS and topic from ``args.url``; the topic is added to
    the -t list (``many_topics``: sub) or must be the only one (pub)."""
    if not args.url:
        return
    url = urllib.parse.urlsplit(args.url)
    if url.scheme not in SCHEMES:
        raise UrlError(f"-L {args.url}: the scheme must be mqtt:// or mqtts://")
    topic = urllib.parse.unquote(url.path[1:]) if url.path.startswith("/") else ""
    if not url.hostname or not topic:
        raise UrlError(f"-L {args.url}: expected mqtt(s)://[user[:password]@]host[:port]/topic")
    try:
        port = url.port
    except ValueError as error:
        raise UrlError(f"-L {args.url}: {error}") from None
    args.host = url.hostname
    args.port = port or SCHEMES[url.scheme]
    if url.username is not None:
        args.username = urllib.parse.unquote(url.username)
        args.password = urllib.parse.unquote(url.password) if url.password is not None else None
    if url.scheme == "mqtts" and not (args.cafile or args.cert):
        args.tls_use_os_certs = True
    if many_topics:
        args.topic = [*(args.topic or []), topic]
    elif args.topic and args.topic != topic:
        raise UrlError(f"-L {args.url}: names topic {topic!r}, and -t another")
    else:
        args.topic = topic
