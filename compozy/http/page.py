"""The web page: one HTML document for `/`, `/sessions/<id>`, `/inbox`, `/usage` and `/settings`, and its files.

Layer 6 (surface). The files ship inside the package and are read with importlib.resources, so the
page works from a zipapp. These routes are not API operations: they stay out of /api/openapi.json.
The page routes on the client; the server answers the same document for every page path. The
page's client (web/api.js) calls operations by name; their methods and rules come from the operation
table itself, served as operations.js.
"""

import functools
import json
from importlib import resources

from flask import Response, abort

from compozy import api

OPERATIONS_MODULE = "operations.js"
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}  # Flask adds charset=utf-8
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                           "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}


@functools.cache
def _read(name):
    """The bytes of compozy/web/<name>, or None when the package has no such file."""
    path = resources.files("compozy").joinpath("web").joinpath(name)
    return path.read_bytes() if path.is_file() else None


@functools.cache
def operations_module():
    """operations.js: each operation's method and rule, by name, from the operation table."""
    table = {operation.name: {"method": operation.method, "rule": operation.rule} for operation in api.OPERATIONS}
    return f"// Served from compozy/api.py's operation table.\nexport const OPERATIONS = {json.dumps(table, indent=1)};\n".encode()


def _respond(name, mimetype):
    body = operations_module() if name == OPERATIONS_MODULE else _read(name)
    if body is None:
        abort(404)
    return Response(body, mimetype=mimetype, headers=HEADERS)


def page(session_id=None):
    return _respond("index.html", "text/html")


def asset(name):
    mimetype = ASSET_TYPES.get(name[name.rfind("."):]) if "." in name else None
    if mimetype is None or "/" in name or name.startswith("."):
        abort(404)
    return _respond(name, mimetype)


def register(app):
    app.add_url_rule("/", endpoint="page.index", view_func=page, methods=["GET"])
    app.add_url_rule("/sessions/<session_id>", endpoint="page.session", view_func=page, methods=["GET"])
    app.add_url_rule("/settings", endpoint="page.settings", view_func=page, methods=["GET"])
    app.add_url_rule("/inbox", endpoint="page.inbox", view_func=page, methods=["GET"])
    app.add_url_rule("/usage", endpoint="page.usage", view_func=page, methods=["GET"])
    app.add_url_rule("/assets/<name>", endpoint="page.asset", view_func=asset, methods=["GET"])
