"""Browser safety and body parsing: Host and Origin checks, size limit, JSON bodies.

Layer 6 (surface). A web page must not be able to drive the daemon: requests whose Host is not
the daemon's loopback name (DNS rebinding) or whose Origin is another site are refused with 403.
"""

import ipaddress
import json

from flask import request

from compozy.errors import CompozyError, invalid

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_JSON_DEPTH = 64
CROSS_SITE = ("cross-site", "same-site")  # Sec-Fetch-Site values a browser sends for other sites' pages
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def split_host(host):
    if host.startswith("["):
        name, _, rest = host.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else ""
    name, _, port = host.partition(":")
    return name, port


def check_host_and_origin(port, remote_names=None):
    """port: the daemon's TCP port (None when it serves the socket only). remote_names: for a daemon
    that listens beyond loopback (with a token), the other names it answers to; an IP literal is
    always one of them (a rebinding page needs a name of its own). Authentication never replaces these checks."""
    host = request.headers.get("Host", "")
    name, host_port = split_host(host.lower())
    known = name in LOOPBACK_NAMES or (remote_names is not None and (name in remote_names or _ip_literal(name)))
    if not known or (host_port and host_port != str(port)):
        raise CompozyError("host_not_allowed", f"Host {host[:100]!r} is not this daemon", host=host[:100])
    fetch_site = request.headers.get("Sec-Fetch-Site", "").lower()
    if fetch_site in CROSS_SITE:
        raise CompozyError("origin_not_allowed", f"a {fetch_site} page may not call this daemon",
                           sec_fetch_site=fetch_site)
    origin = request.headers.get("Origin")
    if origin is not None:
        names = LOOPBACK_NAMES + ((name,) if remote_names is not None else ())
        allowed = {f"http://{n}:{port}" for n in names} if port else set()
        if origin.lower() not in allowed:
            raise CompozyError("origin_not_allowed", f"Origin {origin[:100]!r} may not call this daemon",
                               origin=origin[:100])


def _ip_literal(name):
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def check_body_limits():
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise CompozyError("body_too_large", f"request body is {length} bytes; the limit is {MAX_BODY_BYTES}")
    if request.method in ("POST", "PUT", "PATCH") and (length or request.headers.get("Transfer-Encoding")):
        mimetype = request.mimetype
        if mimetype != "application/json":
            raise CompozyError("unsupported_media_type",
                               f"Content-Type {mimetype or '(none)'} is not application/json")


def json_body():
    """The parsed JSON object of the request, {} when it has no body."""
    data = request.get_data(cache=True)
    if len(data) > MAX_BODY_BYTES:
        raise CompozyError("body_too_large", f"request body is over {MAX_BODY_BYTES} bytes")
    if not data.strip():
        return {}
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise invalid(f"request body nests deeper than {MAX_JSON_DEPTH} levels") from None
    if too_deep(body):
        raise invalid(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(body, dict):
        raise invalid("request body must be a JSON object")
    return body


def too_deep(value, limit=MAX_JSON_DEPTH):
    """True when JSON containers nest past limit (walked without recursion)."""
    level = [value]
    for _ in range(limit + 1):
        level = [child for item in level if isinstance(item, (dict, list))
                 for child in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return False
    return True


def query_args():
    """Query parameters as a plain dict; a repeated parameter is invalid."""
    args = {}
    for name, values in request.args.lists():
        if len(values) > 1:
            raise invalid(f"query parameter {name} is repeated", field=name)
        args[name] = values[0]
    return args
