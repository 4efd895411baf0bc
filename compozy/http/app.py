"""create_app(manager): one Flask app for TCP and the Unix socket, with one error handler.

Layer 6 (surface). Every error body is built by errors.error_body; a request never crashes the daemon.
"""

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from compozy import __version__
from compozy.errors import CompozyError, error_body
from compozy.serialize import JSONText
from compozy.http import guards, page, prompts, sessions, streams
from compozy.http.routing import Route, openapi

log = logging.getLogger("compozy.http")

HTTP_CODES = {404: "endpoint_not_found", 405: "method_not_allowed", 413: "body_too_large",
              415: "unsupported_media_type"}


def health(manager):
    return {"status": "ok", "version": __version__}


def daemon_status(manager):
    return manager.daemon_status()


def all_routes():
    return (
        Route("GET", "/api/health", "daemon.health", health, "Liveness and version", statuses=()),
        Route("GET", "/api/status", "daemon.status", daemon_status,
              "Session counts by state and the sessions that need attention (failures)", statuses=()),
        Route("GET", "/api/openapi.json", "daemon.openapi", None, "This document", statuses=()),
        *sessions.ROUTES, *prompts.ROUTES, *streams.ROUTES,
    )


def create_app(manager, port=None, token=None):
    app = Flask("compozy")
    app.config.update(MAX_CONTENT_LENGTH=guards.MAX_BODY_BYTES, JSON_SORT_KEYS=False)
    app.json.sort_keys = False
    routes = all_routes()
    document = openapi(routes, __version__)
    for route in routes:
        view = (lambda manager: document) if route.view is None else route.view
        app.add_url_rule(route.rule, endpoint=route.op, methods=[route.method],
                         view_func=_adapter(manager, view, route))
    page.register(app)

    @app.before_request
    def guard():
        if token:
            guards.check_token(token)  # a remote daemon: the token replaces the loopback Host rule
        else:
            guards.check_host_and_origin(app.config.get("COMPOZY_PORT", port))
        guards.check_body_limits()

    app.register_error_handler(CompozyError, _compozy_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    return app


def _adapter(manager, view, route):
    def handle(**params):
        result = view(manager, **params)
        if isinstance(result, Response):
            return result
        body, status = result if isinstance(result, tuple) else (result, route.success)
        if isinstance(body, JSONText):
            return Response(body, status=status, mimetype="application/json")
        if status == 204:
            warning = body.get("warning") if isinstance(body, dict) else None
            headers = {"Deprecation": "true", "Warning": f'299 compozy "{warning}"'} if warning else {}
            return Response(status=204, headers=headers)
        return jsonify(body), status
    handle.__name__ = route.op
    return handle


def _compozy_error(exc):
    return jsonify(exc.to_body()), exc.status


def _http_error(exc):
    code = HTTP_CODES.get(exc.code, "invalid_request")
    return jsonify(error_body(code, exc.description or exc.name)), exc.code


def _unexpected_error(exc):
    log.exception("unexpected error while serving a request")
    return jsonify(error_body("internal_error", "unexpected error; see the daemon log")), 500
