"""API path parameters with an encoded slash (%2F) are routed as the one segment the client sent.

Layer 6 (surface). A WSGI server decodes the path before the router sees it, so the CLI's
`/api/sessions/..%2Fx` reached Flask as `/api/sessions/../x`, matched no route and answered
`endpoint_not_found`. Here such a segment keeps its slashes encoded for routing, and the view gets
the decoded value back, so a bad ID gets its operation's answer (`session_not_found`,
`workspace_not_found`, ...) however it is spelt.
"""

from urllib.parse import unquote_to_bytes

from flask import request

ENCODED_SLASH = "%2F"
SLASHED = "compozy.slashed_segments"  # environ: {routed segment: the decoded value it stands for}
API_PREFIX = "/api/"


def route_encoded_slashes(wsgi_app):
    """Wrap a WSGI app so that API path segments holding an encoded slash route as one segment."""
    def app(environ, start_response):
        _keep_encoded_slashes(environ)
        return wsgi_app(environ, start_response)
    return app


def _keep_encoded_slashes(environ):
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or ""
    path = raw.split("?", 1)[0]
    if not path.startswith(API_PREFIX) or "%2f" not in path.lower():
        return
    routed, slashed = [], {}
    for segment in path.split("/"):
        data = unquote_to_bytes(segment)
        wsgi = data.decode("latin-1")  # PEP 3333: PATH_INFO holds the bytes as latin-1
        if b"/" in data:
            slashed[data.decode("utf-8", "replace").replace("/", ENCODED_SLASH)] = data.decode("utf-8", "replace")
            wsgi = wsgi.replace("/", ENCODED_SLASH)
        routed.append(wsgi)
    if slashed:
        environ["PATH_INFO"] = "/".join(routed)
        environ[SLASHED] = slashed


def restore(params):
    """The view's path parameters with each routed segment replaced by the value the client sent."""
    slashed = request.environ.get(SLASHED)
    if not slashed:
        return params
    return {name: slashed.get(value, value) if isinstance(value, str) else value for name, value in params.items()}
