"""`?profile=NAME` over HTTP: the request relayed to that profile's daemon over its Unix socket.

Layer 6 (surface). A profile is a home of its own at $COMPOZY_HOME/profiles/NAME with its own
daemon (`compozy --profile NAME daemon start`). The main daemon checks the request as usual (Host,
Origin, its own secret or cookie, body size), then passes it on over the profile's owner-only socket,
which asks for no secret, without the `profile` parameter, the credentials or cookies, and streams the
answer back as is; when that daemon is not running the answer is `daemon_unavailable`.
"""

import re
from urllib.parse import parse_qsl, quote, urlencode

from flask import Response, request

from compozy.errors import CompozyError, invalid
from compozy.paths import Home, UnixConnection

PROFILE = "profile"
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
              "authorization", "proxy-authorization", "cookie", "content-length",
              "origin", "sec-fetch-site"}  # checked here already; the profile's daemon has its own port
CHUNK = 64 * 1024


def wanted():
    return PROFILE in request.args


def relay(home_root):
    name = request.args.get(PROFILE, "")
    if not PROFILE_NAME.fullmatch(name):
        raise invalid("a profile name is letters, digits, _ and - (at most 64)", field=PROFILE)
    connection = UnixConnection(str(Home(home_root / "profiles" / name).socket_file), None)
    try:
        connection.request(request.method, _forwarded_path(), body=request.get_data(), headers=_headers())
        answer = connection.getresponse()
    except OSError:
        connection.close()
        raise CompozyError("daemon_unavailable", f"profile {name!r} has no running daemon; start it with "
                           f"`compozy --profile {name} daemon start`", profile=name) from None
    return passthrough(connection, answer, HOP_BY_HOP)


def passthrough(connection, answer, dropped):
    """The relayed answer as it is: its status, its headers but those named in dropped (lower case), its body
    streamed as it arrives (never buffered); the connection closed when the body ends or the client goes. The
    profile relay's and the fleet's (compozy.fleet.relay)."""
    headers = [(k, v) for k, v in answer.getheaders() if k.lower() not in dropped]
    return Response(_body(connection, answer), status=answer.status, headers=headers, direct_passthrough=True)


def _forwarded_path():
    """The path as the client sent it, still percent-encoded (decoded, a space broke the request and a
    %2F became a slash), and the query without the profile."""
    raw = (request.environ.get("REQUEST_URI") or "").split("?", 1)[0]
    path = raw if raw.startswith("/") else quote(request.path)
    query = [(k, v) for k, v in parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True)
             if k != PROFILE]
    return path + ("?" + urlencode(query) if query else "")


def _headers():
    return {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}


def _body(connection, answer):
    """The body as it arrives; it ends (a relayed stream ends) when the other side stops answering within the
    connection's read timeout or drops the connection."""
    try:
        while True:
            try:
                data = answer.read1(CHUNK)
            except OSError:
                return
            if not data:
                return
            yield data
    finally:
        connection.close()
