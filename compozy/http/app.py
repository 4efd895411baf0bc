"""create_app(manager): one Flask app for TCP and the Unix socket, with one error handler.

Layer 6 (surface). Every error body is built by errors.error_body; a request never crashes the daemon.
"""

import logging

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException

from compozy import __version__, api
from compozy.config import SETTINGS_BY_NAME
from compozy.errors import CompozyError, error_body
from compozy.http import guards, page, profiles, routes, tool_server
from compozy.http.slashes import route_encoded_slashes
from compozy.http.sse import EXTENSION, StreamSlots
from compozy.http.openapi import openapi

log = logging.getLogger("compozy.http")

MAX_STREAMS = SETTINGS_BY_NAME["daemon.max_streams"].default
HTTP_CODES = {404: "endpoint_not_found", 405: "method_not_allowed", 413: "body_too_large",
              415: "unsupported_media_type"}


UNIX_SOCKET = "compozy.unix_socket"  # set in the WSGI environ of requests that came over the Unix socket


def create_app(manager, port=None, token=None, remote_names=(), max_streams=MAX_STREAMS):
    """token: a daemon that listens beyond loopback asks it of every TCP request; remote_names: the
    names (beyond loopback ones) it answers to there."""
    app = Flask("compozy")
    app.config.update(MAX_CONTENT_LENGTH=guards.MAX_BODY_BYTES, JSON_SORT_KEYS=False)
    app.json.sort_keys = False
    app.extensions[EXTENSION] = StreamSlots(max_streams)
    document = openapi(__version__)
    for operation in api.OPERATIONS:
        handler = (lambda *_: document) if operation.name == "daemon.openapi" else None
        app.add_url_rule(operation.rule, endpoint=operation.name, methods=[operation.method],
                         view_func=routes.view(manager, operation, handler))
    page.register(app)
    tool_server.register(app, manager)

    @app.before_request
    def guard():
        guards.check_host_and_origin(app.config.get("COMPOZY_PORT", port), remote_names if token else None)
        if token and not request.environ.get(UNIX_SOCKET) and not request.path.startswith(api.TOOL_SERVER_PATH):
            guards.check_token(token)  # over TCP; the owner-only socket and a binding's own secret need none
        guards.check_body_limits()
        if profiles.wanted():
            return profiles.relay(manager.home.root)

    app.register_error_handler(CompozyError, _compozy_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    app.wsgi_app = route_encoded_slashes(app.wsgi_app)
    return app


def _compozy_error(exc):
    retry_after = exc.details.get("retry_after")
    return jsonify(exc.to_body()), exc.status, ({"Retry-After": str(retry_after)} if retry_after else {})


def _http_error(exc):
    code = HTTP_CODES.get(exc.code, "invalid_request")
    response = jsonify(error_body(code, exc.description or exc.name))
    if getattr(exc, "valid_methods", None):  # RFC 9110: a 405 names the methods the resource allows
        response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
    return response, exc.code


def _unexpected_error(exc):
    log.exception("unexpected error while serving a request")
    return jsonify(error_body("internal_error", "unexpected error; see the daemon log")), 500
