"""Who may drive the daemon over TCP: its secret as a bearer token, the page's cookie, one-time logins.

Layer 6 (surface). Loopback is not a user boundary (any local user can connect), so every TCP request
carries the daemon's secret (`Authorization: Bearer`) or the cookie a page login set, except
`GET /api/health`, which tells only that a daemon runs, and the native tool server, whose callers
carry their binding's own secret. The Unix socket needs neither: it is owner-only, and the daemon
refuses a peer of another uid when it connects (daemon/listen.py).

A page is logged in by opening any page path with `?token=<secret>` or a one-time login token
(`compozy open`, `daemon start`): the answer is a redirect to the same path without the token and an
HttpOnly, SameSite=Strict cookie. The cookie holds an HMAC of the secret, not the secret: it only
opens the page and the API, and is named after the port, since browsers share cookies across ports.
"""

import hashlib
import hmac
import secrets
import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from flask import Response, redirect, request

from compozy import api
from compozy.errors import CompozyError
from compozy.http.guards import json_body, query_args

LOGIN_TTL = 600.0  # seconds a one-time login token stays valid
MAX_LOGINS = 64  # outstanding one-time tokens; minting one more forgets the oldest
TOKEN_PARAMETER = "token"
PAGE_PATHS = ("/", "/sessions/", "/settings")
OPEN_ROUTES = {("GET", "/api/health"), ("HEAD", "/api/health")}
LOGIN_HINT = ("<!doctype html><meta charset=utf-8><title>compozy: log in</title>"
              "<p>This compozy daemon answers only its owner. Run <code>compozy open</code> (or "
              "<code>compozy open SESSION</code>) to open this page logged in.</p>")


class Auth:
    """secret None: `daemon.auth = "none"`, nothing is asked (allowed on loopback only)."""

    def __init__(self, secret, port=None, page_url=None):
        self.secret, self.page_url = secret, page_url
        self.cookie_name = f"compozy-{port or 'socket'}"
        self.cookie_value = hmac.new((secret or "").encode(), b"compozy page cookie", hashlib.sha256).hexdigest()
        self.logins = {}  # one-time token -> monotonic deadline, oldest first
        self.lock = threading.Lock()

    def guard(self):
        """None when the request may go on; a response (the login redirect) to answer instead; or raises
        unauthorized. Called for TCP requests only."""
        if self.secret is None or (request.method, request.path) in OPEN_ROUTES and "profile" not in request.args:
            return None
        if request.path.startswith(api.TOOL_SERVER_PATH):
            return None  # the tool server checks the caller's binding secret itself
        if request.method in ("GET", "HEAD") and _page_path(request.path) and TOKEN_PARAMETER in request.args:
            return self._login(request.args[TOKEN_PARAMETER])
        if self._bearer_ok() or self._cookie_ok():
            return None
        raise self._refusal()

    def issue(self, path="/"):
        """A one-time login URL for path: {"url", "expires_at"}."""
        if self.page_url is None:
            raise CompozyError("page_unavailable", "this daemon serves no HTTP address (it runs with --no-http), "
                                                   "so there is no page to open")
        expires = datetime.now(timezone.utc) + timedelta(seconds=LOGIN_TTL)
        expires_at = expires.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if self.secret is None:  # daemon.auth = "none": nothing to log in with
            return {"url": f"{self.page_url}{path}", "expires_at": expires_at}
        token = secrets.token_urlsafe(24)
        with self.lock:
            self._forget_expired()
            while len(self.logins) >= MAX_LOGINS:
                self.logins.pop(next(iter(self.logins)))
            self.logins[token] = time.monotonic() + LOGIN_TTL
        return {"url": f"{self.page_url}{path}?{urlencode({TOKEN_PARAMETER: token})}", "expires_at": expires_at}

    def _login(self, given):
        if not (_equal(given, self.secret) or self._redeem(given)):
            raise self._refusal("the login token is wrong, used already or expired; run `compozy open` for a new one")
        query = [(k, v) for k, v in request.args.items(multi=True) if k != TOKEN_PARAMETER]
        response = redirect(request.path + ("?" + urlencode(query) if query else ""), code=303)
        response.set_cookie(self.cookie_name, self.cookie_value, httponly=True, samesite="Strict", path="/")
        response.headers.update({"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
        return response

    def _redeem(self, given):
        with self.lock:
            self._forget_expired()
            return self.logins.pop(given, None) is not None

    def _forget_expired(self):
        now = time.monotonic()
        for token in [t for t, deadline in self.logins.items() if deadline <= now]:
            del self.logins[token]

    def _bearer_ok(self):
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and _equal(given.strip(), self.secret)

    def _cookie_ok(self):
        return _equal(request.cookies.get(self.cookie_name, ""), self.cookie_value)

    def _refusal(self, why=None):
        message = why or ("this daemon answers only its owner: send Authorization: Bearer <secret> "
                          "(the CLI reads it from the home's auth_token, or $COMPOZY_TOKEN), or open the page "
                          "with `compozy open`")
        if _page_path(request.path) and request.method in ("GET", "HEAD"):
            return LoginRequired(message)
        return CompozyError("unauthorized", message)


class LoginRequired(CompozyError):
    """401 on a page path: a short page saying how to log in, rather than JSON a person cannot act on."""

    def __init__(self, message):
        super().__init__("unauthorized", message)

    def response(self):
        return Response(LOGIN_HINT, status=401, mimetype="text/html",
                        headers={"Content-Security-Policy": "default-src 'none'", "Cache-Control": "no-store"})


def _page_path(path):
    return path in (PAGE_PATHS[0], PAGE_PATHS[2]) or (path.startswith(PAGE_PATHS[1])
                                                      and "/" not in path[len(PAGE_PATHS[1]):])


def _equal(given, expected):
    return bool(given) and expected is not None and hmac.compare_digest(given.encode(), expected.encode())


def login_view(auth, manager):
    """The handler of `POST /api/login`: a one-time login URL for the list, or for one session's page."""
    def handler(_manager, operation, params):
        session_id = operation.parse(body=json_body(), query=query_args()).session_id
        if session_id is not None:
            session_id = manager.get_session(session_id)["session"]["id"]  # session_not_found, as anywhere
        return {"login": auth.issue(f"/sessions/{session_id}" if session_id else "/")}
    return handler
