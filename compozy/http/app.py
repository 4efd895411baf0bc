"""create_app(manager): one Flask app for TCP and the Unix socket, with one error handler.

Layer 6 (surface). Every error body is built by errors.error_body; a request never crashes the daemon.
"""

import logging

from flask import Flask, jsonify, request
from werkzeug.exceptions import HTTPException

from compozy import __version__, api
from compozy.config import SETTINGS_BY_NAME
from compozy.errors import CompozyError, error_body
from compozy.fleet import relay as fleet_relay
from compozy.http import guards, page, profiles, routes, tool_server
from compozy.http.auth import LoginRequired, login_view
from compozy.http.slashes import route_encoded_slashes
from compozy.http.sse import EXTENSION, StreamSlots
from compozy.http.openapi import openapi

log = logging.getLogger("compozy.http")

MAX_STREAMS = SETTINGS_BY_NAME["daemon.max_streams"].default
HTTP_CODES = {404: "endpoint_not_found", 405: "method_not_allowed", 413: "body_too_large",
              415: "unsupported_media_type"}


UNIX_SOCKET = "compozy.unix_socket"  # set in the WSGI environ of requests that came over the Unix socket


def create_app(manager, port=None, *, auth, remote_names=None, max_streams=MAX_STREAMS):
    """auth (http/auth.Auth): what every TCP request must carry; remote_names: for a daemon that listens
    beyond loopback, the names (besides loopback ones) it answers to there, else None."""
    app = Flask("compozy")
    app.config.update(MAX_CONTENT_LENGTH=guards.MAX_BODY_BYTES, JSON_SORT_KEYS=False)
    app.json.sort_keys = False
    app.extensions[EXTENSION] = StreamSlots(max_streams)
    document = openapi(__version__)
    handlers = {"daemon.openapi": routes.fixed(document), "daemon.login": login_view(auth, manager)}
    for operation in api.OPERATIONS:
        app.add_url_rule(operation.rule, endpoint=operation.name, methods=[operation.method],
                         view_func=routes.view(manager, operation, handlers.get(operation.name)))
    page.register(app)
    tool_server.register(app, manager)

    @app.before_request
    def guard():
        guards.check_host_and_origin(app.config.get("COMPOZY_PORT", port), remote_names)
        peer = fleet_relay.peer(manager.fleet)  # a fleet node's relayed request carries the fleet secret instead
        if peer is None and not request.environ.get(UNIX_SOCKET):  # the socket is owner-only, checks its peer's uid
            login = auth.guard()
            if login is not None:
                return login
        guards.check_body_limits()
        if profiles.wanted():
            return profiles.relay(manager.home.root)
        if manager.fleet is not None and peer is None:  # a relayed request is answered here, never relayed again
            return fleet_relay.relay_if_remote(manager)

    app.register_error_handler(LoginRequired, lambda exc: exc.response())
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
    response = jsonify(error_body(code, _description(exc)))
    if getattr(exc, "valid_methods", None):  # RFC 9110: a 405 names the methods the resource allows
        response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
    return response, exc.code


def _description(exc):
    """Our words, not Werkzeug's page text ("The requested URL was not found on the server...")."""
    if exc.code not in (404, 405):
        return exc.description or exc.name
    path = request.path
    said = f"no route {request.method} {path}" if exc.code == 404 else \
        f"{request.method} is not allowed on {path}"
    if "//" in path or path.endswith("/"):
        said += ": a part of the path is empty (a session ID from a command that failed?)"
    return said + "; the routes are listed at /api/openapi.json"


def _unexpected_error(exc):
    log.exception("unexpected error while serving a request")
    return jsonify(error_body("internal_error", "unexpected error; see the daemon log")), 500
